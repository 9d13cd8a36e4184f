package goopenai_test

import (
	"context"
	"testing"

	"github.com/histrim/history"
	hgoopenai "github.com/histrim/history/adapters/goopenai"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
	openai "github.com/sashabaranov/go-openai"
)

// TestSummarizer runs the Summarizer with go-openai's client against a
// local Chat Completions server (adaptertest.Summary), under the
// adapter's own Trimmer, as docs/summaries.md wires it.
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[openai.ChatCompletionMessage]{
		Path:   "/chat/completions",
		List:   "messages",
		Caps:   []string{"max_completion_tokens"},
		Reply:  adaptertest.ChatReply,
		Errors: adaptertest.OpenAIErrors,
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			return hgoopenai.NewSummarizer(summaryClient(url), cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[openai.ChatCompletionMessage] {
			return hgoopenai.NewTrimmer(opts...)
		},
		Open: func() []openai.ChatCompletionMessage {
			return []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleSystem, Content: "You are a coding agent."},
				{Role: openai.ChatMessageRoleUser, Content: adaptertest.SummaryTask},
				{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"main.go"}`}}}},
				{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Content: adaptertest.SummaryFile},
				{Role: openai.ChatMessageRoleAssistant, Content: "main.go is an empty program."},
			}
		},
		Task: 1,
		User: func(s string) openai.ChatCompletionMessage {
			return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: s}
		},
		Assistant: func(s string) openai.ChatCompletionMessage {
			return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: s}
		},
		ToHistory: hgoopenai.ToHistory,
		Send: func(ctx context.Context, s adaptertest.Summarizer, url string, msgs []openai.ChatCompletionMessage) (string, error) {
			req := openai.ChatCompletionRequest{Model: "gpt-4.1", Messages: msgs, Tools: []openai.Tool{{Type: openai.ToolTypeFunction,
				Function: &openai.FunctionDefinition{Name: "read_file", Parameters: map[string]any{"type": "object"}}}}}
			s.(*hgoopenai.Summarizer).Sent(req)
			r, err := summaryClient(url).CreateChatCompletion(ctx, req)
			if err != nil {
				return "", err
			}
			return r.Choices[0].Message.Content, nil
		},
	}
	c.Run(t)
}

func summaryClient(url string) *openai.Client {
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = url + "/v1"
	return openai.NewClientWithConfig(cfg)
}
