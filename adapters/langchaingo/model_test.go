package langchaingo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/memory"
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

// chatTokens is the Heuristic's count of stored messages, as the Memory
// trims them.
func chatTokens(t testing.TB, msgs []llms.ChatMessage) int {
	t.Helper()
	native := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		native[i] = contentOf(m)
	}
	return tokens(t, native)
}

func loadMessages(t *testing.T, m *Memory) []llms.ChatMessage {
	t.Helper()
	vars, err := m.LoadMemoryVariables(context.Background(), map[string]any{"input": "next"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, ok := vars[m.MemoryKey].([]llms.ChatMessage)
	if !ok {
		t.Fatalf("memory variables %v", vars)
	}
	return msgs
}

// TestMemoryKeepsLatestRequest is the failure LangChainGo's own token
// buffer shows in a chat loop: an exchange larger than its limit empties
// it, the latest request included. Through 60 exchanges of every size,
// a third of them larger than the budget on their own, the Memory always
// holds the latest exchange, whole and last, and otherwise fits the
// budget.
func TestMemoryKeepsLatestRequest(t *testing.T) {
	const budget = 600
	m := NewMemory(budget)
	m.ReturnMessages = true
	r := rng(7)
	large := 0
	for i := range 60 {
		in := fmt.Sprintf("request %d: %s", i, words(&r, 5+r.intn(400)))
		out := fmt.Sprintf("reply %d: %s", i, words(&r, 5+r.intn(400)))
		if err := m.SaveContext(context.Background(), map[string]any{"input": in}, map[string]any{"output": out}); err != nil {
			t.Fatal(err)
		}
		got := loadMessages(t, m)
		n := len(got)
		if n < 2 || got[n-2] != (llms.HumanChatMessage{Content: in}) || !reflect.DeepEqual(got[n-1], llms.AIChatMessage{Content: out}) {
			t.Fatalf("exchange %d: the memory lost the latest request (%d messages, ending %v)", i, n, got[max(n-2, 0):])
		}
		latest := chatTokens(t, got[n-2:])
		if latest > budget {
			large++
		}
		if size := chatTokens(t, got); size > budget && size > latest+chatTokens(t, []llms.ChatMessage{llms.HumanChatMessage{Content: history.BreadcrumbText}}) {
			t.Fatalf("exchange %d: %d tokens loaded, budget %d, latest exchange %d", i, size, budget, latest)
		}
		notices := 0
		for _, msg := range got {
			if msg.GetContent() == history.BreadcrumbText {
				notices++
			}
		}
		if notices > 1 {
			t.Fatalf("exchange %d: %d notices stacked", i, notices)
		}
		stored, _ := m.ChatHistory.Messages(context.Background())
		if len(stored) != n {
			t.Fatalf("exchange %d: %d messages stored, %d loaded: the store was not trimmed at save", i, len(stored), n)
		}
	}
	if large < 10 {
		t.Fatalf("only %d exchanges exceed the budget alone", large)
	}
}

// TestMemoryToolMessages: tool calls stored by an agent stay paired, and
// an elided result comes back as a tool message holding the placeholder,
// while the store keeps the caller's values where nothing changed.
func TestMemoryToolMessages(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("a line of tool output\n", 120)
	stored := []llms.ChatMessage{
		llms.SystemChatMessage{Content: "You are an agent."},
		llms.HumanChatMessage{Content: "read both files"},
		llms.AIChatMessage{Content: "reading", ToolCalls: []llms.ToolCall{call("a", "read", `{"p":"a"}`), call("b", "read", `{"p":"b"}`)}, ReasoningContent: "why"},
		llms.ToolChatMessage{ID: "a", Content: big},
		llms.ToolChatMessage{ID: "b", Content: "short"},
		llms.AIChatMessage{Content: "both read"},
		llms.HumanChatMessage{Content: "and now?"},
		llms.AIChatMessage{Content: "now we test", ToolCalls: []llms.ToolCall{call("c", "test", "{}"), call("d", "lint", "{}")}},
		llms.ToolChatMessage{ID: "c", Content: "ok"}, // d is unanswered
	}
	h := memory.NewChatMessageHistory()
	if err := h.SetMessages(ctx, stored); err != nil {
		t.Fatal(err)
	}
	m := NewMemory(10_000, history.WithElision(history.ElideOptions{KeepRecent: -1, MinTokens: 100}))
	m.ChatHistory, m.ReturnMessages = h, true
	total := chatTokens(t, stored)
	m.Budget = total - 100
	got := loadMessages(t, m)
	if len(got) != len(stored) {
		t.Fatalf("%d messages loaded, %d stored: %v", len(got), len(stored), got)
	}
	if el, ok := got[3].(llms.ToolChatMessage); !ok || el.ID != "a" || !strings.HasPrefix(el.Content, "[elided tool result") {
		t.Errorf("elided result = %#v", got[3])
	}
	if got[4] != stored[4] || got[1] != stored[1] {
		t.Error("unchanged messages are not the stored values")
	}
	ai, ok := got[7].(llms.AIChatMessage)
	if !ok || ai.Content != "now we test" || len(ai.ToolCalls) != 1 || ai.ToolCalls[0].ID != "c" {
		t.Errorf("the unanswered call d was not stripped: %#v", got[7])
	}
	if first := got[2].(llms.AIChatMessage); first.ReasoningContent != "why" || len(first.ToolCalls) != 2 {
		t.Errorf("kept AI message changed: %#v", first)
	}
	again, _ := h.Messages(ctx)
	if len(again) != len(stored) || again[3] != stored[3] {
		t.Error("LoadMemoryVariables modified the store")
	}
}

func TestMemoryString(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(60)
	for i := range 5 {
		if err := m.SaveContext(ctx, map[string]any{"q": fmt.Sprintf("question %d %s", i, strings.Repeat("word ", 20))}, map[string]any{"a": fmt.Sprintf("answer %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	vars, err := m.LoadMemoryVariables(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := vars["history"].(string)
	want := "Human: " + history.BreadcrumbText + "\nHuman: question 4 " + strings.Repeat("word ", 20) + "\nAI: answer 4"
	if s != want {
		t.Errorf("history = %q\nwant %q", s, want)
	}
	if got := m.MemoryVariables(ctx); len(got) != 1 || got[0] != "history" || m.GetMemoryKey(ctx) != "history" {
		t.Errorf("memory variables %v", got)
	}
	if err := m.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if vars, _ := m.LoadMemoryVariables(ctx, nil); vars["history"] != "" {
		t.Errorf("after Clear: %v", vars)
	}
}

func TestMemoryErrors(t *testing.T) {
	ctx := context.Background()
	withStored := func(budget int, msgs ...llms.ChatMessage) *Memory {
		m := NewMemory(budget)
		_ = m.ChatHistory.SetMessages(ctx, msgs)
		return m
	}
	tests := []struct {
		name string
		m    *Memory
		want error
	}{
		{"legacy function message", withStored(100, llms.HumanChatMessage{Content: "x"}, llms.FunctionChatMessage{Name: "f", Content: "y"}), ErrInvalidMessage},
		{"nil message", withStored(100, nil), ErrInvalidMessage},
		{"no budget", withStored(0, llms.HumanChatMessage{Content: "x"}), history.ErrInvalidBudget},
	}
	for _, tc := range tests {
		if _, err := tc.m.LoadMemoryVariables(ctx, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: LoadMemoryVariables: %v, want %v", tc.name, err, tc.want)
		}
		if err := tc.m.SaveContext(ctx, map[string]any{"in": "a"}, map[string]any{"out": "b"}); !errors.Is(err, tc.want) {
			t.Errorf("%s: SaveContext: %v, want %v", tc.name, err, tc.want)
		}
	}
	m := NewMemory(100)
	if err := m.SaveContext(ctx, map[string]any{"a": "1", "b": "2"}, map[string]any{"out": "x"}); !errors.Is(err, memory.ErrInvalidInputValues) {
		t.Errorf("ambiguous inputs: %v, want the buffer's ErrInvalidInputValues", err)
	}
}

// genChat builds the messages a Memory stores from fuzz input: gen's
// conversation (parallel calls answered in shuffled order, some missing, an
// orphan or a wrong id) as llms.ChatMessage values, every AI message with
// ReasoningContent as a reasoning model's reply holds it.
func genChat(data []byte) []llms.ChatMessage {
	var out []llms.ChatMessage
	for i, m := range gen(data) {
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			out = append(out, llms.SystemChatMessage{Content: m.Parts[0].(llms.TextContent).Text})
		case llms.ChatMessageTypeHuman:
			out = append(out, llms.HumanChatMessage{Content: m.Parts[0].(llms.TextContent).Text})
		case llms.ChatMessageTypeAI:
			ai := llms.AIChatMessage{ReasoningContent: fmt.Sprintf("step %d: %s", i, strings.Repeat("think ", len(data)%7))}
			for _, p := range m.Parts {
				switch x := p.(type) {
				case llms.TextContent:
					ai.Content = x.Text
				case llms.ToolCall:
					ai.ToolCalls = append(ai.ToolCalls, x)
				}
			}
			out = append(out, ai)
		case llms.ChatMessageTypeTool:
			for _, p := range m.Parts {
				r := p.(llms.ToolCallResponse)
				out = append(out, llms.ToolChatMessage{ID: r.ToolCallID, Content: r.Content})
			}
		}
	}
	return out
}

// FuzzMemory stores random histories of a reasoning model in a Memory and
// loads them at any budget with any option set of the ladder: the loaded
// messages pair their tool calls, hold the latest human request, and every
// AI message in them is a stored one, or one with calls stripped or their
// arguments cleared, with its ReasoningContent. With o&8 set, the calls
// carry large arguments and the ladder clears them (the inputs of the other
// sets keep their meaning).
func FuzzMemory(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint16(200), uint8(0))
	f.Add([]byte{0, 1, 2, 0, 1, 0, 2, 1, 0, 0, 5, 3, 2, 1, 0, 0, 9, 1, 2, 2, 2, 2}, uint16(60), uint8(3))
	f.Add([]byte{7, 2, 1, 0, 3, 7, 2, 1, 0, 3, 7, 2, 1, 0, 3, 7, 2, 1, 0, 3}, uint16(500), uint8(2))
	f.Add([]byte{0, 2, 1, 250, 3, 240, 1, 200, 2, 2, 220, 230, 1, 0, 2, 1, 210, 3, 0}, uint16(156), uint8(8))
	clearing := []history.Option{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, ClearArguments: 8}), history.WithStepTrim()}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		chat := genChat(data)
		sets := adaptertest.LadderSets(false)
		set := sets[int(o)%len(sets)]
		if o&8 != 0 {
			set.Name, set.Opts = "clearing arguments", clearing
			for i, cm := range chat {
				if ai, ok := cm.(llms.AIChatMessage); ok && len(ai.ToolCalls) > 0 {
					ai.ToolCalls = slices.Clone(ai.ToolCalls)
					for j := range ai.ToolCalls {
						fc := *ai.ToolCalls[j].FunctionCall
						fc.Arguments = `{"q":"` + strings.Repeat("word ", 10+(i+j)%40) + `"}`
						ai.ToolCalls[j].FunctionCall = &fc
					}
					chat[i] = ai
				}
			}
		}
		if msg := checkMemoryTrim(chat, int(budget)+1, set.Opts); msg != "" {
			t.Fatalf("budget %d, %s: %s", int(budget)+1, set.Name, msg)
		}
	})
}

