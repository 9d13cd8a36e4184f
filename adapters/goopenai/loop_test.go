package goopenai_test

// The agent loop a go-openai runtime runs, with the real client against a
// local OpenAI chat-completions endpoint (internal/loopserver) that counts
// the request its own way, checks the tool pairing and the latest task,
// and answers an overflow with OpenAI's 400: Trim with a Calibration, the
// request's Overhead, elision and step trimming; RecoverOverflow up to
// twice; usage.prompt_tokens observed after every response.

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/goopenai"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	openai "github.com/sashabaranov/go-openai"
)

// loopWindow is the provider's window and the budget: a 16k local model.
const loopWindow = 16_000

// tools returns the loop's 20 tools as go-openai declares them.
func tools() []openai.Tool {
	out := make([]openai.Tool, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		out[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: loopserver.ToolDescription(name), Parameters: loopserver.ToolParameters()}}
	}
	return out
}

// loopResult is what a run measured besides its adaptertest.Loop.
type loopResult struct {
	observed int // responses whose usage the calibration observed
	server   loopserver.Stats
}

// trimFunc decides what a request sends: msgs trimmed for req.
type trimFunc func(msgs []openai.ChatCompletionMessage, req openai.ChatCompletionRequest) ([]openai.ChatCompletionMessage, history.Result, error)

// recoverFunc decides what the retry of a rejected request sends:
// transcript is what the runtime keeps, sent what was rejected.
type recoverFunc func(transcript, sent []openai.ChatCompletionMessage, err error, attempt int) ([]openai.ChatCompletionMessage, history.Result, error)

// runLoop runs l.Turns user turns of 1 to 6 tool steps against the local
// endpoint (l.Window its window), which counts and checks every request
// through l. trim decides what each request sends; recover, when set, is
// called after a rejection (attempt 1, then 2) and returns what the retry
// sends. Errors that would reach the user are recorded in l, and the loop
// goes on with the next turn. Every accepted response's usage goes to
// cal, when set. The runtime keeps what it sent and the reply, or with
// stateful its whole transcript.
func runLoop(t *testing.T, l *adaptertest.Loop, trim trimFunc, recover recoverFunc, cal *history.Calibration, stateful bool) loopResult {
	t.Helper()
	srv := &loopserver.OpenAI{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = ts.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	ctx := context.Background()

	req := openai.ChatCompletionRequest{Model: "local-16k", Tools: tools()}
	var r loopResult
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: loopserver.SystemPrompt}}
	for turn := 1; turn <= l.Turns; turn++ {
		task := loopserver.Task(turn)
		l.Turn(turn, task)
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: task})
	steps:
		for step := 0; ; step++ {
			if step > 8 {
				t.Fatalf("turn %d does not end", turn)
			}
			sent, res, err := trim(msgs, req)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			req.Messages = sent
			resp, err := client.CreateChatCompletion(ctx, req)
			for attempt := 1; err != nil && recover != nil && attempt <= 2 && history.IsContextOverflow(err); attempt++ {
				l.Rejected(attempt-1, res, cal)
				var rerr error
				if req.Messages, res, rerr = recover(msgs, req.Messages, err, attempt); rerr != nil {
					l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
					break steps
				}
				resp, err = client.CreateChatCompletion(ctx, req)
			}
			if err != nil {
				l.Error(err)
				break
			}
			if cal != nil {
				cal.Observe(res.TokensAfter, resp.Usage.PromptTokens)
				r.observed++
			}
			l.Accepted(res.Trimmed, resp.Usage.PromptTokens)
			reply := resp.Choices[0].Message
			if !stateful {
				msgs = req.Messages // what was sent, and the reply
			}
			msgs = append(msgs, reply)
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID,
					Content: loopserver.ToolResult(c.ID, l.Words)})
			}
		}
	}
	for _, p := range srv.Problems() {
		t.Error("server: " + p)
	}
	r.server = srv.Stats()
	return r
}

// histrim is the loop of the package documentation.
func histrim(cal *history.Calibration, window int) (trimFunc, recoverFunc) {
	opts := func(req openai.ChatCompletionRequest) []history.Option {
		return []history.Option{
			history.WithCalibration(cal),
			history.WithOverhead(goopenai.Overhead(req, nil)),
			history.WithElision(history.ElideOptions{}),
			history.WithStepTrim(),
		}
	}
	req := openai.ChatCompletionRequest{Tools: tools()}
	trim := func(msgs []openai.ChatCompletionMessage, req openai.ChatCompletionRequest) ([]openai.ChatCompletionMessage, history.Result, error) {
		return goopenai.Trim(msgs, window, opts(req)...)
	}
	recover := func(_, sent []openai.ChatCompletionMessage, err error, attempt int) ([]openai.ChatCompletionMessage, history.Result, error) {
		return goopenai.RecoverOverflow(sent, err, attempt, opts(req)...)
	}
	return trim, recover
}

