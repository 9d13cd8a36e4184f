package anthropic_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
)

// summarySystem is the system prompt of the tests' conversation, with a
// cache breakpoint as runtimes set one.
var summarySystem = []anthropic.TextBlockParam{{Text: "You are a coding agent.", CacheControl: anthropic.NewCacheControlEphemeralParam()}}

// TestSummarizer runs the Summarizer with anthropic-sdk-go's client
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
				Model: "claude-sonnet-4-5", MaxTokens: 4096, System: summarySystem, Messages: msgs,
				Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
					Properties: map[string]any{"path": map[string]any{"type": "string"}}}, "read_file")},
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
// from the source its comment names.
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
	b, _ := json.Marshal(map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 40, "output_tokens": 40, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0}})
	return string(b)
}
