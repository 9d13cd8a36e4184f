package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
)

// fakeModel answers every request with decide's error, or else a text
// reply whose GenerationInfo reports prompt tokens, and records what it
// was sent.
type fakeModel struct {
	decide   func(n int, msgs []llms.MessageContent) error // n counts from 0
	prompt   int                                           // the usage reported; -1: the request's own count, plus 10%
	count    func([]llms.MessageContent) int
	sent     [][]llms.MessageContent
	opts     []llms.CallOptions
	thinking bool
}

func (f *fakeModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var co llms.CallOptions
	for _, o := range options {
		o(&co)
	}
	f.sent, f.opts = append(f.sent, msgs), append(f.opts, co)
	if f.decide != nil {
		if err := f.decide(len(f.sent)-1, msgs); err != nil {
			return nil, err
		}
	}
	prompt := f.prompt
	if prompt < 0 {
		prompt = f.count(msgs) * 11 / 10
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "ok", GenerationInfo: map[string]any{"PromptTokens": prompt}}}}, nil
}

func (f *fakeModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, f, prompt, options...)
}

func (f *fakeModel) SupportsReasoning() bool { return f.thinking }

func TestModel(t *testing.T) {
	ten := chat(10)
	total := tokens(t, ten)
	rateLimit := errors.New("API returned unexpected status code: 429: Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, Requested 1.")
	over := func(limit int) func(int, []llms.MessageContent) error {
		return func(_ int, msgs []llms.MessageContent) error {
			if n := tokens(t, msgs); n > limit {
				return overflowErr(limit, n)
			}
			return nil
		}
	}
	tooLong := overflowErr(100, 5000)
	always := func(int, []llms.MessageContent) error { return tooLong }
	noSizes := errors.New("API returned unexpected status code: 400: Your input exceeds the context window of this model. Please adjust your input and try again.")
	alwaysNoSizes := func(int, []llms.MessageContent) error { return noSizes }
	tests := []struct {
		name     string
		in       []llms.MessageContent
		budget   int
		decide   func(int, []llms.MessageContent) error
		requests int     // requests the wrapped model receives
		attempts []int   // Event.Attempt of each
		overflow []bool  // Event.Overflow of each
		errIs    []error // what the returned error wraps; nil: no error
		errText  string  // a prefix of the error's text
		trimErr  bool    // the first event carries a BudgetError
		reason   string
	}{
		{"fits", ten, total + 10, nil, 1, []int{0}, []bool{false}, nil, "", false,
			"a history within the budget is sent once, as it is"},
		{"trims", ten, total / 2, over(total / 2), 1, []int{0}, []bool{false}, nil, "", false,
			"a history over the budget is trimmed before it is sent"},
		{"recovers once", ten, total, over(total * 3 / 4), 2, []int{0, 1}, []bool{true, false}, nil, "", false,
			"a provider counting more than the budget says: one retry after RecoverOverflow"},
		{"gives up after two retries", ten, total, alwaysNoSizes, 3, []int{0, 1, 2}, []bool{true, true, true},
			[]error{noSizes}, "history/langchaingo: request still too long after retries (2): ", false,
			"at most MaxRetries retries, then the provider's error, wrapped"},
		{"nothing left to drop", chat(1), 1000, always, 1, []int{0}, []bool{true},
			[]error{history.ErrCannotRecover, tooLong}, "history: cannot recover", false,
			"a single turn cannot shrink: RecoverOverflow's RecoverError, no retry"},
		{"not an overflow", ten, total, func(int, []llms.MessageContent) error { return rateLimit }, 1, []int{0}, []bool{false},
			[]error{rateLimit}, "API returned unexpected status code: 429", false,
			"a rate limit is returned as it is, without a retry"},
		{"latest turn too large", chat(3), 50, nil, 1, []int{0}, []bool{false}, nil, "", true,
			"the smallest history is sent anyway, with the BudgetError in the event"},
		{"invalid budget", ten, 0, nil, 0, nil, nil, []error{history.ErrInvalidBudget}, "history: budget must be positive", false,
			"a trim error other than ErrLatestTurnTooLarge stops the call before sending"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A count that grows with the request, as a provider's does (one far
			// below what was sent reads as truncation).
			fake := &fakeModel{decide: tc.decide, prompt: -1, count: func(m []llms.MessageContent) int { return tokens(t, m) }}
			var events []Event
			cal := &history.Calibration{}
			m := NewModel(fake, Config{Budget: tc.budget, Calibration: cal, OnEvent: func(ev Event) { events = append(events, ev) }})
			before := adaptertest.JSON(t, tc.in)
			resp, err := m.GenerateContent(context.Background(), tc.in)
			if adaptertest.JSON(t, tc.in) != before {
				t.Fatal("GenerateContent modified the caller's messages")
			}
			if len(fake.sent) != tc.requests || len(events) != tc.requests {
				t.Fatalf("%d requests, %d events; want %d (%s)", len(fake.sent), len(events), tc.requests, tc.reason)
			}
			for i, ev := range events {
				if ev.Attempt != tc.attempts[i] || ev.Overflow != tc.overflow[i] || ev.Messages != len(fake.sent[i]) {
					t.Errorf("event %d = attempt %d, overflow %v, %d messages; want attempt %d, overflow %v, %d messages (%s)",
						i, ev.Attempt, ev.Overflow, ev.Messages, tc.attempts[i], tc.overflow[i], len(fake.sent[i]), tc.reason)
				}
				if err := Validate(fake.sent[i]); err != nil {
					t.Errorf("request %d: %v", i, err)
				}
				if got := tokens(t, fake.sent[i]); got != ev.Result.TokensAfter {
					t.Errorf("request %d counts %d, its Result says %d", i, got, ev.Result.TokensAfter)
				}
				if last := fake.sent[i][len(fake.sent[i])-1]; !slices.Equal(last.Parts, tc.in[len(tc.in)-1].Parts) {
					t.Errorf("request %d does not end with the latest message", i)
				}
				if i > 0 && ev.Result.TokensAfter >= events[i-1].Result.TokensAfter {
					t.Errorf("retry %d sent %d tokens, no fewer than the %d rejected", i, ev.Result.TokensAfter, events[i-1].Result.TokensAfter)
				}
			}
			if len(events) > 0 && (events[0].TrimErr != nil) != tc.trimErr {
				t.Errorf("TrimErr = %v, want one: %v (%s)", events[0].TrimErr, tc.trimErr, tc.reason)
			}
			if tc.trimErr && !errors.Is(events[0].TrimErr, history.ErrLatestTurnTooLarge) {
				t.Errorf("TrimErr = %v, want ErrLatestTurnTooLarge", events[0].TrimErr)
			}
			if tc.errIs == nil {
				if err != nil || resp == nil || resp.Choices[0].Content != "ok" {
					t.Fatalf("err = %v, want the response (%s)", err, tc.reason)
				}
				last := events[len(events)-1]
				if want := tokens(t, fake.sent[len(fake.sent)-1]) * 11 / 10; last.PromptTokens != want || last.Err != nil {
					t.Errorf("last event: PromptTokens %d, Err %v; want %d, nil", last.PromptTokens, last.Err, want)
				}
				if _, _, _, ok := cal.Model(); !ok {
					t.Error("the calibration observed nothing")
				}
				return
			}
			if resp != nil || err == nil || !strings.HasPrefix(err.Error(), tc.errText) {
				t.Fatalf("err = %v, want one starting %q (%s)", err, tc.errText, tc.reason)
			}
			for _, want := range tc.errIs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, does not wrap %v (%s)", err, want, tc.reason)
				}
			}
			if tc.errIs[0] == rateLimit && err != rateLimit {
				t.Errorf("err = %v, want the provider's error itself", err)
			}
			if _, _, _, ok := cal.Model(); ok {
				t.Error("the calibration observed a rejected request")
			}
		})
	}
}

