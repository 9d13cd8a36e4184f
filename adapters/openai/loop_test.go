package openai_test

// The whole loop a runtime runs, with the real openai-go client against a
// local endpoint that counts differently from the library: trim with a
// Calibration, the request's Overhead, elision and step trimming; observe
// usage.prompt_tokens; recover from context_length_exceeded.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// loopLimit is the provider's window in TestAgentLoop, and the budget the
// runtime configures: a runtime states the window, the calibration finds
// what fits.
const loopLimit = 12_000

// loopStats is what one run of the loop measured besides what the
// adaptertest.Loop counts.
type loopStats struct {
	turns, maxAttempt int
	// estErr and fitErr hold, after 1, 3 and 10 observations, the error of
	// the calibration's estimate of the next request's provider count:
	// from cal.Budget (sent × window / Budget(window)), and from the fitted
	// model (scale × sent + overhead).
	estErr, fitErr map[int]float64
	provider       fakeprovider.Stats
	// afterFirst counts the rejections after the first recovery.
	afterFirst int
}

// runLoop runs l.Turns (50) user turns of 1 to 6 tool steps against the local
// provider, which counts and checks every request through l (l.Mode, with
// l.Window as its window and the budget). It records every error that
// would reach the caller in l and goes on with the next turn.
//
// With a trimmer kind ("trimmer", or "trimmer+cal" with the Calibration)
// it runs as a runtime that keeps its whole transcript and trims it before
// every request with one Trimmer (low-water mark 0.7, elision, step
// trimming, the tools as overhead), recovering with the Trimmer's
// RecoverOverflow; kind "trim" is Trim with the Calibration.
func runLoop(t *testing.T, l *adaptertest.Loop, kind string) loopStats {
	stateful := kind != "trim"
	t.Helper()
	p := &fakeprovider.Provider{Limit: l.Window, Judge: l}
	srv := httptest.NewServer(p)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	window := l.Window

	params := openai.ChatCompletionNewParams{Model: "gpt-test", Tools: fakeprovider.Tools()}
	var cal history.Calibration
	opts := []history.Option{
		history.WithCalibration(&cal),
		history.WithOverhead(hopenai.Overhead(params, nil)),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	trim := func(msgs []openai.ChatCompletionMessageParamUnion) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
		return hopenai.Trim(msgs, window, opts...)
	}
	recover := func(msgs, sent []openai.ChatCompletionMessageParamUnion, err error, attempt int) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
		return hopenai.RecoverOverflow(sent, err, attempt, opts...)
	}
	if stateful {
		topts := []history.Option{history.WithOverhead(hopenai.Overhead(params, nil)), history.WithLowWater(0.7),
			history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
		if kind == "trimmer+cal" {
			topts = append(topts, history.WithCalibration(&cal))
		}
		tr := hopenai.NewTrimmer(topts...)
		trim = func(msgs []openai.ChatCompletionMessageParamUnion) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
			return tr.Trim(msgs, window)
		}
		recover = func(msgs, _ []openai.ChatCompletionMessageParamUnion, err error, attempt int) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
			return tr.RecoverOverflow(msgs, err, attempt)
		}
	}
	st := loopStats{estErr: map[int]float64{}, fitErr: map[int]float64{}}
	recovered := false
	observed := 0
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools to inspect the repository before you answer.")}

	for turn := 1; turn <= l.Turns; turn++ {
		st.turns++
		task := fakeprovider.Task(turn)
		l.Turn(turn, task)
		msgs = append(msgs, openai.UserMessage(task))
	steps:
		for step := 0; ; step++ {
			if step > 8 {
				t.Fatalf("turn %d does not end", turn)
			}
			sent, res, err := trim(msgs)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			params.Messages = sent
			completion, err := client.Chat.Completions.New(ctx, params)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				if !history.IsContextOverflow(err) {
					break
				}
				l.Rejected(attempt-1, res, &cal)
				st.maxAttempt = max(st.maxAttempt, attempt)
				if recovered {
					st.afterFirst++
				}
				recovered = true
				var rerr error
				if params.Messages, res, rerr = recover(msgs, params.Messages, err, attempt); rerr != nil {
					l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
					break steps
				}
				completion, err = client.Chat.Completions.New(ctx, params)
			}
			if err != nil {
				l.Error(err)
				break
			}
			prompt := int(completion.Usage.PromptTokens)
			if observed == 1 || observed == 3 || observed == 10 {
				est := float64(res.TokensAfter) * float64(window) / float64(cal.Budget(window))
				st.estErr[observed] = math.Abs(est-float64(prompt)) / float64(prompt)
				scale, overhead, _, _ := cal.Model()
				st.fitErr[observed] = math.Abs(scale*float64(res.TokensAfter)+overhead-float64(prompt)) / float64(prompt)
			}
			cal.Observe(res.TokensAfter, prompt)
			observed++
			l.Accepted(res.Trimmed, prompt)
			if len(completion.Choices) != 1 {
				t.Fatalf("turn %d: %d choices", turn, len(completion.Choices))
			}
			reply := completion.Choices[0].Message
			// The history becomes what was sent, and the reply; a stateful
			// runtime keeps its transcript.
			if !stateful {
				msgs = params.Messages
			}
			msgs = append(msgs, reply.ToParam())
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				msgs = append(msgs, openai.ToolMessage(fakeprovider.RunToolWords(c.ID, l.Words), c.ID))
			}
		}
	}
	st.provider = p.Stats()
	return st
}

