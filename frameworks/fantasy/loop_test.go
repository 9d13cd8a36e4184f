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
	"strings"
	"sync/atomic"
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
func languageModel(t *testing.T, url string) fantasy.LanguageModel {
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

// TestAgentLoop runs 50 user turns with tool results of 150-500 words
// against a 16k window: through a Model, with a provider counting 1.35x
// the library's estimate; and through PrepareStep (crush's hook) with a
// Model for the recovery, with a provider switching from 1.0x to 1.4x at
// turn 25. No error reaches the user, no request breaks the pairing or
// lacks the task, at most one overflow (two with the switch), each
// recovered, every response observed by the calibration, trimmed requests
// filling at least 85% of the window.
func TestAgentLoop(t *testing.T) {
	for _, tc := range []struct {
		mode        adaptertest.Mode
		prepareStep bool
	}{
		{adaptertest.Modes()[0], false},
		{adaptertest.Modes()[2], true},
	} {
		t.Run(tc.mode.Name, func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("fantasy", tc.mode, loopWindow)
			var cal history.Calibration
			var observed, trimmed atomic.Int64
			cfg := hfantasy.Config{
				Budget:      loopWindow,
				Calibration: &cal,
				Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(),
					history.WithOnTrim(func(history.Event) { trimmed.Add(1) })},
				OnObserve: func(_, reported int, _ history.Verdict) {
					observed.Add(1)
					l.Accepted(trimmed.Swap(0) > 0, reported)
				},
			}
			st := runLoop(t, l, func(lm fantasy.LanguageModel) fantasy.Agent {
				opts := []fantasy.AgentOption{fantasy.WithSystemPrompt(loopserver.SystemPrompt), fantasy.WithTools(tools(l.Words)...)}
				if tc.prepareStep {
					step := cfg
					step.Options = append(step.Options, history.WithOverhead(hfantasy.Overhead(toolDefs(l.Words), nil)))
					opts = append(opts, fantasy.WithPrepareStep(hfantasy.PrepareStep(step)))
				}
				return fantasy.NewAgent(hfantasy.NewModel(lm, cfg), opts...)
			})
			ls := l.Stats()
			t.Logf("%s\n%s\nobserved %d of %d accepted responses", adaptertest.TableHeader, ls.Row(), observed.Load(), st.Accepted)
			l.Check(t)
			if int(observed.Load()) != st.Accepted || st.Overflows != ls.Overflows {
				t.Errorf("observed %d responses, the server accepted %d; overflows %d / %d", observed.Load(), st.Accepted, st.Overflows, ls.Overflows)
			}
		})
	}
}

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
// does by default, on the same loop with a provider counting 1.35x: once
// the conversation outgrows the window every turn fails; recorded as the
// baseline the documentation quotes.
func TestDefaultLoop(t *testing.T) {
	t.Parallel()
	l := adaptertest.NewLoop("fantasy (default)", adaptertest.Modes()[0], loopWindow)
	runLoop(t, l, func(lm fantasy.LanguageModel) fantasy.Agent {
		return fantasy.NewAgent(lm, fantasy.WithSystemPrompt(loopserver.SystemPrompt), fantasy.WithTools(tools(l.Words)...))
	})
	s := l.Stats()
	t.Logf("%s\n%s", adaptertest.TableHeader, s.Row())
	if s.Errors == 0 {
		t.Errorf("fantasy's default failed no turn: %s\n%s", s.Row(), strings.Join(l.Notes(), "\n"))
	}
}