// TestModelCalibration: every accepted request is observed with what was
// sent (tools included) against the prompt tokens reported, and the next
// trim aims at the calibrated budget.
func TestModelCalibration(t *testing.T) {
	in := chat(10)
	tools := loopTools()[:3]
	fake := &fakeModel{}
	cal := &history.Calibration{}
	var events []Event
	m := NewModel(fake, Config{Budget: 2000, Calibration: cal, OnEvent: func(ev Event) { events = append(events, ev) }})
	for i, scale := range []int{2, 2, 2} {
		fake.prompt = 0
		if i < 2 {
			fake.prompt = scale * (tokens(t, in[:5]) + Overhead(tools, nil))
		}
		if _, err := m.GenerateContent(context.Background(), in[:5], llms.WithTools(tools)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := events[0].Result.TokensAfter, tokens(t, in[:5])+Overhead(tools, nil); got != want {
		t.Fatalf("TokensAfter = %d, want the messages and the tools, %d", got, want)
	}
	scale, _, _, ok := cal.Model()
	if !ok || math.Abs(scale-2) > 0.01 {
		t.Fatalf("calibration scale %v (fitted %v), want 2", scale, ok)
	}
	if events[2].PromptTokens != 0 {
		t.Errorf("PromptTokens = %d for a response reporting 0", events[2].PromptTokens)
	}
	// The provider counts twice what the Counter does: the next trim aims
	// at half the budget, in the Counter's units.
	if _, err := m.GenerateContent(context.Background(), in, llms.WithTools(tools)); err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1].Result
	if last.Budget > 1000 || last.TokensAfter > last.Budget || !last.Trimmed {
		t.Errorf("calibrated trim: budget %d, sent %d, trimmed %v; want at most half of 2000", last.Budget, last.TokensAfter, last.Trimmed)
	}
}

// TestModelTools: the call's tools, deprecated functions included, and
// Config.Overhead are counted in every request's overhead, and the call
// options reach the wrapped model unchanged.
func TestModelTools(t *testing.T) {
	in := chat(2)
	tools := loopTools()[:2]
	fn := llms.FunctionDefinition{Name: "legacy", Description: "a legacy function", Parameters: map[string]any{"type": "object"}}
	base := tokens(t, in)
	tests := []struct {
		name     string
		opts     []llms.CallOption
		overhead int
		want     int
	}{
		{"none", nil, 0, base},
		{"tools", []llms.CallOption{llms.WithTools(tools)}, 0, base + Overhead(tools, nil)},
		{"functions", []llms.CallOption{llms.WithTools(tools), llms.WithFunctions([]llms.FunctionDefinition{fn})}, 0,
			base + Overhead(append(slices.Clone(tools), llms.Tool{Type: "function", Function: &fn}), nil)},
		{"config overhead", []llms.CallOption{llms.WithTools(tools)}, 40, base + Overhead(tools, nil) + 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeModel{}
			var got int
			m := NewModel(fake, Config{Budget: 100_000, Overhead: tc.overhead, OnEvent: func(ev Event) { got = ev.Result.TokensAfter }})
			if _, err := m.GenerateContent(context.Background(), in, append(tc.opts, llms.WithTemperature(0.25))...); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("TokensAfter = %d, want %d", got, tc.want)
			}
			if co := fake.opts[0]; co.Temperature != 0.25 || len(co.Tools) != len(tools) && tc.name != "none" {
				t.Errorf("call options reached the model as %+v", co)
			}
		})
	}
	m := NewModel(&fakeModel{}, Config{Budget: 100_000, Overhead: -1})
	if _, err := m.GenerateContent(context.Background(), in); !errors.Is(err, history.ErrInvalidOption) {
		t.Errorf("negative Overhead: err = %v, want ErrInvalidOption", err)
	}
}

