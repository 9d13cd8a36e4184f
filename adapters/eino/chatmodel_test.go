package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// provider is a fake endpoint behind fakeModel: it counts a request as
// ceil(scale × the heuristic count of its messages) + the heuristic count
// of its tools, rejects it with Eino's OpenAI overflow error when that
// exceeds limit, and otherwise replies with usage reporting that count.
type provider struct {
	scale float64
	limit int
	// reject, when set, is the error of every request.
	reject error
	// stubborn rejects every request as just over the limit.
	stubborn bool

	mu       sync.Mutex
	requests [][]*schema.Message
	counts   []int
	tools    [][]*schema.ToolInfo
}

func (p *provider) count(t testing.TB, msgs []*schema.Message, tools []*schema.ToolInfo) int {
	h, err := ToHistory(msgs)
	if err != nil {
		t.Errorf("the inner model received messages that do not convert: %v", err)
	}
	return int(math.Ceil(p.scale*float64(history.Estimate(h, nil)))) + Overhead(tools, nil)
}

// fakeModel is an Eino ToolCallingChatModel in front of a provider.
type fakeModel struct {
	t     testing.TB
	p     *provider
	tools []*schema.ToolInfo
}

func (f *fakeModel) call(msgs []*schema.Message, opts []model.Option) (int, error) {
	tools := f.tools
	if c := model.GetCommonOptions(nil, opts...); c.Tools != nil {
		tools = c.Tools
	}
	n := f.p.count(f.t, msgs, tools)
	f.p.mu.Lock()
	f.p.requests = append(f.p.requests, msgs)
	f.p.counts = append(f.p.counts, n)
	f.p.tools = append(f.p.tools, tools)
	f.p.mu.Unlock()
	if err := Validate(msgs); err != nil {
		f.t.Errorf("the inner model received an invalid request: %v", err)
	}
	switch {
	case f.p.reject != nil:
		return 0, f.p.reject
	case f.p.stubborn:
		return 0, overflowErr(n+1, n)
	case n > f.p.limit:
		return 0, overflowErr(n, f.p.limit)
	}
	return n, nil
}

func usageReply(n int) *schema.Message {
	return &schema.Message{Role: schema.Assistant, Content: "ok",
		ResponseMeta: &schema.ResponseMeta{Usage: &schema.TokenUsage{PromptTokens: n}}}
}

func (f *fakeModel) Generate(_ context.Context, msgs []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	n, err := f.call(msgs, opts)
	if err != nil {
		return nil, err
	}
	return usageReply(n), nil
}

func (f *fakeModel) Stream(_ context.Context, msgs []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	n, err := f.call(msgs, opts)
	if err != nil {
		return nil, err
	}
	last := usageReply(n)
	last.Content = ""
	return schema.StreamReaderFromArray([]*schema.Message{{Role: schema.Assistant, Content: "o"}, {Role: schema.Assistant, Content: "k"}, last}), nil
}

func (f *fakeModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	if len(tools) == 0 {
		return nil, errors.New("no tools to bind")
	}
	return &fakeModel{t: f.t, p: f.p, tools: tools}, nil
}

// bigTool is a tool whose definition costs about n tokens.
func bigTool(name string, n int) *schema.ToolInfo {
	return &schema.ToolInfo{Name: name, Desc: strings.Repeat("Reads files. ", n/3)}
}

// record collects the events a ChatModel reports.
type record struct {
	mu     sync.Mutex
	events []Event
}

func (r *record) add(ev Event) { r.mu.Lock(); r.events = append(r.events, ev); r.mu.Unlock() }

func (r *record) types() string {
	var s []string
	for _, ev := range r.events {
		s = append(s, fmt.Sprintf("%s%d", ev.Type, ev.Attempt))
	}
	return strings.Join(s, " ")
}

