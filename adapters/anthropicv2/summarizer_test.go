package anthropicv2_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropicv2"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
)

// summarySystem is the system prompt of the tests' conversation, with a
// cache breakpoint as runtimes set one.
var summarySystem = []anthropic.TextBlockParam{{Text: "You are a coding agent.", CacheControl: anthropic.NewCacheControlEphemeralParam()}}

// summaryTool is the tool of the tests' requests.
var summaryTool = []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
	Properties: map[string]any{"path": map[string]any{"type": "string"}}}, "read_file")}

// TestSummarizer runs the Summarizer with anthropic-sdk-go v2's client
// against a local Messages API server (adaptertest.Summary).
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[anthropic.MessageParam]{
		Path:   "/v1/messages",
		List:   "messages",
		Caps:   []string{"max_tokens"},
		Reply:  messageReply,
		Errors: anthropicErrors,
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			return hanthropic.NewSummarizer(summaryClient(url), cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[anthropic.MessageParam] {
			return hanthropic.NewTrimmer(summarySystem, opts...)
		},
		Open: func() []anthropic.MessageParam {
			return []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock(adaptertest.SummaryTask)),
				anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", map[string]any{"path": "main.go"}, "read_file")),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", adaptertest.SummaryFile, false)),
				anthropic.NewAssistantMessage(anthropic.NewTextBlock("main.go is an empty program.")),
			}
		},
		User:      func(s string) anthropic.MessageParam { return anthropic.NewUserMessage(anthropic.NewTextBlock(s)) },
		Assistant: func(s string) anthropic.MessageParam { return anthropic.NewAssistantMessage(anthropic.NewTextBlock(s)) },
		ToHistory: func(msgs []anthropic.MessageParam) ([]history.Message, error) { return hanthropic.ToHistory(nil, msgs) },
		Send: func(ctx context.Context, s adaptertest.Summarizer, url string, msgs []anthropic.MessageParam) (string, error) {
			params := anthropic.MessageNewParams{
				Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 4096, System: summarySystem, Messages: msgs, Tools: summaryTool,
			}
			s.(*hanthropic.Summarizer).Sent(params)
			client := summaryClient(url)
			m, err := client.Messages.New(ctx, params)
			if err != nil {
				return "", err
			}
			return m.Content[0].Text, nil
		},
	}
	c.Run(t)
}

