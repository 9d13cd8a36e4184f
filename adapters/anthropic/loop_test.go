package anthropic_test

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
	"github.com/histrim/history/adapters/anthropic/internal/fakeprovider"
)

// loopLimit is the simulated model's window, and the budget the loop
// trims to (what a runtime configures: the window).
const loopLimit = 10_000

// loopStats is what one run of the agent loop measured.
type loopStats struct {
	requests, trimmed, overflows, retries int
	// promptSum sums the provider's count of the accepted requests that
	// were trimmed; promptN counts them.
	promptSum, promptN int
	// nextErr[k] is the calibration's prediction error for the provider's
	// count of the request after k observations; budgetErr[k] how far the
	// provider's count of a request of cal.Budget(loopLimit) lands from
	// loopLimit, relative to that count. -1 when not reached.
	nextErr, budgetErr map[int]float64
	scale, overhead    float64
}

// TestAgentLoop runs 50 user turns of 1 to 6 tool steps each through the
// real anthropic-sdk-go client against a provider that counts F times the
// library's estimate plus the tool schemas, trimming before every request
// with calibration, the tools' overhead, elision and step trimming, and
// recovering from "prompt is too long" with RecoverOverflow. No error
// reaches the caller, at most one request per run overflows, every request
// is well paired and carries the latest task, and trimmed requests use at
// least 85% of the window as the provider counts it.
func TestAgentLoop(t *testing.T) {
	for _, f := range []float64{1.3, 0.8} {
		t.Run("F="+strconv.FormatFloat(f, 'g', -1, 64), func(t *testing.T) {
			t.Parallel()
			st := runLoop(t, loopConfig{f: f, turns: 50})
			t.Logf("F=%.1f: %d requests, %d trimmed, %d overflows, mean provider prompt of trimmed requests %.1f%% of the limit",
				f, st.requests, st.trimmed, st.overflows, 100*st.meanPrompt()/loopLimit)
			t.Logf("F=%.1f: estimate error after 1/3/10 observations: next request %.2f%% / %.2f%% / %.2f%%, Budget(limit) %.2f%% / %.2f%% / %.2f%%; model %.3fx + %.0f",
				f, 100*st.nextErr[1], 100*st.nextErr[3], 100*st.nextErr[10], 100*st.budgetErr[1], 100*st.budgetErr[3], 100*st.budgetErr[10], st.scale, st.overhead)
			if st.overflows > 1 {
				t.Errorf("%d requests overflowed, want at most 1", st.overflows)
			}
			if st.promptN < 20 {
				t.Fatalf("only %d accepted requests were trimmed: the loop does not test trimming", st.promptN)
			}
			if mean := st.meanPrompt(); mean < 0.85*loopLimit {
				t.Errorf("trimmed requests carry %.0f tokens on average by the provider's count, want at least 85%% of %d", mean, loopLimit)
			}
			for _, k := range []int{1, 3, 10} {
				if st.nextErr[k] < 0 || st.budgetErr[k] < 0 {
					t.Errorf("the loop made fewer than %d observations", k)
				}
			}
		})
	}
}

// TestAgentLoopRecovers: when the provider starts counting 1.5 times more
// in mid-run (a model with another tokenizer behind the same name), the
// calibrated budget is too large for it: a request is rejected with the
// real client's error, and RecoverOverflow makes it fit on the first
// retry. The calibration learns from the errors and the usage that
// follows (today it takes two rejections: its window still holds the old
// observations), and no error reaches the caller.
func TestAgentLoopRecovers(t *testing.T) {
	t.Parallel()
	st := runLoop(t, loopConfig{f: 1.0, turns: 24, shift: 12, shiftTo: 1.5})
	t.Logf("F=1.0, then 1.5 from turn 12: %d requests, %d trimmed, %d overflows, %d retries, mean provider prompt of trimmed requests %.1f%% of the limit",
		st.requests, st.trimmed, st.overflows, st.retries, 100*st.meanPrompt()/loopLimit)
	if st.overflows == 0 || st.overflows > 2 || st.retries != st.overflows {
		t.Fatalf("%d overflows, %d retries; want one or two, each recovered by one retry", st.overflows, st.retries)
	}
}

// loopConfig is a run of the agent loop: a provider counting f times the
// library's estimate, turns user turns, and from turn shift on (if not 0)
// shiftTo times.
type loopConfig struct {
	f       float64
	turns   int
	shift   int
	shiftTo float64
}

func (st *loopStats) meanPrompt() float64 {
	return float64(st.promptSum) / float64(max(st.promptN, 1))
}