func TestChatModel(t *testing.T) {
	conv := agentTurns(12, 300)
	size := tokens(t, conv)
	rateLimit := &einoopenai.APIError{Code: "rate_limit_exceeded", Type: "requests", HTTPStatusCode: 429, Message: "Rate limit reached"}
	bound := []*schema.ToolInfo{bigTool("read_file", 600), bigTool("grep", 300)}
	tests := []struct {
		name   string
		p      *provider
		budget int
		in     []*schema.Message
		tools  []*schema.ToolInfo // bound with WithTools
		opts   []model.Option
		stream bool
		// events are the events reported, as type and attempt.
		events string
		want   error // errors.Is
		// requests is the number of requests the provider saw.
		requests int
		// tooLarge: the first request event reports the trim's
		// *history.BudgetError.
		tooLarge bool
	}{
		{name: "fits", p: &provider{scale: 1, limit: size}, budget: size, in: conv,
			events: "request0 usage0", requests: 1},
		{name: "trimmed to the budget", p: &provider{scale: 1, limit: size}, budget: size / 2, in: conv,
			events: "request0 usage0", requests: 1},
		{name: "overflow recovered", p: &provider{scale: 1.5, limit: size / 2}, budget: size / 2, in: conv,
			events: "request0 overflow0 request1 usage1", requests: 2},
		{name: "stream overflow recovered", p: &provider{scale: 1.5, limit: size / 2}, budget: size / 2, in: conv, stream: true,
			events: "request0 overflow0 request1 usage1", requests: 2},
		{name: "still too long", p: &provider{scale: 1, limit: size, stubborn: true}, budget: size, in: conv,
			events: "request0 overflow0 request1 overflow1 request2 overflow2 error2", want: ErrStillTooLong, requests: 3},
		{name: "nothing left to drop", p: &provider{scale: 3, limit: size / 12}, budget: size, in: agentTurns(1, 300),
			events: "request0 overflow0 error0", want: history.ErrCannotRecover, requests: 1},
		{name: "not an overflow", p: &provider{scale: 1, limit: size, reject: rateLimit}, budget: size, in: conv,
			events: "request0 error0", want: rateLimit, requests: 1},
		{name: "invalid message", p: &provider{scale: 1, limit: size}, budget: size, in: []*schema.Message{schema.UserMessage("a"), nil},
			events: "error0", want: ErrInvalidMessage},
		{name: "invalid pin", p: &provider{scale: 1, limit: size}, budget: size, in: conv, opts: []model.Option{TrimOptions(history.WithPin(3))},
			events: "error0", want: history.ErrInvalidOption},
		{name: "latest turn too large, sent all the same", p: &provider{scale: 1, limit: size}, budget: 200, in: agentTurns(1, 1000),
			events: "request0 usage0", requests: 1, tooLarge: true},
		{name: "bound tools", p: &provider{scale: 1, limit: size / 2}, budget: size / 2, in: conv, tools: bound,
			events: "request0 usage0", requests: 1},
		{name: "tools of the call", p: &provider{scale: 1, limit: size / 2}, budget: size / 2, in: conv,
			opts: []model.Option{model.WithTools(bound)}, events: "request0 usage0", requests: 1},
		{name: "tools of the call replace the bound ones", p: &provider{scale: 1, limit: size / 2}, budget: size / 2, in: conv,
			tools: []*schema.ToolInfo{bigTool("x", 30)}, opts: []model.Option{model.WithTools(bound)}, events: "request0 usage0", requests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec record
			var cal history.Calibration
			var m model.ToolCallingChatModel
			m, err := NewChatModel(&fakeModel{t: t, p: tt.p}, Config{Budget: tt.budget, Calibration: &cal, OnEvent: rec.add})
			if err != nil {
				t.Fatal(err)
			}
			if tt.tools != nil {
				if m, err = m.WithTools(tt.tools); err != nil {
					t.Fatal(err)
				}
			}
			before := adaptertest.JSON(t, tt.in)
			var reply *schema.Message
			if tt.stream {
				var sr *schema.StreamReader[*schema.Message]
				if sr, err = m.Stream(context.Background(), tt.in, tt.opts...); err == nil {
					reply = readAll(t, sr)
				}
			} else {
				reply, err = m.Generate(context.Background(), tt.in, tt.opts...)
			}
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if got := rec.types(); got != tt.events {
				t.Errorf("events %q, want %q", got, tt.events)
			}
			if len(tt.p.requests) != tt.requests {
				t.Fatalf("%d requests, want %d", len(tt.p.requests), tt.requests)
			}
			if adaptertest.JSON(t, tt.in) != before {
				t.Error("the input was modified")
			}
			var be *history.BudgetError
			if len(rec.events) > 0 && errors.As(rec.events[0].Err, &be) != tt.tooLarge {
				t.Errorf("first event's error %v", rec.events[0].Err)
			}
			for i, ev := range rec.events {
				if (ev.Type == EventError || ev.Type == EventOverflow) != (ev.Err != nil) && ev.Type != EventRequest {
					t.Errorf("event %d (%s) has error %v", i, ev.Type, ev.Err)
				}
				if ev.Stream != tt.stream {
					t.Errorf("event %d (%s): Stream %v", i, ev.Type, ev.Stream)
				}
			}
			if err != nil {
				if last := rec.events[len(rec.events)-1]; last.Err != err {
					t.Errorf("the error event holds %v, Generate returned %v", last.Err, err)
				}
				return
			}
			// The accepted request: what the provider counted was reported,
			// observed, and fits the provider's limit; the latest message
			// was sent, as the caller's pointer.
			sent := tt.p.requests[len(tt.p.requests)-1]
			n := tt.p.counts[len(tt.p.counts)-1]
			usage := rec.events[len(rec.events)-1]
			if usage.PromptTokens != n || reply.ResponseMeta.Usage.PromptTokens != n || n > tt.p.limit {
				t.Errorf("usage event %+v, provider counted %d (limit %d)", usage, n, tt.p.limit)
			}
			if _, _, _, ok := cal.Model(); !ok {
				t.Error("the calibration observed nothing")
			}
			if sent[len(sent)-1] != tt.in[len(tt.in)-1] {
				t.Error("the latest message was not sent as the caller's pointer")
			}
			wantTools := tt.tools
			if c := model.GetCommonOptions(nil, tt.opts...); c.Tools != nil {
				wantTools = c.Tools
			}
			if got := tt.p.tools[len(tt.p.tools)-1]; !slices.Equal(got, wantTools) {
				t.Errorf("the inner model sent %d tools, want %d", len(got), len(wantTools))
			}
			if over := Overhead(wantTools, nil); usage.Tokens != tokens(t, sent)+over || (usage.Attempt == 0 && usage.Tokens > tt.budget && !tt.tooLarge) {
				t.Errorf("request counted %d, messages %d + tools %d, budget %d", usage.Tokens, tokens(t, sent), over, tt.budget)
			}
			if trimmed := len(sent) < len(tt.in); trimmed != usage.Trimmed {
				t.Errorf("%d of %d messages sent, Trimmed %v", len(sent), len(tt.in), usage.Trimmed)
			}
		})
	}
}