// TestMemoryPinsFollowTheirMessages: over a store that starts with a system
// message, NewMemory(budget, history.WithPin(1)) pins the first request;
// the Memory's own rewrites of the store move it (the breadcrumb takes
// index 1), and the pin follows it: every later exchange is saved, and the
// pinned request stays in the store.
func TestMemoryPinsFollowTheirMessages(t *testing.T) {
	const budget = 400
	ctx := context.Background()
	m := NewMemory(budget, history.WithPin(1))
	m.ReturnMessages = true
	if err := m.ChatHistory.AddMessage(ctx, llms.SystemChatMessage{Content: "You are terse."}); err != nil {
		t.Fatal(err)
	}
	r := rng(11)
	pinned := "request 0: remember the code word"
	trims := 0
	for i := range 30 {
		in := fmt.Sprintf("request %d: %s", i, words(&r, 20+r.intn(60)))
		out := fmt.Sprintf("reply %d: %s", i, words(&r, 20+r.intn(60)))
		if i == 0 {
			in = pinned
		}
		if err := m.SaveContext(ctx, map[string]any{"input": in}, map[string]any{"output": out}); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		stored, err := m.ChatHistory.Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) < 2*(i+1)+1 {
			trims++
		}
		if !slices.ContainsFunc(stored, func(cm llms.ChatMessage) bool { return cm.GetContent() == pinned }) {
			t.Fatalf("exchange %d: the pinned request is gone from the store", i)
		}
		if got := loadMessages(t, m); !slices.ContainsFunc(got, func(cm llms.ChatMessage) bool { return cm.GetContent() == pinned }) {
			t.Fatalf("exchange %d: the pinned request is not loaded", i)
		}
	}
	if trims == 0 {
		t.Fatal("setup: the store was never trimmed")
	}
}