// runLoop runs the agent loop of cfg and returns its numbers; any failure
// fails t.
func runLoop(t *testing.T, cfg loopConfig) loopStats {
	prov := fakeprovider.New(cfg.f, loopLimit)
	srv := httptest.NewServer(prov)
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))

	params := anthropic.MessageNewParams{
		Model:     fakeprovider.Model,
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are a coding agent. Use the tools to inspect and change the repository."}},
		Tools:     fakeprovider.Tools(),
	}
	overhead := hanthropic.Overhead(params, nil)
	var cal history.Calibration
	opts := []history.Option{
		history.WithCalibration(&cal),
		history.WithOverhead(overhead),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	st := loopStats{nextErr: map[int]float64{1: -1, 3: -1, 10: -1}, budgetErr: map[int]float64{1: -1, 3: -1, 10: -1}}
	observations := 0
	// measure records the calibration's errors once it has made k
	// observations, against the request about to be observed: sent
	// tokens by the library's count, reported by the provider's.
	measure := func(sent, reported int) {
		if _, ok := st.nextErr[observations]; !ok || st.nextErr[observations] >= 0 {
			return
		}
		scale, ovh, _, _ := cal.Model()
		st.nextErr[observations] = math.Abs(scale*float64(sent)+ovh-float64(reported)) / float64(reported)
		b := cal.Budget(loopLimit)
		p := prov.Prompt(b-overhead, prov.Stats().SchemaTokens)
		st.budgetErr[observations] = math.Abs(float64(loopLimit-p)) / float64(p)
	}

	var transcript []anthropic.MessageParam
	ctx := context.Background()
	for turn := 1; turn <= cfg.turns; turn++ {
		if turn == cfg.shift {
			prov.SetFactor(cfg.shiftTo)
		}
		task := anthropic.NewUserMessage(anthropic.NewTextBlock(fakeprovider.Task(turn)))
		transcript = append(transcript, task)
		for step := 0; ; step++ {
			if step > 6 {
				t.Fatalf("turn %d: more steps than the script has", turn)
			}
			msgs, res, err := hanthropic.Trim(params.System, transcript, loopLimit, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("turn %d: Trim: %v", turn, err)
			}
			var reply *anthropic.Message
			for attempt := 1; ; attempt++ {
				st.requests++
				if err := hanthropic.Validate(msgs); err != nil {
					t.Fatalf("turn %d: the request breaks the pairing rule: %v", turn, err)
				}
				if !sends(msgs, task) {
					t.Fatalf("turn %d: the request does not carry the latest task", turn)
				}
				p := params
				p.Messages = msgs
				reply, err = client.Messages.New(ctx, p)
				if err == nil {
					break
				}
				if attempt > 2 {
					t.Fatalf("turn %d: still rejected after 2 retries: %v", turn, err)
				}
				if history.IsContextOverflow(err) {
					st.overflows++
					if ov, ok := history.ParseOverflow(err); ok && ov.Used > 0 {
						observations++ // RecoverOverflow observes it
					}
				}
				st.retries++
				msgs, res, err = hanthropic.RecoverOverflow(params.System, msgs, err, attempt, opts...)
				if err != nil {
					t.Fatalf("turn %d: RecoverOverflow: %v", turn, err)
				}
			}
			u := reply.Usage
			reported := int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
			if u.CacheReadInputTokens == 0 || u.CacheCreationInputTokens == 0 {
				t.Fatalf("usage %+v: the provider does not split its count", u)
			}
			measure(res.TokensAfter, reported)
			cal.Observe(res.TokensAfter, reported)
			observations++
			if res.Trimmed {
				st.trimmed++
				st.promptSum += reported
				st.promptN++
			}

			transcript = append(transcript, reply.ToParam())
			if reply.StopReason != anthropic.StopReasonToolUse {
				break
			}
			var results []anthropic.ContentBlockParamUnion
			for _, b := range reply.Content {
				if b.Type == "tool_use" {
					results = append(results, anthropic.NewToolResultBlock(b.ID, fakeprovider.RunTool(b.ID), false))
				}
			}
			transcript = append(transcript, anthropic.NewUserMessage(results...))
		}
	}
	ps := prov.Stats()
	if ps.PairingViolations != 0 || ps.Malformed != 0 {
		t.Fatalf("the provider rejected %d requests for their pairing and %d as malformed", ps.PairingViolations, ps.Malformed)
	}
	if ps.Overflows != st.overflows || ps.Requests != st.requests || ps.Accepted != st.requests-st.overflows {
		t.Fatalf("provider %+v, loop %d requests and %d overflows", ps, st.requests, st.overflows)
	}
	st.scale, st.overhead, _, _ = cal.Model()
	return st
}

// sends reports whether msgs carries task, the caller's message itself.
func sends(msgs []anthropic.MessageParam, task anthropic.MessageParam) bool {
	for _, m := range msgs {
		if len(m.Content) == 1 && len(task.Content) == 1 && m.Content[0].OfText == task.Content[0].OfText {
			return true
		}
	}
	return false
}
