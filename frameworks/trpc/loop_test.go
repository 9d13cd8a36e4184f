package trpc_test

// trpc-agent-go's own agent loop (llmagent and runner, its OpenAI model,
// 20 function tools) against a local OpenAI chat-completions endpoint
// (internal/loopserver) that counts the request its own way, checks the
// tool pairing and the latest task, and answers an overflow with OpenAI's
// 400. The model tailors with the Strategy and is wrapped with Wrap.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/histrim/history"
	htrpc "github.com/histrim/history/frameworks/trpc"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/race"
	"trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/model/openai"
	"trpc.group/trpc-go/trpc-agent-go/runner"
	"trpc.group/trpc-go/trpc-agent-go/tool"
	"trpc.group/trpc-go/trpc-agent-go/tool/function"
)

// loopWindow is the provider's window: a 16k local model.
const loopWindow = 16_000

// tools returns the loop's 20 tools. A result is a function of the call's
// arguments, which name the task and the step.
func tools(words func(uint64) int) []tool.Tool {
	out := make([]tool.Tool, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		out[i] = function.NewFunctionTool(func(_ context.Context, in loopserver.ToolArgs) (string, error) {
			return loopserver.ToolResult(name+in.Path+in.Reason, words), nil
		}, function.WithName(name), function.WithDescription(loopserver.ToolDescription(name)))
	}
	return out
}

// newModel returns trpc-agent-go's OpenAI model for the endpoint at url
// with a window of window tokens, tailoring with s; reserves and margins
// are set to their minimum, since the calibration learns the provider's
// count (its defaults would take 2,048 + 512 tokens and 10% of the
// window).
func newModel(url string, window int, s *htrpc.Strategy) model.Model {
	m := openai.New("local-16k",
		openai.WithBaseURL(url), openai.WithAPIKey("sk-local"),
		openai.WithEnableTokenTailoring(true),
		openai.WithContextWindow(window),
		openai.WithTailoringStrategy(s),
		openai.WithTokenCounter(s.Counter()),
		openai.WithTokenTailoringConfig(&model.TokenTailoringConfig{ProtocolOverheadTokens: 1, ReserveOutputTokens: 1, SafetyMarginRatio: 1e-4}),
	)
	return htrpc.Wrap(m, s)
}

// runLoop runs l.Turns user turns through a runner of an llmagent whose
// model is built by build, against the local endpoint that counts and
// checks every request through l. Events carrying an error are recorded in
// l as errors that reached the user.
func runLoop(t *testing.T, l *adaptertest.Loop, build func(url string) model.Model) loopserver.Stats {
	t.Helper()
	srv := &loopserver.OpenAI{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ag := llmagent.New("coder",
		llmagent.WithModel(build(ts.URL+"/v1")),
		llmagent.WithInstruction(loopserver.SystemPrompt),
		llmagent.WithTools(tools(l.Words)),
		llmagent.WithGenerationConfig(model.GenerationConfig{Stream: false}),
	)
	r := runner.NewRunner("loop", ag)
	defer r.Close()
	ctx := context.Background()
	for turn := 1; turn <= l.Turns; turn++ {
		task := loopserver.Task(turn)
		l.Turn(turn, task)
		events, err := r.Run(ctx, "user", "session", model.NewUserMessage(task))
		if err != nil {
			t.Fatal(err)
		}
		for ev := range events {
			if ev.Response != nil && ev.Response.Error != nil {
				l.Error(fmt.Errorf("event: %s", ev.Response.Error.Message))
			}
		}
	}
	for _, p := range srv.Problems() {
		t.Error("server: " + p)
	}
	return srv.Stats()
}

// framework describes trpc-agent-go's runner to the shared loop suites:
// the hook is the Strategy and Wrap; without it, trpc-agent-go's own
// tailoring with its defaults (HeadOut over runes/4, the default
// reserves). trpc-agent-go copies and compares the whole request on every
// call, some ten times slower under the race detector: there 20 turns,
// the drift at turn 10; the 50-turn loops run in .ci/run's loop step.
var framework = adaptertest.Framework{Name: "trpc", Window: loopWindow,
	RaceTurns: 20, RaceDrift: 10,
	Run: func(t *testing.T, l *adaptertest.Loop, hook *adaptertest.Hook) (int, int) {
		st := runLoop(t, l, func(url string) model.Model {
			if hook == nil {
				return openai.New("local-16k", openai.WithBaseURL(url), openai.WithAPIKey("sk-local"),
					openai.WithEnableTokenTailoring(true), openai.WithContextWindow(loopWindow),
					openai.WithTailoringStrategy(model.NewHeadOutStrategy(model.NewSimpleTokenCounter())))
			}
			s := htrpc.NewStrategy(htrpc.Config{Calibration: hook.Calibration, Options: hook.Options, OnObserve: hook.OnObserve})
			return newModel(url, loopWindow, s)
		})
		return st.Accepted, st.Overflows
	}}

// TestAgentLoop: trpc-agent-go's runner with the Strategy, an overflow
// recovered by Wrap (see adaptertest.Framework.AgentLoop).
func TestAgentLoop(t *testing.T) { framework.AgentLoop(t) }

// TestHeadOutLoop is trpc-agent-go's own tailoring with its defaults:
// requests are rejected for their length and the failure reaches the
// user.
func TestHeadOutLoop(t *testing.T) { framework.DefaultLoop(t, "trpc (HeadOut)") }

// TestOverWindow tells trpc-agent-go a window 1.25 times the provider's
// (a deployment's smaller window, a local server's context size): the
// first request over the real window is refused and recovered by Wrap,
// and what the provider said must bound every later tailoring of the
// Strategy (issues 33 and 34), so at most one more is refused.
func TestOverWindow(t *testing.T) {
	for _, calibrate := range []bool{false, true} {
		t.Run(map[bool]string{false: "strategy", true: "strategy+cal"}[calibrate], func(t *testing.T) {
			l := adaptertest.NewLoop("trpc", adaptertest.Skew(1.3), loopWindow)
			l.Turns = adaptertest.DoorWindowTurns
			if race.Enabled {
				l.Turns = adaptertest.DoorWindowRaceTurns
			}
			var cal *history.Calibration
			if calibrate {
				cal = new(history.Calibration)
			}
			s := htrpc.NewStrategy(htrpc.Config{Calibration: cal, OnObserve: func(_, reported int, _ history.Verdict) { l.Accepted(true, reported) }})
			runLoop(t, l, func(url string) model.Model { return newModel(url, int(adaptertest.OverBudget*loopWindow), s) })
			adaptertest.CheckStateful(t, l, "trpc, a window of "+strconv.Itoa(int(adaptertest.OverBudget*loopWindow))+" told over the provider's "+strconv.Itoa(loopWindow), max(l.Stats().Overflows-1, 0))
		})
	}
}