// A 50-turn agent loop through Model around LangChainGo's real OpenAI
// provider (llms/openai), against an httptest server that speaks OpenAI's
// chat-completions wire format, counts each request as a provider whose
// tokenizer differs from the Heuristic by a factor F, and rejects what
// exceeds its window with OpenAI's own overflow status and body.

// wireMessage is one message of a chat-completions request as it travels.
// (LangChainGo's request types are internal to its openai package, so the
// server decodes the wire format itself.)
type wireMessage struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"` // a string, or an array of parts
	ToolCalls  []wireCall `json:"tool_calls"`
	ToolCallID string     `json:"tool_call_id"`
}

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// text returns the message's content: a string, or the text of its parts.
func (m wireMessage) text() (string, error) {
	switch c := m.Content.(type) {
	case nil:
		return "", nil
	case string:
		return c, nil
	case []any:
		var b strings.Builder
		for _, p := range c {
			part, ok := p.(map[string]any)
			if !ok || part["type"] != "text" {
				return "", fmt.Errorf("content part %v", p)
			}
			s, _ := part["text"].(string)
			b.WriteString(s)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("content %T", m.Content)
}

// native returns the request's messages as llms.MessageContent, as the
// provider's tokenizer would see them.
func native(msgs []wireMessage) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, 0, len(msgs))
	for _, m := range msgs {
		s, err := m.text()
		if err != nil {
			return nil, err
		}
		var mc llms.MessageContent
		switch m.Role {
		case "system":
			mc = llms.TextParts(llms.ChatMessageTypeSystem, s)
		case "user":
			mc = llms.TextParts(llms.ChatMessageTypeHuman, s)
		case "assistant":
			mc.Role = llms.ChatMessageTypeAI
			if s != "" {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: s})
			}
			for _, c := range m.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: c.Type,
					FunctionCall: &llms.FunctionCall{Name: c.Function.Name, Arguments: c.Function.Arguments}})
			}
		case "tool":
			mc = llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: m.ToolCallID, Content: s}}}
		default:
			return nil, fmt.Errorf("role %q", m.Role)
		}
		out = append(out, mc)
	}
	return out, nil
}

