package langchaingo

// A 50-turn agent loop through Model around LangChainGo's real OpenAI
// provider (llms/openai), against an httptest server that speaks OpenAI's
// chat-completions wire format, counts each request as a provider whose
// tokenizer differs from the Heuristic by a factor F, and rejects what
// exceeds its window with OpenAI's own overflow status and body.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

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
	if reject := adaptertest.OpenAIPairing(wire.Messages); reject != "" {
		s.loop.Unpaired(reject)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, reject)
		return
	}
	problem := func(format string, args ...any) {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
	msgs, err := native(req.Messages)
	if err != nil {
		problem("decode: %v", err)
	}
	hist, err := ToHistory(msgs)
	if err != nil {
		problem("convert: %v", err)
	}
	holds := func(text string) bool {
		for _, m := range req.Messages {
			if t, _ := m.text(); m.Role == "user" && t == text {
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

// runLoop runs the agent loop through a Model (Budget = l.Window, with a
// Calibration) against a provider that counts and checks every request
// through l. Errors that reach the caller are recorded in l, and the loop
// goes on with the next turn. kind "trim" is that Model; "trimmer" a
// stateful one (its Trimmer with a low-water mark of 0.7) without the
// Calibration, "trimmer+cal" with it.
func runLoop(t *testing.T, l *adaptertest.Loop, kind string) loopStats {
	t.Helper()
	srv := &loopServer{loop: l}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	llm, err := openai.New(openai.WithBaseURL(hs.URL), openai.WithToken("x"), openai.WithModel("gpt-4o-mini"))
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
		Budget:      l.Window,
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
			l := adaptertest.NewLoop("langchaingo", adaptertest.Skew(f), limit)
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
// Calibration (issue 23: at most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	for _, kind := range []string{"trimmer", "trimmer+cal"} {
		l := adaptertest.NewLoop("langchaingo", adaptertest.Skew(1.3), 12_000)
		st := runLoop(t, l, kind)
		adaptertest.CheckStateful(t, l, kind, max(st.overflows-1, 0))
	}
}