// TestAgentLoop runs 50 user turns with tool results of 150-500 words
// against a 16k window, with a provider counting 1.35x the library's
// estimate, and one switching from 1.0x to 1.4x at turn 25: no error
// reaches the user, no request breaks the pairing or lacks the task, at
// most one overflow (two with the switch) and each recovered, every
// response observed by the calibration, trimmed requests filling at least
// 85% of the window.
func TestAgentLoop(t *testing.T) {
	for _, mode := range []adaptertest.Mode{adaptertest.Modes()[0], adaptertest.Modes()[2]} {
		t.Run(mode.Name, func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("goopenai", mode, loopWindow).RaceShort()
			var cal history.Calibration
			trim, recover := histrim(&cal, loopWindow)
			r := runLoop(t, l, trim, recover, &cal, false)
			s := l.Stats()
			t.Logf("%s\nobserved %d of %d accepted responses", adaptertest.TableHeader+"\n"+s.Row(), r.observed, s.Accepted)
			l.Check(t)
			if r.observed != s.Accepted || r.server.Accepted != s.Accepted || r.server.Overflows != s.Overflows {
				t.Errorf("observed %d, loop accepted %d, server %+v", r.observed, s.Accepted, r.server)
			}
		})
	}
}

// TestNaiveLoop is the hand-rolled trim a go-openai user writes first:
// drop the oldest non-system message until the estimate fits. It breaks
// the tool pairing, and the API rejects the request; recorded as the
// baseline the package documentation quotes.
func TestNaiveLoop(t *testing.T) {
	t.Parallel()
	l := adaptertest.NewLoop("goopenai (drop oldest)", adaptertest.Modes()[0], loopWindow)
	naive := func(msgs []openai.ChatCompletionMessage, req openai.ChatCompletionRequest) ([]openai.ChatCompletionMessage, history.Result, error) {
		out := append([]openai.ChatCompletionMessage(nil), msgs...)
		h, _ := goopenai.ToHistory(out)
		for len(out) > 2 && history.Estimate(h, nil)+goopenai.Overhead(req, nil) > loopWindow*3/4 {
			out, h = append(out[:1], out[2:]...), append(h[:1], h[2:]...)
		}
		return out, history.Result{Trimmed: len(out) < len(msgs)}, nil
	}
	runLoop(t, l, naive, nil, nil, false)
	s := l.Stats()
	t.Logf("%s\n%s", adaptertest.TableHeader, s.Row())
	if s.Violations == 0 || s.Errors == 0 {
		t.Errorf("the naive trim broke no pair: %s\n%s", s.Row(), strings.Join(l.Notes(), "\n"))
	}
}

// TestStatefulLoop runs the loop with the Trimmer (low-water mark 0.7,
// elision, step trimming, the tools as overhead), the runtime keeping its
// whole transcript, against a provider counting 1.3 times the library's
// estimate, with and without a Calibration, at a budget of the window and
// of 1.25 times it (issue 33: with the Calibration and the budget above
// the window, 45 of 187 requests were rejected; at most 1 after the first
// recovery).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "goopenai", loopWindow, func(t *testing.T, l *adaptertest.Loop, calibrate bool) {
		opts := []history.Option{history.WithOverhead(goopenai.Overhead(openai.ChatCompletionRequest{Tools: tools()}, nil)),
			history.WithLowWater(0.7), history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
		var cal *history.Calibration
		if calibrate {
			cal = &history.Calibration{}
			opts = append(opts, history.WithCalibration(cal))
		}
		tr := goopenai.NewTrimmer(opts...)
		trim := func(msgs []openai.ChatCompletionMessage, _ openai.ChatCompletionRequest) ([]openai.ChatCompletionMessage, history.Result, error) {
			return tr.Trim(msgs, l.Budget)
		}
		recover := func(transcript, _ []openai.ChatCompletionMessage, err error, attempt int) ([]openai.ChatCompletionMessage, history.Result, error) {
			return tr.RecoverOverflow(transcript, err, attempt)
		}
		runLoop(t, l, trim, recover, cal, true)
	})
}
