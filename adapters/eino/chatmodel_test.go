package eino

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
