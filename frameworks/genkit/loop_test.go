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
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/firebase/genkit/go/plugins/googlegenai"
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

// framework describes Genkit's tool loop to the shared loop suites:
// the Middleware is the hook. (Serial: the endpoint is set through the
// environment. Genkit's loop, tracing included, is some ten times slower
// under the race detector: 15 turns there, the drift at turn 8; the
// 50-turn loops run in .ci/run's loop step.)
var framework = adaptertest.Framework{Name: "genkit", Window: loopWindow, Serial: true,
	RaceTurns: 15, RaceDrift: 8,
	Run: func(t *testing.T, l *adaptertest.Loop, hook *adaptertest.Hook) (int, int) {
		var more []ai.GenerateOption
		if hook != nil {
			more = append(more, ai.WithMiddleware(hgenkit.Middleware(hgenkit.Config{Budget: loopWindow,
				Calibration: hook.Calibration, Options: hook.Options, OnError: hook.OnError, OnObserve: hook.OnObserve})))
		}
		st := runLoop(t, l, more...)
		return st.Accepted, st.Overflows
	}}

// TestAgentLoop: Genkit's loop through the Middleware (see
// adaptertest.Framework.AgentLoop).
func TestAgentLoop(t *testing.T) { framework.AgentLoop(t) }

// TestDefaultLoop is Genkit's tool loop as it comes (nothing trims the
// history): once the conversation outgrows the window every turn fails.
func TestDefaultLoop(t *testing.T) { framework.DefaultLoop(t, "genkit (default)") }
