package beta_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/histrim/history"
	hbeta "github.com/histrim/history/adapters/anthropicv2/beta"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
)

// summarySystem is the system prompt of the tests' conversation, with a
// cache breakpoint as runtimes set one.
var summarySystem = []anthropic.BetaTextBlockParam{{Text: "You are a coding agent.", CacheControl: anthropic.NewBetaCacheControlEphemeralParam()}}

func userMsg(blocks ...anthropic.BetaContentBlockParamUnion) anthropic.BetaMessageParam {
	return anthropic.NewBetaUserMessage(blocks...)
}

func assistantMsg(blocks ...anthropic.BetaContentBlockParamUnion) anthropic.BetaMessageParam {
	return anthropic.BetaMessageParam{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: blocks}}
}

// TestSummarizer runs the beta Summarizer with anthropic-sdk-go v2's
// client (client.Beta.Messages.New) against a local Messages API server
// (adaptertest.Summary).
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[anthropic.BetaMessageParam]{
		Path:   "/v1/messages",
		List:   "messages",
		Caps:   []string{"max_tokens"},
		Reply:  messageReply,
		Errors: anthropicErrors,
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			return hbeta.NewSummarizer(summaryClient(url), cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[anthropic.BetaMessageParam] {
			return hbeta.NewTrimmer(summarySystem, opts...)
		},
		Open: func() []anthropic.BetaMessageParam {
			return []anthropic.BetaMessageParam{
				userMsg(anthropic.NewBetaTextBlock(adaptertest.SummaryTask)),
				assistantMsg(anthropic.NewBetaToolUseBlock("toolu_1", map[string]any{"path": "main.go"}, "read_file")),
				userMsg(anthropic.NewBetaToolResultBlock("toolu_1", adaptertest.SummaryFile, false)),
				assistantMsg(anthropic.NewBetaTextBlock("main.go is an empty program.")),
			}
		},
		User:      func(s string) anthropic.BetaMessageParam { return userMsg(anthropic.NewBetaTextBlock(s)) },
		Assistant: func(s string) anthropic.BetaMessageParam { return assistantMsg(anthropic.NewBetaTextBlock(s)) },
		ToHistory: func(msgs []anthropic.BetaMessageParam) ([]history.Message, error) { return hbeta.ToHistory(nil, msgs) },
		Send: func(ctx context.Context, s adaptertest.Summarizer, url string, msgs []anthropic.BetaMessageParam) (string, error) {
			params := anthropic.BetaMessageNewParams{
				Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 4096, System: summarySystem, Messages: msgs,
				Tools: []anthropic.BetaToolUnionParam{anthropic.BetaToolUnionParamOfTool(anthropic.BetaToolInputSchemaParam{
					Properties: map[string]any{"path": map[string]any{"type": "string"}}}, "read_file")},
			}
			s.(*hbeta.Summarizer).Sent(params)
			client := summaryClient(url)
			m, err := client.Beta.Messages.New(ctx, params)
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
	b, _ := json.Marshal(map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
		"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 40, "output_tokens": 40, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 0}})
	return string(b)
}