// reply is what the server answers an accepted request with.
type reply struct {
	text  string
	calls []wireCall
}

// loopServer is the provider: it checks each request's pairing on the
// wire by OpenAI's rule (adaptertest.OpenAIPairing) and answers a broken
// one with OpenAI's 400; it counts and checks the others through its
// adaptertest.Loop (the messages as ToHistory converts them, the tools'
// JSON as received), rejects what exceeds the window as OpenAI does, and
// otherwise answers next with usage reporting its count.
type loopServer struct {
	loop *adaptertest.Loop

	mu       sync.Mutex
	next     reply
	problems []string
}

func (s *loopServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string          `json:"model"`
		Messages []wireMessage   `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	var wire struct {
		Messages []adaptertest.OpenAIWireMessage `json:"messages"`
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = errors.Join(json.Unmarshal(body, &req), json.Unmarshal(body, &wire))
	}
	if err != nil || r.URL.Path != "/chat/completions" {
		http.Error(w, fmt.Sprintf("bad request %s: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	problem := func(format string, args ...any) {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
	hist := func() []history.Message {
		msgs, err := native(req.Messages)
		if err != nil {
			problem("decode: %v", err)
		}
		h, err := ToHistory(msgs)
		if err != nil {
			problem("convert: %v", err)
		}
		return h
	}
	holds := func(text string) bool {
		for _, m := range req.Messages {
			if t, _ := m.text(); m.Role == "user" && t == text {
				return true
			}
		}
		return false
	}
	count, ok := s.loop.JudgeOpenAI(w, wire.Messages, req.Tools, hist, holds)
	if !ok {
		return
	}
	msg := map[string]any{"role": "assistant", "content": s.next.text}
	finish := "stop"
	if len(s.next.calls) > 0 {
		msg["tool_calls"], msg["content"], finish = s.next.calls, nil, "tool_calls"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": count, "completion_tokens": 20, "total_tokens": count + 20},
	})
}

// rng is a deterministic pseudo-random sequence (a 64-bit LCG).
type rng uint64

func (r *rng) intn(n int) int {
	*r = *r*6364136223846793005 + 1442695040888963407
	return int(uint64(*r>>33) % uint64(n))
}

var vocabulary = strings.Fields(`the function returns an error when the file is missing and the caller
retries with a backoff of two seconds while the scheduler keeps the queue ordered by priority so that
requests from the same tenant never overtake each other config value parse buffer index cache miss
latency throughput handler middleware goroutine channel mutex deadline context cancel timeout retry
json decode encode schema field struct pointer slice map key value table column row query plan`)

// words returns n pseudo-random words from the vocabulary, in lines.
func words(r *rng, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(vocabulary[r.intn(len(vocabulary))])
		if i%14 == 13 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// loopTools are the 20 tool schemas sent on every request.
func loopTools() []llms.Tool {
	tools := make([]llms.Tool, 20)
	for i := range tools {
		tools[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: fmt.Sprintf("Tool %d reads, searches or edits part of the repository and returns its output as plain text; use it when the task needs data it can provide.", i),
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"path":  map[string]any{"type": "string", "description": "the file or directory to work on"},
					"query": map[string]any{"type": "string", "description": "what to look for"},
					"limit": map[string]any{"type": "integer", "description": "the largest number of results"},
				},
				"required": []string{"path"},
			},
		}}
	}
	return tools
}

// validating checks every request it forwards with Validate.
type validating struct {
	llms.Model
	mu      sync.Mutex
	invalid []error
}

func (v *validating) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := Validate(msgs); err != nil {
		v.mu.Lock()
		v.invalid = append(v.invalid, err)
		v.mu.Unlock()
	}
	return v.Model.GenerateContent(ctx, msgs, opts...)
}

// loopStats are the figures of one run of the loop besides what its
// adaptertest.Loop counts.
type loopStats struct {
	requests, accepted, overflows int
	estimateErr                   map[int]float64
}

// runLoop runs the agent loop through a Model (Budget = l.Budget, with a
// Calibration) against a provider that counts and checks every request
// through l. Errors that reach the caller are recorded in l, and the loop
// goes on with the next turn. kind "trim" is that Model; "trimmer" a
// stateful one (its Trimmer with a low-water mark of 0.7) without the
// Calibration, "trimmer+cal" with it.
func runLoop(t *testing.T, l *adaptertest.Loop, kind string) loopStats {
	t.Helper()
	return runLoopModel(t, l, kind, "")
}

// runLoopModel is runLoop through the door when name is not "": the Model
// is given the model's name (Config.Model) and no Budget, no Calibration
// under the door (it owns one), and door as its only Options (the
// door's policy is its own).
func runLoopModel(t *testing.T, l *adaptertest.Loop, kind, name string, door ...history.Option) loopStats {
	t.Helper()
	srv := &loopServer{loop: l}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	llm, err := openai.New(openai.WithBaseURL(hs.URL), openai.WithToken("x"), openai.WithModel(cmp.Or(name, "gpt-4o-mini")))
	if err != nil {
		t.Fatal(err)
	}
	check := &validating{Model: llm}
	cal := &history.Calibration{}
	st := loopStats{estimateErr: map[int]float64{}}
	observed := 0
	var scale, offset float64
	fitted := false
	cfg := Config{
		Budget:      l.Budget,
		Options:     []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()},
		Calibration: cal,
		Stateful:    kind != "trim",
	}
	if cfg.Stateful {
		cfg.Options = append(cfg.Options, history.WithLowWater(0.7))
	}
	if kind == "trimmer" {
		cfg.Calibration = nil
	}
	if name != "" { // the door, as a user gets it: the model's name, door's options only
		cfg.Budget, cfg.Model, cfg.Calibration, cfg.Options = 0, name, nil, door
	}
	cfg.OnEvent = func(ev Event) {
		st.requests++
		if ev.Overflow {
			st.overflows++
			l.Rejected(ev.Attempt, ev.Result, cal)
		}
		if ev.Err != nil {
			return
		}
		st.accepted++
		l.Accepted(ev.Result.Trimmed, ev.PromptTokens)
		// The calibration's estimate of this request, by the model
		// fitted to the observations before it.
		estimate := float64(ev.Result.TokensAfter)
		if fitted {
			estimate = scale*float64(ev.Result.TokensAfter) + offset
		}
		if _, done := st.estimateErr[observed]; !done {
			st.estimateErr[observed] = math.Abs(estimate-float64(ev.PromptTokens)) / float64(ev.PromptTokens)
		}
		observed++
		scale, offset, _, fitted = cal.Model()
	}
	model := NewModel(check, cfg)

	ctx := context.Background()
	tools := loopTools()
	r := rng(uint64(l.Mode.Text * 1000))
	full := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You are a coding agent. Use the tools to answer each task.")}
	call := 0
	for turn := range l.Turns {
		task := fmt.Sprintf("Task %d: %s", turn, words(&r, 10+r.intn(30)))
		full = append(full, llms.TextParts(llms.ChatMessageTypeHuman, task))
		l.Turn(turn+1, task)
		steps := 1 + r.intn(6)
		for step := 0; step <= steps; step++ {
			next := reply{text: fmt.Sprintf("Done with task %d: %s", turn, words(&r, 20+r.intn(40)))}
			if step < steps {
				next = reply{}
				for range 1 + r.intn(4)/3 { // one call, sometimes two in parallel
					call++
					c := wireCall{ID: fmt.Sprintf("call_%d", call), Type: "function"}
					c.Function.Name = fmt.Sprintf("tool_%02d", r.intn(20))
					c.Function.Arguments = fmt.Sprintf(`{"path":"src/file_%d.go","query":"%s"}`, r.intn(100), words(&r, 2))
					next.calls = append(next.calls, c)
				}
			}
			srv.mu.Lock()
			srv.next = next
			srv.mu.Unlock()
			resp, err := model.GenerateContent(ctx, full, llms.WithTools(tools))
			if err != nil {
				l.Error(fmt.Errorf("step %d: %w", step, err))
				break
			}
			c := resp.Choices[0]
			if len(c.ToolCalls) == 0 {
				full = append(full, llms.TextParts(llms.ChatMessageTypeAI, c.Content))
				break
			}
			ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			for _, tc := range c.ToolCalls {
				ai.Parts = append(ai.Parts, tc)
			}
			full = append(full, ai)
			for _, tc := range c.ToolCalls {
				n := l.MinWords + r.intn(l.MaxWords-l.MinWords+1)
				full = append(full, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
					ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: words(&r, n)}}})
			}
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, p := range srv.problems {
		t.Errorf("%s server: %s", l.Mode.Name, p)
	}
	for _, err := range check.invalid {
		t.Errorf("%s a request failed Validate: %v", l.Mode.Name, err)
	}
	if ls := l.Stats(); ls.Requests != st.requests+ls.Violations || ls.Overflows != st.overflows {
		t.Errorf("%s server saw %d requests (%d rejected for length, %d for pairing), events say %d (%d overflows)",
			l.Mode.Name, ls.Requests, ls.Overflows, ls.Violations, st.requests, st.overflows)
	}
	return st
}

// TestModelLoop runs the loop for a provider that counts 30% more than the
// Heuristic and one that counts 20% less, with the budget at the window
// as a runtime configures it: the Model must hide every overflow from
// the caller, overflow at most once per loop, keep pairs and the latest
// request, and use the window (trimmed requests at 85% of it or more).
func TestModelLoop(t *testing.T) {
	const limit = 12000
	for _, f := range []float64{1.3, 0.8} {
		t.Run(fmt.Sprintf("F=%.1f", f), func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("langchaingo", adaptertest.Skew(f), limit).RaceShort()
			l.MinWords, l.MaxWords = 250, 1150
			st := runLoop(t, l, "trim")
			ls := l.Stats()
			t.Logf("F=%.1f: %d requests, %d accepted, %d trimmed, %d overflows; mean provider prompt of trimmed requests %.1f%% of the limit; estimate error after 0/1/3/10 observations: %.1f%% / %.1f%% / %.1f%% / %.1f%%",
				f, st.requests, st.accepted, ls.Trimmed, ls.Overflows, 100*ls.Fill(),
				100*st.estimateErr[0], 100*st.estimateErr[1], 100*st.estimateErr[3], 100*st.estimateErr[10])
			l.Check(t) // at most 1 overflow, no error, no violation, fill >= 85%
			if st.estimateErr[10] > 0.05 {
				t.Errorf("estimate error after 10 observations %.1f%%, want at most 5%%", 100*st.estimateErr[10])
			}
		})
	}
}

// TestStatefulLoop runs the loop through a stateful Model against a
// provider counting 1.3 times the library's estimate, with and without a
// Calibration, at a budget of the window and of 1.25 times it (issues 23
// and 33: at most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "langchaingo", 12_000, func(t *testing.T, l *adaptertest.Loop, calibrate bool) {
		runLoop(t, l, map[bool]string{false: "trimmer", true: "trimmer+cal"}[calibrate])
	})
}