// TestModelPinsAcrossRetries: a pinned message is in every request, the
// retries after an overflow included, although the retries trim the
// messages sent, where it stands elsewhere.
func TestModelPinsAcrossRetries(t *testing.T) {
	in := chat(12)
	in = slices.Insert(in, 3, msg(llms.ChatMessageTypeHuman, txt("remember: the answer is 42"))) // inside turn 0
	total := tokens(t, in)
	rejections := 0
	fake := &fakeModel{decide: func(n int, msgs []llms.MessageContent) error {
		if n < 2 {
			rejections++
			return overflowErr(1000, 1500)
		}
		return nil
	}}
	m := NewModel(fake, Config{Budget: total * 2 / 3, Options: []history.Option{history.WithPin(3)}})
	if _, err := m.GenerateContent(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if len(fake.sent) != 3 || rejections != 2 {
		t.Fatalf("%d requests, %d rejected; want 3 and 2", len(fake.sent), rejections)
	}
	for i, sent := range fake.sent {
		found := slices.ContainsFunc(sent, func(m llms.MessageContent) bool { return adaptertest.SameArray(m.Parts, in[3].Parts) })
		if !found {
			t.Errorf("request %d (%d messages) lost the pinned message", i, len(sent))
		}
		if i > 0 && len(sent) >= len(fake.sent[i-1]) {
			t.Errorf("request %d has %d messages, no fewer than the rejected one", i, len(sent))
		}
	}
}

func TestModelCallAndReasoning(t *testing.T) {
	fake := &fakeModel{thinking: true}
	m := NewModel(fake, Config{Budget: 1000})
	out, err := m.Call(context.Background(), "hello")
	if err != nil || out != "ok" || len(fake.sent) != 1 || fake.sent[0][0].Parts[0] != txt("hello") {
		t.Fatalf("Call = %q, %v; sent %v", out, err, fake.sent)
	}
	if !m.SupportsReasoning() {
		t.Error("SupportsReasoning hides the wrapped model's")
	}
	if NewModel(plainModel{}, Config{Budget: 1}).SupportsReasoning() {
		t.Error("a model that is not a ReasoningModel supports reasoning")
	}
}

// plainModel is an llms.Model and nothing else.
type plainModel struct{ llms.Model }

func TestPromptTokens(t *testing.T) {
	choice := func(info map[string]any) *llms.ContentChoice { return &llms.ContentChoice{GenerationInfo: info} }
	tests := []struct {
		name string
		resp *llms.ContentResponse
		want int
	}{
		{"nil", nil, 0},
		{"no choices", &llms.ContentResponse{}, 0},
		{"openai", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": 1234, "CompletionTokens": 5})}}, 1234},
		{"googleai int32, cached included", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": int32(900), "CacheReadInputTokens": int32(800), "input_tokens": int32(900)})}}, 900},
		{"anthropic adds the cache", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"InputTokens": 10, "CacheCreationInputTokens": 200, "CacheReadInputTokens": 3000})}}, 3210},
		{"bedrock", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"input_tokens": int64(77)})}}, 77},
		{"decoded JSON", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": float64(55)})}}, 55},
		{"json.Number", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": json.Number("66")})}}, 66},
		{"skips a nil choice and one without usage", &llms.ContentResponse{Choices: []*llms.ContentChoice{nil, choice(nil), choice(map[string]any{"PromptTokens": 8})}}, 8},
		{"negative", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": -5})}}, 0},
		{"NaN", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": math.NaN()})}}, 0},
		{"huge", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": uint64(math.MaxUint64)})}}, math.MaxInt},
		{"anthropic saturates", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"InputTokens": math.MaxInt, "CacheReadInputTokens": 5})}}, math.MaxInt},
		{"a string is not a count", &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(map[string]any{"PromptTokens": "12"})}}, 0},
	}
	for _, tc := range tests {
		if got := PromptTokens(tc.resp); got != tc.want {
			t.Errorf("%s: PromptTokens = %d, want %d", tc.name, got, tc.want)
		}
	}
}
