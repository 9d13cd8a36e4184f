package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
	"github.com/histrim/history/adapters/anthropic/internal/fakeprovider"
	"github.com/histrim/history/internal/adaptertest"
)

// loopLimit is the simulated model's window in TestAgentLoop, and the
// budget the loop trims to (what a runtime configures: the window).
const loopLimit = 10_000

// loopStats is what one run of the agent loop measured besides what the
// adaptertest.Loop counts.
type loopStats struct {
	retries int
	// nextErr[k] is the calibration's prediction error for the provider's
	// count of the request after k observations; budgetErr[k] how far the
	// provider's count of a request of cal.Budget(window) lands from
	// the window, relative to that count. -1 when not reached.
	nextErr, budgetErr map[int]float64
	scale, overhead    float64
	provider           fakeprovider.Stats
	// afterFirst counts the rejections after the first recovery.
	afterFirst int
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
			l := adaptertest.NewLoop("anthropic", adaptertest.Skew(f), loopLimit).RaceShort()
			l.MinWords, l.MaxWords = 250, 1150 // the agentloop example's results
			st := runLoop(t, l, "trim")
			ls := l.Stats()
			t.Logf("F=%.1f: %d requests, %d trimmed, %d overflows, mean provider prompt of trimmed requests %.1f%% of the limit",
				f, ls.Requests, ls.Trimmed, ls.Overflows, 100*ls.Fill())
			t.Logf("F=%.1f: estimate error after 1/3/10 observations: next request %.2f%% / %.2f%% / %.2f%%, Budget(limit) %.2f%% / %.2f%% / %.2f%%; model %.3fx + %.0f",
				f, 100*st.nextErr[1], 100*st.nextErr[3], 100*st.nextErr[10], 100*st.budgetErr[1], 100*st.budgetErr[3], 100*st.budgetErr[10], st.scale, st.overhead)
			l.Check(t) // at most 1 overflow, no error, no violation, fill >= 85%
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
// follows, and no error reaches the caller.
func TestAgentLoopRecovers(t *testing.T) {
	t.Parallel()
	l := adaptertest.NewLoop("anthropic", adaptertest.Mode{Name: "1.0-1.5", Text: 1, Tool: 1, Schema: 1, DriftTurn: 12, Drift: 1.5, MaxOverflows: 2}, loopLimit)
	l.Turns, l.MinWords, l.MaxWords = 24, 250, 1150
	st := runLoop(t, l, "trim")
	ls := l.Stats()
	t.Logf("F=1.0, then 1.5 from turn 12: %d requests, %d trimmed, %d overflows, %d retries, mean provider prompt of trimmed requests %.1f%% of the limit",
		ls.Requests, ls.Trimmed, ls.Overflows, st.retries, 100*ls.Fill())
	if ls.Overflows == 0 || ls.Overflows > 2 || st.retries != ls.Overflows || ls.Errors != 0 {
		t.Fatalf("%d overflows, %d retries, %d errors; want one or two overflows, each recovered by one retry\n%s",
			ls.Overflows, st.retries, ls.Errors, strings.Join(l.Notes(), "\n"))
	}
}

// runLoop runs the agent loop of l (l.Turns user turns against a provider
// that counts and checks every request through l, with l.Window as its
// window; l.Budget is the budget) and returns its numbers. Errors that would reach
// the caller are recorded in l, and the loop goes on with the next turn.
// kind "trim" trims with Trim and the Calibration; "trimmer" with one
// Trimmer (low-water mark 0.7, elision, step trimming, the tools as
// overhead) and no Calibration, "trimmer+cal" with one.
func runLoop(t *testing.T, l *adaptertest.Loop, kind string) loopStats {
	window := l.Window
	prov := fakeprovider.New(1, window)
	prov.Judge = l
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
	trim := func(transcript []anthropic.MessageParam) ([]anthropic.MessageParam, history.Result, error) {
		return hanthropic.Trim(params.System, transcript, l.Budget, opts...)
	}
	recover := func(_, sent []anthropic.MessageParam, err error, attempt int) ([]anthropic.MessageParam, history.Result, error) {
		return hanthropic.RecoverOverflow(params.System, sent, err, attempt, opts...)
	}
	if kind != "trim" {
		topts := []history.Option{history.WithOverhead(overhead), history.WithLowWater(0.7),
			history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
		if kind == "trimmer+cal" {
			topts = append(topts, history.WithCalibration(&cal))
		}
		tr := hanthropic.NewTrimmer(params.System, topts...)
		trim = func(transcript []anthropic.MessageParam) ([]anthropic.MessageParam, history.Result, error) {
			return tr.Trim(transcript, l.Budget)
		}
		recover = func(transcript, _ []anthropic.MessageParam, err error, attempt int) ([]anthropic.MessageParam, history.Result, error) {
			return tr.RecoverOverflow(transcript, err, attempt)
		}
	}
	st := loopStats{nextErr: map[int]float64{1: -1, 3: -1, 10: -1}, budgetErr: map[int]float64{1: -1, 3: -1, 10: -1}}
	observations := 0
	// measure records the calibration's errors once it has made k
	// observations, against the request about to be observed: sent
	// tokens by the library's count, reported by the provider's. The
	// provider's count of a request of Budget(window) is priced by the
	// mode's text factor (exact for a mode that counts all messages
	// alike, as TestAgentLoop's do).
	measure := func(sent, reported int) {
		if _, ok := st.nextErr[observations]; !ok || st.nextErr[observations] >= 0 {
			return
		}
		scale, ovh, _, _ := cal.Model()
		st.nextErr[observations] = math.Abs(scale*float64(sent)+ovh-float64(reported)) / float64(reported)
		b := cal.Budget(window)
		p := math.Ceil(l.Mode.Text*float64(b-overhead) + l.Mode.Schema*float64(prov.Stats().SchemaTokens))
		st.budgetErr[observations] = math.Abs(float64(window)-p) / p
	}

	var transcript []anthropic.MessageParam
	ctx := context.Background()
	for turn := 1; turn <= l.Turns; turn++ {
		text := fakeprovider.Task(turn)
		l.Turn(turn, text)
		transcript = append(transcript, anthropic.NewUserMessage(anthropic.NewTextBlock(text)))
	steps:
		for step := 0; ; step++ {
			if step > 6 {
				t.Fatalf("turn %d: more steps than the script has", turn)
			}
			msgs, res, err := trim(transcript)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			var reply *anthropic.Message
			for attempt := 1; ; attempt++ {
				p := params
				p.Messages = msgs
				reply, err = client.Messages.New(ctx, p)
				if err == nil {
					break
				}
				if attempt > 2 || !history.IsContextOverflow(err) {
					l.Error(err)
					break steps
				}
				l.Rejected(attempt-1, res, &cal)
				if ov, ok := history.ParseOverflow(err); ok && ov.Used > 0 {
					observations++ // RecoverOverflow observes it
				}
				if st.retries > 0 {
					st.afterFirst++
				}
				st.retries++
				msgs, res, err = recover(transcript, msgs, err, attempt)
				if err != nil {
					l.Error(fmt.Errorf("RecoverOverflow: %w", err))
					break steps
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
			l.Accepted(res.Trimmed, reported)

			transcript = append(transcript, reply.ToParam())
			if reply.StopReason != anthropic.StopReasonToolUse {
				break
			}
			var results []anthropic.ContentBlockParamUnion
			for _, b := range reply.Content {
				if b.Type == "tool_use" {
					results = append(results, anthropic.NewToolResultBlock(b.ID, fakeprovider.RunToolWords(b.ID, l.Words), false))
				}
			}
			transcript = append(transcript, anthropic.NewUserMessage(results...))
		}
	}
	ps := prov.Stats()
	ls := l.Stats()
	if ps.Malformed != 0 {
		t.Errorf("the provider rejected %d requests as malformed", ps.Malformed)
	}
	if ps.Overflows != ls.Overflows || ps.Requests != ls.Requests || ps.PairingViolations != ls.Violations || ps.Accepted != ls.Accepted {
		t.Errorf("provider %+v, loop %+v", ps, ls)
	}
	st.scale, st.overhead, _, _ = cal.Model()
	st.provider = ps
	return st
}

// TestStatefulLoop runs the loop with the Trimmer against a provider
// counting 1.3 times the library's estimate, with and without a
// Calibration, at a budget of the window and of 1.25 times it (issues 23
// and 33: at most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "anthropic", loopLimit, func(t *testing.T, l *adaptertest.Loop, calibrate bool) {
		runLoop(t, l, map[bool]string{false: "trimmer", true: "trimmer+cal"}[calibrate])
	})
}