// anthropicErrors are the API's answers to a request it refuses, each
// from the source its comment names (the v1 adapter's test has the same).
var anthropicErrors = []adaptertest.ErrorAnswer{
	// anthropics/claude-code#12186. The summariser then sends the plain
	// form, which the API refuses too.
	{Name: "400 prompt is too long", Status: http.StatusBadRequest,
		Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"},"request_id":"req_011CVQe1dLrGNMJyE1ghG1av"}`},
	// anthropics/claude-code#5184.
	{Name: "529 overloaded_error", Status: 529,
		Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
	// logancyang/obsidian-copilot#2327.
	{Name: "429 input tokens per minute", Status: http.StatusTooManyRequests,
		Body: `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 30,000 input tokens per minute (org: 5456025a-920d-4fae-83df-eb142ce029c1, model: claude-sonnet-4-20250514). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://claude.com/contact-sales to discuss your options for a rate limit increase."},"request_id":"req_011CZRtHe9vmeRRMu6G4rMhJ"}`},
	// anthropics/claude-code#67734: Cloudflare in front of the API.
	{Name: "502 from Cloudflare", Status: http.StatusBadGateway, ContentType: "text/html",
		Body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"},
}

func summaryClient(url string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
}

// messageReply is a message holding text; cut: it stopped at max_tokens.
func messageReply(text string, cut bool) string {
	stop := "end_turn"
	if cut {
		stop = "max_tokens"
	}
	return messageStopped(text, stop)
}

// messageStopped is a message holding text that stopped for stop.
func messageStopped(text, stop string) string {
	b, _ := json.Marshal(map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
		"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 40, "output_tokens": 40, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0}})
	return string(b)
}

// recorder is a local Messages API that answers every request with a
// message holding text that stopped for stop, and keeps the bodies.
type recorder struct {
	stop string

	mu     sync.Mutex
	bodies [][]byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, messageStopped("Task: the parser.", r.stop))
}

// compacted is a request whose messages begin with a compaction block, as
// a client sends it back after a server compaction (through its JSON: the
// GA types do not model it), then two turns.
func compacted() anthropic.MessageNewParams {
	block := param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(
		`{"type":"compaction","content":"The user asked for a JSON parser; lexer.go is written.","encrypted_content":"enc-1==","signature":"sig-1","tool_changes":[]}`))
	return anthropic.MessageNewParams{
		Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 4096, System: summarySystem, Tools: summaryTool,
		Thinking: anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
		Messages: []anthropic.MessageParam{
			anthropic.NewAssistantMessage(block),
			anthropic.NewUserMessage(anthropic.NewTextBlock("Now write the parser for objects, arrays and strings.")),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("parser.go handles objects, arrays and strings.")),
			anthropic.NewUserMessage(anthropic.NewTextBlock("Add numbers next.")),
		},
	}
}

// TestSummarizerCompacted: a last request that begins with a compaction
// block is a prefix like any other: the summary request repeats its
// messages byte for byte, the compaction block first, appends the
// instruction, and with adaptive thinking keeps the thinking setting and
// the request's max_tokens (above the reply's cap).
func TestSummarizerCompacted(t *testing.T) {
	rec := &recorder{stop: "end_turn"}
	ts := httptest.NewServer(rec)
	defer ts.Close()
	sum := hanthropic.NewSummarizer(summaryClient(ts.URL), hanthropic.SummarizerConfig{ReplyTokens: 1000})
	last := compacted()
	sum.Sent(last)
	hist, err := hanthropic.ToHistory(nil, last.Messages)
	if err != nil {
		t.Fatal(err)
	}
	if hist[0].Kind != history.KindCompaction {
		t.Fatalf("the compaction block converts to kind %q", hist[0].Kind)
	}
	if _, err := sum.Summarize(context.Background(), hist[1:3], nil); err != nil {
		t.Fatal(err)
	}
	if len(rec.bodies) != 1 {
		t.Fatalf("%d requests", len(rec.bodies))
	}
	var sent, want struct {
		MaxTokens int64             `json:"max_tokens"`
		Thinking  json.RawMessage   `json:"thinking"`
		System    json.RawMessage   `json:"system"`
		Messages  []json.RawMessage `json:"messages"`
	}
	lastJSON, _ := json.Marshal(last)
	if err := json.Unmarshal(lastJSON, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rec.bodies[0], &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Messages) != len(want.Messages)+1 {
		t.Fatalf("the summary request sends %d messages, want the last request's %d plus the instruction: %s", len(sent.Messages), len(want.Messages), rec.bodies[0])
	}
	for i := range want.Messages {
		if string(sent.Messages[i]) != string(want.Messages[i]) {
			t.Errorf("message %d: sent %s, want %s", i, sent.Messages[i], want.Messages[i])
		}
	}
	if !strings.Contains(string(sent.Messages[0]), `"type":"compaction"`) {
		t.Errorf("the compaction block is not first: %s", sent.Messages[0])
	}
	if ins := string(sent.Messages[len(want.Messages)]); !strings.Contains(ins, "Pause the task") || !strings.Contains(ins, `"role":"user"`) {
		t.Errorf("the appended message is not the instruction: %s", ins)
	}
	if string(sent.Thinking) != string(want.Thinking) || string(sent.System) != string(want.System) {
		t.Errorf("thinking %s and system %s changed: want %s and %s", sent.Thinking, sent.System, want.Thinking, want.System)
	}
	if sent.MaxTokens != 4096 {
		t.Errorf("max_tokens %d; want the last request's 4096 (adaptive thinking draws on it, and it is above the cap 1000)", sent.MaxTokens)
	}
}

// TestSummarizerCut: a reply the API cut short, at max_tokens or at the
// end of the model's context window, is an error (the Trimmer falls back
// to its breadcrumb); one that ended its turn is the summary.
func TestSummarizerCut(t *testing.T) {
	for _, tt := range []struct {
		stop string
		cut  bool
	}{{"end_turn", false}, {"max_tokens", true}, {"model_context_window_exceeded", true}} {
		ts := httptest.NewServer(&recorder{stop: tt.stop})
		sum := hanthropic.NewSummarizer(summaryClient(ts.URL), hanthropic.SummarizerConfig{})
		last := compacted()
		sum.Sent(last)
		hist, err := hanthropic.ToHistory(nil, last.Messages)
		if err != nil {
			t.Fatal(err)
		}
		m, err := sum.Summarize(context.Background(), hist[1:3], nil)
		ts.Close()
		if (err != nil) != tt.cut || (!tt.cut && !strings.Contains(m.Content+partsText(m), "Task: the parser.")) {
			t.Errorf("stop_reason %s: summary %+v, error %v; want an error: %v", tt.stop, m, err, tt.cut)
		}
	}
}

// partsText returns the text of m's parts, joined.
func partsText(m history.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
