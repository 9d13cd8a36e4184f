package adk_test

// ADK's own agent loop (llmagent, runner, its Gemini model, 20 function
// tools, an in-memory session) against a local Gemini endpoint
// (internal/loopserver) that counts the request its own way, checks the
// pairing of function calls and responses and the latest task, and
// answers an overflow with Gemini's 400. The callbacks run as a plugin.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	hadk "github.com/histrim/history/frameworks/adk"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/model/gemini"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"
)

// loopWindow is Gemini's window in the loops: a 16k model.
const loopWindow = 16_000

// output is what every tool returns: Gemini's documented shape of a
// function's result ({"output": ...}).
type output struct {
	Output string `json:"output"`
}

// tools returns the loop's 20 tools as ADK function tools.
func tools(t testing.TB, words func(uint64) int) []tool.Tool {
	t.Helper()
	out := make([]tool.Tool, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		tl, err := functiontool.New(functiontool.Config{Name: name, Description: loopserver.ToolDescription(name)},
			func(ctx agent.ToolContext, _ loopserver.ToolArgs) (output, error) {
				return output{loopserver.ToolResult(ctx.FunctionCallID(), words)}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = tl
	}
	return out
}

// geminiModel returns ADK's Gemini model for the endpoint at url.
func geminiModel(t testing.TB, url string) model.LLM {
	t.Helper()
	m, err := gemini.NewModel(context.Background(), "gemini-local", &genai.ClientConfig{
		APIKey: "local", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: url}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newRunner returns a runner of an llmagent with the loop's tools over m,
// set up by setup (callbacks, plugins), with an in-memory session service.
func newRunner(t testing.TB, m model.LLM, words func(uint64) int, setup func(*llmagent.Config, *runner.Config)) (*runner.Runner, session.Service) {
	t.Helper()
	acfg := llmagent.Config{Name: "coder", Model: m, Instruction: loopserver.SystemPrompt, Tools: tools(t, words)}
	sessions := session.InMemoryService()
	rcfg := runner.Config{AppName: "loop", SessionService: sessions, AutoCreateSession: true}
	setup(&acfg, &rcfg)
	ag, err := llmagent.New(acfg)
	if err != nil {
		t.Fatal(err)
	}
	rcfg.Agent = ag
	r, err := runner.New(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, sessions
}

// runTurns runs l.Turns user turns through r in one session, recording in
// l every error an event or the runner carries as one that reached the
// user.
func runTurns(t *testing.T, r *runner.Runner, l *adaptertest.Loop) {
	t.Helper()
	for turn := 1; turn <= l.Turns; turn++ {
		task := loopserver.Task(turn)
		l.Turn(turn, task)
		for ev, err := range r.Run(context.Background(), "user", "session", genai.NewContentFromText(task, genai.RoleUser), agent.RunConfig{}) {
			switch {
			case err != nil:
				l.Error(fmt.Errorf("turn %d: %w", turn, err))
			case ev != nil && ev.ErrorCode != "":
				l.Error(fmt.Errorf("turn %d: %s %s", turn, ev.ErrorCode, ev.ErrorMessage))
			}
		}
	}
}

// framework describes ADK's runner to the shared loop suites: the
// callbacks' plugin is the hook. (ADK's flow is some ten times slower
// under the race detector: 20 turns there, the drift at turn 10.)
var framework = adaptertest.Framework{Name: "adk", Window: loopWindow,
	RaceTurns: 20, RaceDrift: 10,
	Run: func(t *testing.T, l *adaptertest.Loop, hook *adaptertest.Hook) (int, int) {
		srv := &loopserver.Gemini{Judge: l, Window: loopWindow}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		m := geminiModel(t, ts.URL)
		setup := func(*llmagent.Config, *runner.Config) {}
		if hook != nil {
			cb, err := hadk.New(hadk.Config{Budget: loopWindow, Model: m, Calibration: hook.Calibration,
				Options: hook.Options, OnError: hook.OnError, OnObserve: hook.OnObserve})
			if err != nil {
				t.Fatal(err)
			}
			p, err := cb.Plugin()
			if err != nil {
				t.Fatal(err)
			}
			setup = func(_ *llmagent.Config, rc *runner.Config) { rc.PluginConfig.Plugins = []*plugin.Plugin{p} }
		}
		r, _ := newRunner(t, m, l.Words, setup)
		runTurns(t, r, l)
		for _, p := range srv.Problems() {
			t.Error("server: " + p)
		}
		st := srv.Stats()
		return st.Accepted, st.Overflows
	}}

// TestAgentLoop: ADK's runner with the callbacks' plugin, an overflow
// recovered in OnModelError (see adaptertest.Framework.AgentLoop).
func TestAgentLoop(t *testing.T) { framework.AgentLoop(t) }

// TestDefaultLoop is ADK's agent as it comes (no compaction: every event
// of the session is sent): once the session outgrows the window every
// turn fails.
func TestDefaultLoop(t *testing.T) { framework.DefaultLoop(t, "adk (default)") }