// readAll receives every chunk of sr and returns their concatenation.
func readAll(t *testing.T, sr *schema.StreamReader[*schema.Message]) *schema.Message {
	t.Helper()
	defer sr.Close()
	var chunks []*schema.Message
	for {
		m, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, m)
	}
	m, err := schema.ConcatMessages(chunks)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestChatModelCalibrates: with a provider that counts 40% more than the
// heuristic, the first request near the limit overflows once; the
// calibration learns from the usage and the overflow, and the requests
// after it land under the limit without another overflow.
func TestChatModelCalibrates(t *testing.T) {
	run := func(cal *history.Calibration) (*record, Event) {
		p := &provider{scale: 1.4, limit: 3000}
		var rec record
		m, err := NewChatModel(&fakeModel{t: t, p: p}, Config{Budget: 3000, Calibration: cal, OnEvent: rec.add,
			Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}})
		if err != nil {
			t.Fatal(err)
		}
		full := []*schema.Message{schema.SystemMessage("You are an agent.")}
		for i := range 30 {
			full = append(full, agentTurns(i+1, 300)[1+4*i:]...)
			if _, err := m.Generate(context.Background(), full); err != nil {
				t.Fatalf("turn %d: %v", i, err)
			}
		}
		var last Event
		for _, ev := range rec.events {
			if ev.Type == EventUsage {
				last = ev
			}
		}
		return &rec, last
	}
	var cal history.Calibration
	rec, last := run(&cal)
	overflows := strings.Count(rec.types(), "overflow")
	scale, overhead, margin, _ := cal.Model()
	t.Logf("%d overflows; scale %.3f, overhead %.0f, margin %.0f; last request %d of 3000", overflows, scale, overhead, margin, last.PromptTokens)
	if overflows > 1 || scale < 1.3 || scale > 1.5 || last.PromptTokens < 3000*85/100 {
		t.Errorf("with a calibration: %d overflows, scale %.2f, last request %d of 3000", overflows, scale, last.PromptTokens)
	}
	// Without one, every request that reaches the budget overflows (and is
	// recovered).
	rec, _ = run(nil)
	if n := strings.Count(rec.types(), "overflow"); n < 10 || strings.Contains(rec.types(), "error") {
		t.Errorf("without a calibration: %d overflows: %s", n, rec.types())
	}
}

