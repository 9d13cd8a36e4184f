package adaptertest

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
)

// Framework describes a framework module's own agent loop (ADK's runner,
// Genkit's Generate, fantasy's Agent, trpc-agent-go's runner) to the loop
// suites, AgentLoop and DefaultLoop.
type Framework struct {
	// Name names the framework in test names and tables ("genkit").
	Name string
	// Window is the provider's window in the loops.
	Window int
	// Under the race detector the loops run RaceTurns turns (when
	// positive) and the drift mode switches at RaceDrift (when positive),
	// and AgentLoop runs the drift mode only.
	RaceTurns, RaceDrift int
	// Serial keeps the loops from running in parallel (a framework whose
	// endpoint is set through the environment).
	Serial bool
	// Run runs l's turns through the framework's loop against a local
	// server that judges every request with l, its hook configured with
	// hook (nil: the framework as it comes, nothing trimmed), and returns
	// how many requests the server accepted and how many it refused for
	// their length.
	Run func(t *testing.T, l *Loop, hook *Hook) (accepted, overflows int)
}

// Hook is what a framework's trim hook is configured with in AgentLoop.
type Hook struct {
	// Mode is the loop's mode.
	Mode Mode
	// Options are the trim options: elision, step trimming, and an OnTrim
	// that counts the trims.
	Options []history.Option
	// Calibration is the loop's own.
	Calibration *history.Calibration
	// OnObserve is the hook's OnObserve: it records each observed
	// response in the loop.
	OnObserve func(sent, reported int, v history.Verdict)
	// OnError notes what a trim could not do.
	OnError func(error)
}

// loop returns the loop of f in mode, shortened under the race detector.
func (f *Framework) loop(name string, mode Mode) *Loop {
	if race.Enabled && f.RaceDrift > 0 && mode.DriftTurn > 0 {
		mode.DriftTurn = f.RaceDrift
	}
	l := NewLoop(name, mode, f.Window)
	if race.Enabled && f.RaceTurns > 0 {
		l.Turns = f.RaceTurns
	}
	return l
}

// AgentLoop runs the framework's loop with its trim hook on 50 user turns
// of tool results of 150-500 words, with a provider counting 1.35x the
// library's estimate and one switching from 1.0x to 1.4x at turn 25: no
// error reaches the user, no request breaks the pairing or lacks the
// task, at most one overflow (two with the switch), each recovered, every
// response observed by the calibration, trimmed requests filling at least
// 85% of the window (Loop.Check).
func (f *Framework) AgentLoop(t *testing.T) {
	modes := []Mode{Modes()[0], Modes()[2]}
	if race.Enabled {
		modes = modes[1:]
	}
	for _, mode := range modes {
		t.Run(mode.Name, func(t *testing.T) {
			if !f.Serial {
				t.Parallel()
			}
			l := f.loop(f.Name, mode)
			var observed, trimmed atomic.Int64
			hook := &Hook{Mode: mode, Calibration: &history.Calibration{},
				Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(),
					history.WithOnTrim(func(history.Event) { trimmed.Add(1) })},
				OnObserve: func(sent, reported int, _ history.Verdict) {
					observed.Add(1)
					l.Accepted(sent > 0 && trimmed.Swap(0) > 0, reported)
				},
				OnError: func(err error) { l.Note("OnError: %v", err) }}
			accepted, overflows := f.Run(t, l, hook)
			ls := l.Stats()
			t.Logf("%s\n%s\nobserved %d of %d accepted responses", TableHeader, ls.Row(), observed.Load(), accepted)
			l.Check(t)
			if int(observed.Load()) != accepted || overflows != ls.Overflows {
				t.Errorf("observed %d responses, the server accepted %d; overflows %d / %d", observed.Load(), accepted, overflows, ls.Overflows)
			}
		})
	}
}

// DefaultLoop runs the framework's loop as it comes (named name in the
// table), with a provider counting 1.35x: once the conversation outgrows
// the window turns fail; recorded as the baseline the documentation
// quotes.
func (f *Framework) DefaultLoop(t *testing.T, name string) {
	if !f.Serial {
		t.Parallel()
	}
	l := f.loop(name, Modes()[0])
	f.Run(t, l, nil)
	s := l.Stats()
	t.Logf("%s\n%s", TableHeader, s.Row())
	if s.Errors == 0 {
		t.Errorf("%s failed no turn: %s\n%s", name, s.Row(), strings.Join(l.Notes(), "\n"))
	}
}
