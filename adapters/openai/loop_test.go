package openai_test

// The whole loop a runtime runs, with the real openai-go client against a
// local endpoint that counts differently from the library: trim with a
// Calibration, the request's Overhead, elision and step trimming; observe
// usage.prompt_tokens; recover from context_length_exceeded.

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// loopLimit is the provider's window, and the budget the runtime
// configures: a runtime states the window, the calibration finds what fits.
const loopLimit = 12_000

// loopStats is what one run of the loop measured.
type loopStats struct {
	turns, requests, trimmed, overflows, maxAttempt int
	// promptTrimmed sums the provider's count of the accepted requests
	// whose messages were trimmed.
	promptTrimmed int
	// estErr and fitErr hold, after 1, 3 and 10 observations, the error of
	// the calibration's estimate of the next request's provider count:
	// from cal.Budget (sent × Limit / Budget(Limit)), and from the fitted
	// model (scale × sent + overhead).
	estErr, fitErr map[int]float64
	provider       fakeprovider.Stats
}

// runLoop runs 50 user turns of 1 to 6 tool steps against a provider that
// counts factor times the library's estimate of the messages plus the
// tools JSON. It fails t on any error that would reach the caller.
func runLoop(t *testing.T, factor float64) loopStats {
	t.Helper()
	p := &fakeprovider.Provider{Limit: loopLimit, Factor: factor}
	srv := httptest.NewServer(p)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()

	params := openai.ChatCompletionNewParams{Model: "gpt-test", Tools: fakeprovider.Tools()}
	var cal history.Calibration
	opts := []history.Option{
		history.WithCalibration(&cal),
		history.WithOverhead(hopenai.Overhead(params, nil)),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	st := loopStats{estErr: map[int]float64{}, fitErr: map[int]float64{}}
	observed := 0
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools to inspect the repository before you answer.")}

	// check fails t unless sent passes the pairing rule and holds the task.
	check := func(sent []openai.ChatCompletionMessageParamUnion, task string) {
		t.Helper()
		if err := hopenai.Validate(sent); err != nil {
			t.Fatalf("request %d would be rejected: %v", st.requests, err)
		}
		for _, m := range sent {
			if m.OfUser != nil && m.OfUser.Content.OfString.Value == task {
				return
			}
		}
		t.Fatalf("request %d does not hold the latest task %q", st.requests, task)
	}

	for turn := 1; turn <= 50; turn++ {
		st.turns++
		task := fakeprovider.Task(turn)
		msgs = append(msgs, openai.UserMessage(task))
		for step := 0; ; step++ {
			if step > 8 {
				t.Fatalf("turn %d does not end", turn)
			}
			sent, res, err := hopenai.Trim(msgs, loopLimit, opts...)
			if err != nil {
				t.Fatalf("turn %d: Trim: %v", turn, err)
			}
			check(sent, task)
			params.Messages = sent
			st.requests++
			completion, err := client.Chat.Completions.New(ctx, params)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				st.overflows++
				st.maxAttempt = max(st.maxAttempt, attempt)
				var rerr error
				if params.Messages, res, rerr = hopenai.RecoverOverflow(params.Messages, err, attempt, opts...); rerr != nil {
					t.Fatalf("turn %d: RecoverOverflow after %v: %v", turn, err, rerr)
				}
				check(params.Messages, task)
				st.requests++
				completion, err = client.Chat.Completions.New(ctx, params)
			}
			if err != nil {
				t.Fatalf("turn %d: the request failed after 2 retries: %v", turn, err)
			}
			prompt := int(completion.Usage.PromptTokens)
			if observed == 1 || observed == 3 || observed == 10 {
				est := float64(res.TokensAfter) * loopLimit / float64(cal.Budget(loopLimit))
				st.estErr[observed] = math.Abs(est-float64(prompt)) / float64(prompt)
				scale, overhead, _, _ := cal.Model()
				st.fitErr[observed] = math.Abs(scale*float64(res.TokensAfter)+overhead-float64(prompt)) / float64(prompt)
			}
			cal.Observe(res.TokensAfter, prompt)
			observed++
			if res.Trimmed {
				st.trimmed++
				st.promptTrimmed += prompt
			}
			if len(completion.Choices) != 1 {
				t.Fatalf("turn %d: %d choices", turn, len(completion.Choices))
			}
			reply := completion.Choices[0].Message
			// The history becomes what was sent, and the reply.
			msgs = append(params.Messages, reply.ToParam())
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				msgs = append(msgs, openai.ToolMessage(fakeprovider.RunTool(c.ID), c.ID))
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
			st := runLoop(t, tc.factor)
			mean := float64(st.promptTrimmed) / float64(max(st.trimmed, 1)) / loopLimit
			t.Logf("F=%.1f: %d turns, %d requests, %d trimmed, %d overflows (max attempt %d), mean provider prompt of trimmed requests %.1f%% of the limit; estimate error (Budget) after 1/3/10 observations %.2f%% / %.2f%% / %.2f%%, (fit) %.2f%% / %.2f%% / %.2f%%",
				tc.factor, st.turns, st.requests, st.trimmed, st.overflows, st.maxAttempt, 100*mean,
				100*st.estErr[1], 100*st.estErr[3], 100*st.estErr[10], 100*st.fitErr[1], 100*st.fitErr[3], 100*st.fitErr[10])
			if st.provider.Overflows != st.overflows || st.provider.Overflows > 1 {
				t.Errorf("%d overflows (provider saw %d), want at most 1", st.overflows, st.provider.Overflows)
			}
			if st.provider.PairingErrors != 0 || st.provider.BadRequests != 0 {
				t.Errorf("provider rejected %d requests for pairing, %d as unreadable", st.provider.PairingErrors, st.provider.BadRequests)
			}
			if st.provider.Requests != st.requests || st.provider.Accepted+st.provider.Overflows != st.requests {
				t.Errorf("provider saw %+v, loop sent %d requests", st.provider, st.requests)
			}
			if st.trimmed < 20 {
				t.Errorf("only %d trimmed requests: the loop does not exercise the trim", st.trimmed)
			}
			if mean < 0.85 {
				t.Errorf("mean provider prompt of trimmed requests is %.1f%% of the limit, want >= 85%%", 100*mean)
			}
		})
	}
}
