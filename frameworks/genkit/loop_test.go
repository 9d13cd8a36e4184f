package genkit_test

// Genkit's own tool loop (genkit.Generate with 20 tools and its
// googlegenai plugin) against a local Gemini endpoint
// (internal/loopserver) that counts the request its own way, checks the
// pairing of function calls and responses and the latest task, and
// answers an overflow with Gemini's 400. The genai client reads the
// endpoint from GOOGLE_GEMINI_BASE_URL, which the googlegenai plugin
// leaves it to (it has no option for it).

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/firebase/genkit/go/plugins/googlegenai"
	"github.com/histrim/history"
	hgenkit "github.com/histrim/history/frameworks/genkit"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
)

// loopWindow is Gemini's window in the loops: a 16k model.
const loopWindow = 16_000

const modelName = "googleai/gemini-2.5-flash"

// newGenkit returns a Genkit with the googlegenai plugin pointed at the
// endpoint at url, and the loop's 20 tools. A tool's result is a
// function of its arguments, which name the task and the step.
func newGenkit(t *testing.T, url string, words func(uint64) int) (*genkit.Genkit, []ai.ToolRef) {
	t.Helper()
	t.Setenv("GOOGLE_GEMINI_BASE_URL", url)
	g := genkit.Init(context.Background(), genkit.WithPlugins(&googlegenai.GoogleAI{APIKey: "local"}))
	var tools []ai.ToolRef
	for _, name := range loopserver.ToolNames {
		tools = append(tools, genkit.DefineTool(g, name, loopserver.ToolDescription(name),
			func(_ *ai.ToolContext, in loopserver.ToolArgs) (string, error) {
				return loopserver.ToolResult(name+in.Path+in.Reason, words), nil
			}))
	}
	return g, tools
}

// runLoop runs l.Turns user turns through genkit.Generate, keeping the
// conversation as Genkit returns it (ModelResponse.History), with the
// generate options more, against the local endpoint that counts and
// checks every request through l. Errors Generate returns are recorded in
// l as errors that reached the user.
func runLoop(t *testing.T, l *adaptertest.Loop, more ...ai.GenerateOption) loopserver.Stats {
	t.Helper()
	srv := &loopserver.Gemini{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	g, tools := newGenkit(t, ts.URL, l.Words)
	msgs := []*ai.Message{ai.NewSystemTextMessage(loopserver.SystemPrompt)}
	for turn := 1; turn <= l.Turns; turn++ {
		task := loopserver.Task(turn)
		l.Turn(turn, task)
		opts := append([]ai.GenerateOption{ai.WithModelName(modelName), ai.WithTools(tools...), ai.WithMaxTurns(10),
			ai.WithMessages(append(msgs, ai.NewUserTextMessage(task))...)}, more...)
		resp, err := genkit.Generate(context.Background(), g, opts...)
		if err != nil {
			l.Error(fmt.Errorf("turn %d: %w", turn, err))
			msgs = append(msgs, ai.NewUserTextMessage(task))
			continue
		}
		msgs = resp.History()
	}
	for _, p := range srv.Problems() {
		t.Error("server: " + p)
	}
	return srv.Stats()
}

// TestAgentLoop runs 50 user turns with tool results of 150-500 words
// against a 16k window, with Gemini counting 1.35x the library's
// estimate, and switching from 1.0x to 1.4x at turn 25, through the
// Middleware: no error reaches the user, no request breaks the pairing or
// lacks the task, at most one overflow (two with the switch), each
// recovered, every response observed by the calibration, trimmed requests
// filling at least 85% of the window. (Not parallel: the endpoint is set
// through the environment.)
func TestAgentLoop(t *testing.T) {
	modes := []adaptertest.Mode{adaptertest.Modes()[0], adaptertest.Modes()[2]}
	if raceEnabled {
		modes = modes[1:]
	}
	for _, mode := range modes {
		t.Run(mode.Name, func(t *testing.T) {
			if raceEnabled {
				// Genkit's loop (tracing included) is some ten times
				// slower under the race detector: 15 turns there, the
				// drift at turn 8; the 50-turn loops run in .ci/run's
				// loop step.
				mode.DriftTurn = 8
			}
			l := adaptertest.NewLoop("genkit", mode, loopWindow)
			if raceEnabled {
				l.Turns = 15
			}
			var cal history.Calibration
			var observed, trimmed atomic.Int64
			mw := hgenkit.Middleware(hgenkit.Config{Budget: loopWindow, Calibration: &cal,
				Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(),
					history.WithOnTrim(func(history.Event) { trimmed.Add(1) })},
				OnError: func(err error) { l.Note("OnError: %v", err) },
				OnObserve: func(_, reported int, _ history.Verdict) {
					observed.Add(1)
					l.Accepted(trimmed.Swap(0) > 0, reported)
				}})
			st := runLoop(t, l, ai.WithMiddleware(mw))
			ls := l.Stats()
			t.Logf("%s\n%s\nobserved %d of %d accepted responses", adaptertest.TableHeader, ls.Row(), observed.Load(), st.Accepted)
			l.Check(t)
			if int(observed.Load()) != st.Accepted || st.Overflows != ls.Overflows {
				t.Errorf("observed %d responses, the server accepted %d; overflows %d / %d", observed.Load(), st.Accepted, st.Overflows, ls.Overflows)
			}
		})
	}
}

// TestDefaultLoop is Genkit's tool loop as it comes (nothing trims the
// history), on the same loop with Gemini counting 1.35x: once the
// conversation outgrows the window every turn fails; recorded as the
// baseline the documentation quotes.
func TestDefaultLoop(t *testing.T) {
	l := adaptertest.NewLoop("genkit (default)", adaptertest.Modes()[0], loopWindow)
	if raceEnabled {
		l.Turns = 15
	}
	runLoop(t, l)
	s := l.Stats()
	t.Logf("%s\n%s", adaptertest.TableHeader, s.Row())
	if s.Errors == 0 {
		t.Errorf("Genkit's default failed no turn: %s\n%s", s.Row(), strings.Join(l.Notes(), "\n"))
	}
}