// TestAgentLoop runs the loop against a provider that counts 1.3 times
// the library's estimate and one that counts 0.8 times, with the budget
// set to the provider's window: the calibration must keep every request
// under the window after at most one overflow, while filling it.
func TestAgentLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64
	}{
		{"provider counts 1.3x", 1.3},
		{"provider counts 0.8x", 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("openai", adaptertest.Skew(tc.factor), loopLimit)
			l.MinWords, l.MaxWords = 250, 1150 // the agentloop example's results
			st := runLoop(t, l, "trim")
			ls := l.Stats()
			t.Logf("F=%.1f: %d turns, %d requests, %d trimmed, %d overflows (max attempt %d), mean provider prompt of trimmed requests %.1f%% of the limit; estimate error (Budget) after 1/3/10 observations %.2f%% / %.2f%% / %.2f%%, (fit) %.2f%% / %.2f%% / %.2f%%",
				tc.factor, st.turns, ls.Requests, ls.Trimmed, ls.Overflows, st.maxAttempt, 100*ls.Fill(),
				100*st.estErr[1], 100*st.estErr[3], 100*st.estErr[10], 100*st.fitErr[1], 100*st.fitErr[3], 100*st.fitErr[10])
			if st.provider.Overflows != ls.Overflows {
				t.Errorf("the provider answered %d overflows, the loop counted %d", st.provider.Overflows, ls.Overflows)
			}
			if st.provider.BadRequests != 0 {
				t.Errorf("provider rejected %d requests as unreadable", st.provider.BadRequests)
			}
			if st.provider.Requests != ls.Requests || st.provider.Accepted+st.provider.Overflows+st.provider.PairingErrors != ls.Requests {
				t.Errorf("provider saw %+v, the loop counted %d requests", st.provider, ls.Requests)
			}
			l.Check(t) // at most 1 overflow, no error, no violation, fill >= 85%
		})
	}
}

// TestStatefulLoop runs the loop with the Trimmer against a provider
// counting 1.3 times the library's estimate, with and without a
// Calibration: once the Trimmer has recovered from one rejection, its next
// plans fit what the provider said (issue 23: at most 1 rejection after
// the first recovery).
func TestStatefulLoop(t *testing.T) {
	for _, kind := range []string{"trimmer", "trimmer+cal"} {
		l := adaptertest.NewLoop("openai", adaptertest.Skew(1.3), loopLimit)
		st := runLoop(t, l, kind)
		adaptertest.CheckStateful(t, l, kind, st.afterFirst)
	}
}
