package adaptertest

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/models"
)

// DoorTurns is how many user turns a door loop runs: its tool results are
// scaled to the model's window so that the window fills in about eight.
const DoorTurns = 12

// FrameworkDoorTurns is how many user turns the framework modules' door
// loops over Gemini's window of a million tokens run (DoorLoopTurns).
// Every request near that window is megabytes that the framework, the
// library and the stand-in each read (ADK's and Genkit's door loops took
// a minute of CI); their doors elide from about the third turn and trim
// to the window from about the fourth, and the turns after it hold the
// trims, the refusal at most and the elisions the loop checks (ADK's
// door: 5 turns give 8 trims, filling 93.1% of the window, Genkit's 10,
// 93.2%, in 2 and 8 s; 7 turns gave 22 trims, 93.1%, in 4 and 16 s; 12
// gave 49, 93.1%).
const FrameworkDoorTurns = 5

// DoorLoop runs an adapter's loop through its door (Fit, RecoverOverflow
// with the same transcript, Observe of each response's usage) with the
// SDK's real client against its stand-in server, whose window is the
// model's as the table gives it and which counts 1.3 times the library's
// estimate; run names model in every request and nothing else about the
// budget. The tool results are scaled to the window (ResultWords at 12k
// tokens), so that a few turns fill it. It checks that the door learnt
// the window from the name: requests were trimmed, no error reached the
// caller, at most one request was rejected for its length (the first,
// before the Calibration is warm, if any), no tool pairing broke and no
// request lost its task. It returns the loop, for the caller's own
// checks.
func DoorLoop(t *testing.T, adapter, model string, run func(t *testing.T, l *Loop, model string)) *Loop {
	t.Helper()
	return DoorLoopTurns(t, adapter, model, DoorTurns, run)
}

// DoorLoopTurns is DoorLoop over turns user turns (DoorTurns for
// DoorLoop; FrameworkDoorTurns for a framework's door over a window of a
// million tokens).
func DoorLoopTurns(t *testing.T, adapter, model string, turns int, run func(t *testing.T, l *Loop, model string)) *Loop {
	t.Helper()
	m, err := models.Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLoop(adapter, Skew(1.3), m.Window)
	scale := max(m.Window/12_000, 1)
	l.Turns = turns
	if race.Enabled && m.Window > 100_000 {
		// The race detector checks the calls; the plain run checks the
		// bounds. Results scaled to a window of a million tokens made
		// each request megabytes that every layer copies and counts ten
		// times slower under the detector (83 s for Genkit's loop alone).
		l.Turns, scale = 4, 1
	}
	l.MinWords, l.MaxWords = ResultWords[0]*scale, ResultWords[1]*scale
	run(t, l, model)
	s := l.Stats()
	t.Logf("%s door, %s (window %d from the name): %d requests, %d trimmed, %d rejected, %d errors; trimmed requests fill %.1f%%",
		adapter, model, m.Window, s.Requests, s.Trimmed, s.Overflows, s.Errors, 100*s.Fill())
	if (s.Trimmed == 0 && !race.Enabled) || s.Overflows > 1 || s.Errors > 0 || s.Violations > 0 || s.Missing > 0 {
		t.Errorf("%s door: %d trimmed (want some), %d rejected (want at most 1), %d errors, %d violations, %d requests without the task", adapter, s.Trimmed, s.Overflows, s.Errors, s.Violations, s.Missing)
		for _, n := range l.Notes() {
			t.Log(n)
		}
	}
	return l
}

// DoorWindowTurns is how many user turns DoorWindow runs
// (DoorWindowRaceTurns under the race detector, which checks the calls,
// not the bounds).
const DoorWindowTurns, DoorWindowRaceTurns = 20, 6

// DoorWindow runs a framework module's loop through its door (the model
// named, no budget) against its stand-in server whose window (l.Window)
// is smaller than the table's window for the model (a deployment's
// smaller window, a local server's context size), counting 1.3 times the
// library's estimate: the first request over the window is refused, and
// what the provider said must bound every later plan for the model, as
// an adapter's Trimmer keeps it (issue 34). It checks that a request was
// refused (else the bound was not tried) and the loop with
// CheckStateful: at most one refusal after the first recovery, no error,
// no pairing violation, no request without its task. run runs l naming
// model, recording in l what reached the caller.
func DoorWindow(t *testing.T, adapter, model string, window int, run func(t *testing.T, l *Loop, model string)) *Loop {
	t.Helper()
	m, err := models.Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	if m.Window <= window {
		t.Fatalf("%s's window %d is not above the stand-in's %d", model, m.Window, window)
	}
	l := NewLoop(adapter, Skew(1.3), window)
	l.Turns = DoorWindowTurns
	if race.Enabled {
		l.Turns = DoorWindowRaceTurns
	}
	run(t, l, model)
	if l.Stats().Overflows == 0 {
		t.Errorf("no request was refused: the loop never exceeded the stand-in's window of %d, so the door's bound from a refusal was not tried", window)
	}
	CheckStateful(t, l, "door, "+model+" (window "+strconv.Itoa(m.Window)+") over a window of "+strconv.Itoa(window), max(l.Stats().Overflows-1, 0))
	return l
}

// DoorTrims counts the trims of a door loop and those that elided tool
// results, through the option Option returns. The zero value is ready to
// use and safe for concurrent use.
type DoorTrims struct{ all, elided, low atomic.Int64 }

// Option returns the history.WithOnTrim option that counts the trims,
// calling also (when not nil) with every event.
func (c *DoorTrims) Option(also func(history.Event)) history.Option {
	return history.WithOnTrim(func(e history.Event) {
		c.all.Add(1)
		if e.ElidedResults > 0 {
			c.elided.Add(1)
		}
		if e.Attempt == 0 && e.Budget > 0 && float64(e.TokensAfter) <= lowWater*float64(e.Budget) {
			c.low.Add(1)
		}
		if also != nil {
			also(e)
		}
	})
}

// lowWater is the share of the budget the default policy's cache policy
// trims down to at a maintenance point, with room for a notice.
const lowWater = fit.DefaultLowWater + 0.02

// CheckLowWater fails t unless some trims to the budget (recoveries
// aside, which aim below what the provider said) went down to the
// default policy's low-water mark: a stateful door's cache policy. (A
// stateless door leaves the mark out, but a trim of large turns can land
// that low without it: that is not checked.)
func (c *DoorTrims) CheckLowWater(t testing.TB, adapter string) {
	t.Helper()
	low, all := c.low.Load(), c.all.Load()
	t.Logf("%s door: %d of %d trims went down to the low-water mark", adapter, low, all)
	if all > 0 && low == 0 {
		t.Errorf("%s door: none of %d trims went down to the low-water mark: the door's cache policy is missing", adapter, all)
	}
}

// Check logs the counts and fails t unless the door's trims carried the
// default policy's task preset (issue 34: a wrapper's door gives it, as
// the adapters' does): in a loop whose tool results fill the window, old
// results are elided before whole turns go, so some trim elided one.
func (c *DoorTrims) Check(t testing.TB, adapter string) {
	t.Helper()
	all, elided := c.all.Load(), c.elided.Load()
	t.Logf("%s door: %d trims, %d of them elided tool results", adapter, all, elided)
	if all > 0 && elided == 0 {
		t.Errorf("%s door: none of %d trims elided a tool result: the door's task preset is missing", adapter, all)
	}
}
