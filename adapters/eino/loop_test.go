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
	"strings"
	"sync"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

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
	if reject := adaptertest.OpenAIPairing(wire.Messages); reject != "" {
		s.loop.Unpaired(reject)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, reject)
		return
	}
	hist, err := ToHistory(msgs)
	if err != nil {
		s.t.Errorf("server: %v", err)
	}
	holds := func(text string) bool {
		for _, m := range msgs {
			if m.Role == schema.User && m.Content == text {
				return true
			}
		}
		return false
	}
	count, fits := s.loop.Receive(hist, string(req.Tools), holds)
	if !fits {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, s.loop.Window, count)
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
// requests are trimmed to l.Window with cal.
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
		send, res, err := Trim(full, l.Window, opts...)
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
	return wrapper(Config{Budget: l.Window, Calibration: cal,
		Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}})(t, l, cm, tools, cal, st)
}

// statefulSender is wrapperSender through a stateful ChatModel (its
// Trimmer with a low-water mark of 0.7), with the Calibration or without.
func statefulSender(calibrate bool) makeSender {
	return func(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, cal *history.Calibration, st *loopStats) sendFunc {
		cfg := Config{Budget: l.Window, Stateful: true,
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
				l := adaptertest.NewLoop("eino", adaptertest.Skew(f), loopLimit)
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
// Calibration (issue 23: at most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	for _, calibrate := range []bool{false, true} {
		l := adaptertest.NewLoop("eino", adaptertest.Skew(1.3), 12_000)
		runLoop(t, l, statefulSender(calibrate))
		adaptertest.CheckStateful(t, l, map[bool]string{false: "trimmer", true: "trimmer+cal"}[calibrate], max(l.Stats().Overflows-1, 0))
	}
}