// TestChatModelPins: a message pinned with TrimOptions, by its index in
// the call's input, is sent on the first request and on every retry.
func TestChatModelPins(t *testing.T) {
	in := agentTurns(12, 300)
	size := tokens(t, in)
	p := &provider{scale: 2, limit: size / 4}
	m, err := NewChatModel(&fakeModel{t: t, p: p}, Config{Budget: size / 3})
	if err != nil {
		t.Fatal(err)
	}
	const pinned = 4 // turn 0's answer
	_, err = m.Generate(context.Background(), in, TrimOptions(history.WithPin(pinned)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.requests) < 2 {
		t.Fatalf("%d requests; the test needs a retry", len(p.requests))
	}
	for i, req := range p.requests {
		if !slices.Contains(req, in[pinned]) {
			t.Errorf("request %d lost the pinned message", i)
		}
	}
}

func TestNewChatModelErrors(t *testing.T) {
	inner := &fakeModel{t: t, p: &provider{scale: 1, limit: 100}}
	tests := []struct {
		name  string
		inner model.ToolCallingChatModel
		cfg   Config
		want  error // errors.Is, or nil for any error
	}{
		{name: "nil inner", cfg: Config{Budget: 100}},
		{name: "zero budget", inner: inner, cfg: Config{}, want: history.ErrInvalidBudget},
		{name: "negative overhead", inner: inner, cfg: Config{Budget: 100, Overhead: -1}},
		{name: "invalid option", inner: inner, cfg: Config{Budget: 100, Options: []history.Option{history.WithLowWater(2)}}, want: history.ErrInvalidOption},
		{name: "pins", inner: inner, cfg: Config{Budget: 100, Options: []history.Option{history.WithPin(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewChatModel(tt.inner, tt.cfg)
			if err == nil || m != nil || !strings.HasPrefix(err.Error(), "history/eino: ") || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("got %v, %v; want an error wrapping %v", m, err, tt.want)
			}
		})
	}
	if _, err := NewChatModel(inner, Config{Budget: 100}); err != nil {
		t.Errorf("a valid config: %v", err)
	}
}

// TestChatModelWithToolsError: an error of the inner model's WithTools is
// returned as it is, and the ChatModel it was called on is unchanged.
func TestChatModelWithToolsError(t *testing.T) {
	p := &provider{scale: 1, limit: 10000}
	m, err := NewChatModel(&fakeModel{t: t, p: p}, Config{Budget: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.WithTools(nil); err == nil || got != nil {
		t.Fatalf("got %v, %v", got, err)
	}
	withTools, err := m.WithTools([]*schema.ToolInfo{bigTool("a", 100)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withTools.Generate(context.Background(), agentTurns(1, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate(context.Background(), agentTurns(1, 10)); err != nil {
		t.Fatal(err)
	}
	if len(p.tools[0]) != 1 || p.tools[1] != nil {
		t.Errorf("tools sent: %d, then %d", len(p.tools[0]), len(p.tools[1]))
	}
	if m.GetType() != "Histrim" || m.IsCallbacksEnabled() {
		t.Errorf("type %q, callbacks %v for an inner model with neither", m.GetType(), m.IsCallbacksEnabled())
	}
}

// TestChatModelCounter: Config.Counter counts the messages and the tools;
// without it, a history.WithCounter in Options still counts the messages.
func TestChatModelCounter(t *testing.T) {
	bytes := history.CounterFunc(func(m history.Message) int { return len(m.Content) + 1 })
	in := agentTurns(2, 100)
	tools := []*schema.ToolInfo{bigTool("a", 100)}
	var sent []*schema.Message
	for _, tt := range []struct {
		name string
		cfg  Config
		want func() int
	}{
		{name: "Config.Counter", cfg: Config{Budget: 1 << 20, Counter: bytes},
			want: func() int { return history.Estimate(mustHistory(t, sent), bytes) + Overhead(tools, bytes) }},
		{name: "WithCounter in Options", cfg: Config{Budget: 1 << 20, Options: []history.Option{history.WithCounter(bytes)}},
			want: func() int { return history.Estimate(mustHistory(t, sent), bytes) + Overhead(tools, nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &provider{scale: 1, limit: 1 << 20}
			var got int
			tt.cfg.OnEvent = func(ev Event) {
				if ev.Type == EventRequest {
					got = ev.Tokens
				}
			}
			m, err := NewChatModel(&fakeModel{t: t, p: p}, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			bound, err := m.WithTools(tools)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bound.Generate(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			sent = p.requests[0]
			if want := tt.want(); got != want {
				t.Errorf("request counted %d, want %d", got, want)
			}
		})
	}
}

// TestChatModelConcurrent: one ChatModel and one Calibration serve several
// conversations at once (run with -race), each trimmed to the budget.
func TestChatModelConcurrent(t *testing.T) {
	p := &provider{scale: 1.2, limit: 2000}
	var cal history.Calibration
	var rec record
	m, err := NewChatModel(&fakeModel{t: t, p: p}, Config{Budget: 2000, Calibration: &cal, OnEvent: rec.add})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			full := []*schema.Message{schema.SystemMessage("sys")}
			for i := range 8 {
				full = append(full, agentTurns(i+1, 200+50*g)[1+4*i:]...)
				var err error
				if i%2 == 0 {
					_, err = m.Generate(context.Background(), full)
				} else {
					var sr *schema.StreamReader[*schema.Message]
					if sr, err = m.Stream(context.Background(), full); err == nil {
						for err == nil {
							_, err = sr.Recv()
						}
						sr.Close()
						if errors.Is(err, io.EOF) {
							err = nil
						}
					}
				}
				if err != nil {
					t.Errorf("conversation %d, turn %d: %v", g, i, err)
				}
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(rec.types(), "usage"); got != 32 {
		t.Errorf("%d usages observed, want 32", got)
	}
}

// nilStreamModel answers Stream with neither a stream nor an error.
type nilStreamModel struct{ fakeModel }

func (nilStreamModel) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, nil
}

// TestChatModelStreamNil: an inner model that returns (nil, nil) from Stream
// gets an error, not a reader that panics on its first Recv.
func TestChatModelStreamNil(t *testing.T) {
	var cal history.Calibration
	for _, cfg := range []Config{{Budget: 1000}, {Budget: 1000, Calibration: &cal}} {
		m, err := NewChatModel(&nilStreamModel{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sr, err := m.Stream(context.Background(), []*schema.Message{schema.UserMessage("hi")})
		if err == nil || sr != nil {
			t.Fatalf("Stream = %v, %v; want no reader and an error", sr, err)
		}
	}
}

// The agent loop of the issue: 50 user turns of 1 to 6 tool steps, 20
// tool schemas on every request, tool results of a few hundred words,
// through Eino's real OpenAI chat model (eino-ext) against an httptest
// server that speaks OpenAI's chat completions protocol and counts like a
// provider whose tokenizer differs from the heuristic (an
// adaptertest.Mode).
const (
	loopLimit = 12000 // the provider's window in TestAgentLoop, and the budget the runtime configures
	loopTools = 20
)

// reply is what the server answers next: tool calls, or a final text.
type reply struct {
	calls []schema.ToolCall
	text  string
}

// chatServer is the provider: it checks each request's pairing on the
// wire by OpenAI's rule (adaptertest.OpenAIPairing) and answers a broken
// one with OpenAI's 400; it decodes the messages into Eino's own type (the
// SDK's; its JSON names are OpenAI's), converts them with ToHistory, and
// counts and checks them through its adaptertest.Loop, with the tools JSON
// as received. Over the window it answers OpenAI's HTTP 400
// context_length_exceeded body with the numbers; otherwise the scripted
// reply, with usage.prompt_tokens reporting the count.
type chatServer struct {
	t    *testing.T
	loop *adaptertest.Loop

	mu        sync.Mutex
	next      reply
	toolsJSON string
}

func (s *chatServer) script(r reply) {
	s.mu.Lock()
	s.next = r
	s.mu.Unlock()
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/chat/completions" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	// The request as OpenAI's wire format has it. Its messages decode
	// straight into Eino's own type, whose JSON names are the wire's.
	var req struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Messages []*schema.Message `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	var wire struct {
		Messages []adaptertest.OpenAIWireMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		s.t.Errorf("server: request does not decode: %v", err)
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		s.t.Errorf("server: request does not decode: %v", err)
	}
	msgs := req.Messages

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.toolsJSON == "" {
		s.toolsJSON = string(req.Tools)
	}
	w.Header().Set("Content-Type", "application/json")
	hist := func() []history.Message {
		h, err := ToHistory(msgs)
		if err != nil {
			s.t.Errorf("server: %v", err)
		}
		return h
	}
	holds := func(text string) bool {
		for _, m := range msgs {
			if m.Role == schema.User && m.Content == text {
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
		var calls []map[string]any
		for i, c := range s.next.calls {
			calls = append(calls, map[string]any{"index": i, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}})
		}
		msg["tool_calls"], msg["content"], finish = calls, nil, "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": count, "completion_tokens": 20, "total_tokens": count + 20}
	if !req.Stream {
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	// Server-sent events: the message in one chunk, then the usage chunk
	// (stream_options.include_usage), then [DONE].
	w.Header().Set("Content-Type", "text/event-stream")
	for _, chunk := range []map[string]any{
		{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": msg, "finish_reason": finish}}},
		{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{}, "usage": usage},
	} {
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// loopToolInfos are the 20 tool schemas every request sends.
func loopToolInfos() []*schema.ToolInfo {
	tools := make([]*schema.ToolInfo, loopTools)
	for i := range tools {
		params := map[string]*schema.ParameterInfo{
			"path":  {Type: schema.String, Desc: "Path of the file or directory, relative to the workspace root.", Required: true},
			"limit": {Type: schema.Integer, Desc: "Largest number of lines or entries to return."},
		}
		if i%2 == 0 {
			params["pattern"] = &schema.ParameterInfo{Type: schema.String, Desc: "Regular expression (RE2 syntax) to match."}
		}
		tools[i] = &schema.ToolInfo{Name: fmt.Sprintf("tool_%02d", i),
			Desc:        fmt.Sprintf("Tool %d of the workspace: reads, searches or runs what its parameters name and returns its output as text. Use it when the task needs it.", i),
			ParamsOneOf: schema.NewParamsOneOfByParams(params)}
	}
	return tools
}

var loopVocabulary = strings.Fields(`func return err nil if else for range the value of a to in config handler
request response context error string int64 map slice pointer interface struct package import type
var const defer go select case switch default := == != { } ( ) // TODO: fix this later, see issue #1234
0 1 42 1024 "ok" "failed" log.Printf fmt.Errorf("wrap: %w", err) strings.TrimSpace bytes.Buffer`)

// words returns n pseudo-random words of code and prose.
func words(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			if i%12 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(loopVocabulary[rng.IntN(len(loopVocabulary))])
	}
	return b.String()
}

// loopStats are the client's figures of one loop besides what its
// adaptertest.Loop counts.
type loopStats struct {
	// accepted counts the accepted requests.
	accepted int
	// estErr[k] is the calibration's relative error predicting the
	// provider's count of the request after its k-th observation.
	estErr map[int]float64
	obs    int
}

// accept records an accepted request in st and l: reported is the
// provider's count, predicted the calibration's prediction of it before
// this observation (ok false before any).
func (s *loopStats) accept(l *adaptertest.Loop, reported int, trimmed bool, predicted float64, ok bool) {
	s.accepted++
	l.Accepted(trimmed, reported)
	if ok && (s.obs == 1 || s.obs == 3 || s.obs == 10) {
		s.estErr[s.obs] = math.Abs(predicted-float64(reported)) / float64(reported)
	}
	s.obs++
}

// predict returns the calibration's prediction of the provider's count of
// a request the Counter counts as sent.
func predict(cal *history.Calibration, sent int) (float64, bool) {
	scale, overhead, _, ok := cal.Model()
	return scale*float64(sent) + overhead, ok
}

// sendFunc sends the full history (trimming it first) and returns the
// model's reply.
type sendFunc func(ctx context.Context, full []*schema.Message) (*schema.Message, error)

// makeSender returns the sendFunc of a loop: l records what happens, the
// requests are trimmed to l.Budget with cal.
type makeSender func(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, cal *history.Calibration, st *loopStats) sendFunc

// manualSender binds the tools to Eino's OpenAI model, trims with Trim
// before every request, recovers with RecoverOverflow (attempts 1 and 2)
// and observes the usage, as a runtime would by hand.
func manualSender(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, cal *history.Calibration, st *loopStats) sendFunc {
	cm, err := cm.WithTools(tools)
	if err != nil {
		t.Fatal(err)
	}
	opts := []history.Option{history.WithCalibration(cal), history.WithOverhead(Overhead(tools, nil)),
		history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
	return func(ctx context.Context, full []*schema.Message) (*schema.Message, error) {
		send, res, err := Trim(full, l.Budget, opts...)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			return nil, err
		}
		for attempt := 1; ; attempt++ {
			pred, ok := predict(cal, res.TokensAfter)
			out, err := cm.Generate(ctx, send)
			if err == nil {
				p := promptTokens(out)
				st.accept(l, p, res.Trimmed || attempt > 1, pred, ok)
				cal.Observe(res.TokensAfter, p)
				return out, nil
			}
			if attempt > MaxRetries || !history.IsContextOverflow(err) {
				return nil, err
			}
			l.Rejected(attempt-1, res, cal)
			if send, res, err = RecoverOverflow(send, err, attempt, opts...); err != nil {
				return nil, err
			}
		}
	}
}

// wrapperSender sends through ChatModel, with the tools bound by
// WithTools, streaming every fourth request; a spy between the ChatModel
// and Eino's OpenAI model validates every request sent.
func wrapperSender(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, cal *history.Calibration, st *loopStats) sendFunc {
	return wrapper(Config{Budget: l.Budget, Calibration: cal,
		Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}})(t, l, cm, tools, cal, st)
}

// statefulSender is wrapperSender through a stateful ChatModel (its
// Trimmer with a low-water mark of 0.7), with the Calibration or without.
func statefulSender(calibrate bool) makeSender {
	return func(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, cal *history.Calibration, st *loopStats) sendFunc {
		cfg := Config{Budget: l.Budget, Stateful: true,
			Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(), history.WithLowWater(0.7)}}
		if calibrate {
			cfg.Calibration = cal
		}
		return wrapper(cfg)(t, l, cm, tools, cal, st)
	}
}

// wrapper is wrapperSender with cfg.
func wrapper(cfg Config) makeSender {
	return func(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, cal *history.Calibration, st *loopStats) sendFunc {
		return wrapped(t, l, cm, tools, cal, st, cfg)
	}
}

func wrapped(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, cal *history.Calibration, st *loopStats, cfg Config) sendFunc {
	var pred float64
	var predOK bool
	cfg.OnEvent = func(ev Event) {
		switch ev.Type {
		case EventRequest:
			pred, predOK = predict(cal, ev.Tokens)
		case EventUsage:
			st.accept(l, ev.PromptTokens, ev.Trimmed, pred, predOK)
		case EventOverflow:
			l.Rejected(ev.Attempt, history.Result{TokensAfter: ev.Tokens, Budget: ev.Budget}, cal)
		}
	}
	w, err := NewChatModel(&spy{t: t, inner: cm}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := w.WithTools(tools)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	return func(ctx context.Context, full []*schema.Message) (*schema.Message, error) {
		if n++; n%4 != 0 {
			return bound.Generate(ctx, full)
		}
		sr, err := bound.Stream(ctx, full)
		if err != nil {
			return nil, err
		}
		defer sr.Close()
		var chunks []*schema.Message
		for {
			m, err := sr.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			chunks = append(chunks, m)
		}
		return schema.ConcatMessages(chunks)
	}
}

// spy validates every request on its way to the inner model.
type spy struct {
	t     *testing.T
	inner model.ToolCallingChatModel
}

func (s *spy) Generate(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	if err := Validate(in); err != nil {
		s.t.Errorf("client: request breaks pairing: %v", err)
	}
	return s.inner.Generate(ctx, in, opts...)
}

func (s *spy) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	if err := Validate(in); err != nil {
		s.t.Errorf("client: request breaks pairing: %v", err)
	}
	return s.inner.Stream(ctx, in, opts...)
}

func (s *spy) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	inner, err := s.inner.WithTools(tools)
	if err != nil {
		return nil, err
	}
	return &spy{t: s.t, inner: inner}, nil
}

// TestAgentLoop runs the 50-turn agent loop for F = 1.3 (the provider
// counts 30% more than the heuristic) and F = 0.8, by hand (Trim,
// RecoverOverflow, Calibration.Observe) and through ChatModel.
func TestAgentLoop(t *testing.T) {
	// Each request is some 50 KB of JSON encoded by the SDK and decoded by
	// the server: collect garbage less often, for speed under -race.
	// (t.Cleanup, not defer: the parallel subtests run after this
	// function returns.)
	gc := debug.SetGCPercent(400)
	t.Cleanup(func() { debug.SetGCPercent(gc) })
	modes := []struct {
		name string
		make makeSender
	}{{"manual", manualSender}, {"ChatModel", wrapperSender}}
	for _, f := range []float64{1.3, 0.8} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("F=%.1f/%s", f, mode.name), func(t *testing.T) {
				t.Parallel() // each loop is CPU-bound (JSON through the SDK and the server): use the cores
				l := adaptertest.NewLoop("eino", adaptertest.Skew(f), loopLimit).RaceShort()
				l.MinWords, l.MaxWords = 250, 1150
				runLoop(t, l, mode.make)
				l.Check(t) // at most 1 overflow, no error, no violation, fill >= 85%
			})
		}
	}
}

// runLoop runs l.Turns user turns against a server that counts and checks
// every request through l, sending with the sender makeSender makes.
// Errors that would reach the caller are recorded in l, and the loop goes
// on with the next turn.
func runLoop(t *testing.T, l *adaptertest.Loop, makeSender makeSender) {
	srv := &chatServer{t: t, loop: l}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := context.Background()
	cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{BaseURL: hs.URL, APIKey: "test", Model: "gpt-4o", HTTPClient: hs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	tools := loopToolInfos()
	var cal history.Calibration
	st := &loopStats{estErr: map[int]float64{}}
	send := makeSender(t, l, cm, tools, &cal, st)

	rng := rand.New(rand.NewPCG(12, uint64(l.Mode.Text*10)))
	full := []*schema.Message{schema.SystemMessage("You are a coding agent. Use the tools to inspect the workspace, then answer.")}
	for turn := range l.Turns {
		task := fmt.Sprintf("Task %d: %s", turn, words(rng, 20+rng.IntN(40)))
		l.Turn(turn+1, task)
		full = append(full, schema.UserMessage(task))
		steps := 1 + rng.IntN(6)
		for step := 0; step <= steps; step++ {
			r := reply{text: fmt.Sprintf("Task %d is done: %s", turn, words(rng, 30))}
			if step < steps {
				r = reply{}
				for k := range 1 + step%2 {
					r.calls = append(r.calls, schema.ToolCall{ID: fmt.Sprintf("call_%d_%d_%d", turn, step, k), Type: "function",
						Function: schema.FunctionCall{Name: tools[rng.IntN(len(tools))].Name, Arguments: fmt.Sprintf(`{"path":"src/f%d.go"}`, rng.IntN(100))}})
				}
			}
			srv.script(r)
			out, err := send(ctx, full)
			if err != nil {
				l.Error(fmt.Errorf("step %d: %w", step, err))
				break
			}
			if len(out.ToolCalls) != len(r.calls) {
				t.Fatalf("turn %d, step %d: %d tool calls came back, %d scripted", turn, step, len(out.ToolCalls), len(r.calls))
			}
			full = append(full, out)
			for _, tc := range out.ToolCalls {
				n := l.MinWords + rng.IntN(l.MaxWords-l.MinWords+1)
				full = append(full, schema.ToolMessage(words(rng, n), tc.ID, schema.WithToolName(tc.Function.Name)))
			}
		}
	}

	// The tools were counted as they were sent.
	if got, want := Overhead(tools, history.CounterFunc(func(m history.Message) int { return len(m.Content) })), len(srv.toolsJSON); got != want {
		t.Errorf("Overhead encodes the tools in %d bytes, the server received %d", got, want)
	}
	ls := l.Stats()
	t.Logf("%s: %d requests, %d trimmed, %d overflows, mean provider prompt of trimmed requests %.1f%% of %d; "+
		"estimate error after 1/3/10 observations %.1f%% / %.1f%% / %.1f%%; %d messages in the transcript",
		l.Mode.Name, ls.Requests, ls.Trimmed, ls.Overflows, 100*ls.Fill(), l.Window, 100*st.estErr[1], 100*st.estErr[3], 100*st.estErr[10], len(full))
	if ls.Requests != st.accepted+ls.Overflows+ls.Violations {
		t.Errorf("the server saw %d requests, the client %d accepted, %d overflows and %d pairing violations", ls.Requests, st.accepted, ls.Overflows, ls.Violations)
	}
}

// TestChatModelRealOverflow: the HTTP 400 context_length_exceeded that the
// server answers reaches the ChatModel as eino-ext's own error, which it
// recognises, recovers from and retries, through Generate and Stream; the
// calibration records the overflow's sizes.
func TestChatModelRealOverflow(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			l := adaptertest.NewLoop("eino", adaptertest.Skew(1.5), 4000)
			l.Turn(12, "task 11")
			srv := &chatServer{t: t, loop: l}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			ctx := context.Background()
			cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{BaseURL: hs.URL, APIKey: "test", Model: "gpt-4o", HTTPClient: hs.Client()})
			if err != nil {
				t.Fatal(err)
			}
			var cal history.Calibration
			var rec record
			m, err := NewChatModel(cm, Config{Budget: 4000, Calibration: &cal, OnEvent: rec.add})
			if err != nil {
				t.Fatal(err)
			}
			in := agentTurns(12, 300)
			srv.script(reply{text: "done"})
			var out *schema.Message
			if stream {
				var sr *schema.StreamReader[*schema.Message]
				if sr, err = m.Stream(ctx, in); err == nil {
					out = readAll(t, sr)
				}
			} else {
				out, err = m.Generate(ctx, in)
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := l.Stats(); rec.types() != "request0 overflow0 request1 usage1" || s.Overflows != 1 || s.Missing != 0 || out.Content != "done" {
				t.Fatalf("events %q, %d overflows, %d requests without the task, reply %q", rec.types(), s.Overflows, s.Missing, out.Content)
			}
			var oe *einoopenai.APIError
			if !errors.As(rec.events[1].Err, &oe) || oe.HTTPStatusCode != http.StatusBadRequest {
				t.Errorf("the overflow is %T %v, want eino-ext's *openai.APIError with status 400", rec.events[1].Err, rec.events[1].Err)
			}
			if ov, ok := history.ParseOverflow(rec.events[1].Err); !ok || ov.Limit != 4000 || ov.Used <= 4000 {
				t.Errorf("ParseOverflow: %+v, %v", ov, ok)
			}
			if _, _, _, ok := cal.Model(); !ok {
				t.Error("the calibration learned nothing")
			}
		})
	}
}

// TestStatefulLoop runs the loop through a stateful ChatModel against a
// provider counting 1.3 times the library's estimate, with and without a
// Calibration, at a budget of the window and of 1.25 times it (issues 23
// and 33: at most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "eino", 12_000, func(t *testing.T, l *adaptertest.Loop, calibrate bool) {
		runLoop(t, l, statefulSender(calibrate))
	})
}
