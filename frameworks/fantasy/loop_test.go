package fantasy_test

// fantasy's own agent loop (fantasy.NewAgent with 20 tools, its
// OpenAI-compatible provider, the one crush uses for local models)
// against a local OpenAI chat-completions endpoint (internal/loopserver)
// that counts the request its own way, checks the tool pairing and the
// latest task, and answers an overflow with OpenAI's 400.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openaicompat"
	"github.com/histrim/history"
	hfantasy "github.com/histrim/history/frameworks/fantasy"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
)

// loopWindow is the provider's window and the budget: a 16k local model.
const loopWindow = 16_000

// tools returns the loop's 20 tools as fantasy agent tools.
func tools(words func(uint64) int) []fantasy.AgentTool {
	out := make([]fantasy.AgentTool, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		out[i] = fantasy.NewAgentTool(name, loopserver.ToolDescription(name),
			func(_ context.Context, _ loopserver.ToolArgs, call fantasy.ToolCall) (fantasy.ToolResponse, error) {
				return fantasy.NewTextResponse(loopserver.ToolResult(call.ID, words)), nil
			})
	}
	return out
}

// languageModel returns fantasy's OpenAI-compatible model for the
// endpoint at url.
func languageModel(t testing.TB, url string) fantasy.LanguageModel {
	t.Helper()
	p, err := openaicompat.New(openaicompat.WithBaseURL(url), openaicompat.WithAPIKey("sk-local"))
	if err != nil {
		t.Fatal(err)
	}
	lm, err := p.LanguageModel(context.Background(), "local-16k")
	if err != nil {
		t.Fatal(err)
	}
	return lm
}

// runLoop runs l.Turns user turns through a fantasy agent built by
// build, keeping the conversation as fantasy's examples do (the prompt,
// then every step's messages), against the local endpoint that counts and
// checks every request through l. Errors the agent returns are recorded in
// l as errors that reached the user.
func runLoop(t *testing.T, l *adaptertest.Loop, build func(lm fantasy.LanguageModel) fantasy.Agent) loopserver.Stats {
	t.Helper()
	srv := &loopserver.OpenAI{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	agent := build(languageModel(t, ts.URL+"/v1"))
	var msgs []fantasy.Message
	ctx := context.Background()
	for turn := 1; turn <= l.Turns; turn++ {
		task := loopserver.Task(turn)
		l.Turn(turn, task)
		res, err := agent.Generate(ctx, fantasy.AgentCall{Prompt: task, Messages: msgs})
		if err != nil {
			l.Error(fmt.Errorf("turn %d: %w", turn, err))
			continue
		}
		msgs = append(msgs, fantasy.NewUserMessage(task))
		for _, s := range res.Steps {
			msgs = append(msgs, s.Messages...)
		}
	}
	for _, p := range srv.Problems() {
		t.Error("server: " + p)
	}
	return srv.Stats()
}

// framework describes fantasy's Agent to the shared loop suites: the hook
// is a Model, and in the drift mode also PrepareStep (crush's hook), with
// the Model for the recovery.
var framework = adaptertest.Framework{Name: "fantasy", Window: loopWindow,
	Run: func(t *testing.T, l *adaptertest.Loop, hook *adaptertest.Hook) (int, int) {
		st := runLoop(t, l, func(lm fantasy.LanguageModel) fantasy.Agent {
			opts := []fantasy.AgentOption{fantasy.WithSystemPrompt(loopserver.SystemPrompt), fantasy.WithTools(tools(l.Words)...)}
			if hook == nil {
				return fantasy.NewAgent(lm, opts...)
			}
			cfg := hfantasy.Config{Budget: loopWindow, Calibration: hook.Calibration, Options: hook.Options, OnObserve: hook.OnObserve}
			if hook.Mode.DriftTurn > 0 {
				step := cfg
				step.Options = append(step.Options, history.WithOverhead(hfantasy.Overhead(toolDefs(l.Words), nil)))
				opts = append(opts, fantasy.WithPrepareStep(hfantasy.PrepareStep(step)))
			}
			return fantasy.NewAgent(hfantasy.NewModel(lm, cfg), opts...)
		})
		return st.Accepted, st.Overflows
	}}

// TestAgentLoop: fantasy's Agent over a Model, and with PrepareStep in the
// drift mode (see adaptertest.Framework.AgentLoop).
func TestAgentLoop(t *testing.T) { framework.AgentLoop(t) }

// toolDefs returns the tools as the model receives them, for Overhead.
func toolDefs(words func(uint64) int) []fantasy.Tool {
	var out []fantasy.Tool
	for _, at := range tools(words) {
		info := at.Info()
		out = append(out, fantasy.FunctionTool{Name: info.Name, Description: info.Description,
			InputSchema: map[string]any{"type": "object", "properties": info.Parameters, "required": info.Required}})
	}
	return out
}

// TestDefaultLoop is fantasy's agent with no trimming at all, what it
// does by default: once the conversation outgrows the window every turn
// fails.
func TestDefaultLoop(t *testing.T) { framework.DefaultLoop(t, "fantasy (default)") }
