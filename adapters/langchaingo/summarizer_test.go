package langchaingo_test

import (
	"context"
	"testing"

	"github.com/histrim/history"
	hlangchaingo "github.com/histrim/history/adapters/langchaingo"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

// TestSummarizer runs the Summarizer through LangChainGo's OpenAI model
// against a local Chat Completions server (adaptertest.Summary).
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[llms.MessageContent]{
		Path:   "/chat/completions",
		List:   "messages",
		Caps:   []string{"max_completion_tokens"},
		Reply:  adaptertest.ChatReply,
		Errors: adaptertest.OpenAIErrors,
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			llm, err := openai.New(openai.WithBaseURL(url), openai.WithToken("sk-test"), openai.WithModel("gpt-4.1"))
			if err != nil {
				t.Fatal(err)
			}
			return hlangchaingo.NewSummarizer(llm, cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[llms.MessageContent] {
			return hlangchaingo.NewTrimmer(opts...)
		},
		Open: func() []llms.MessageContent {
			return []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeSystem, "You are a coding agent."),
				llms.TextParts(llms.ChatMessageTypeHuman, adaptertest.SummaryTask),
				{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "call_1", Type: "function",
					FunctionCall: &llms.FunctionCall{Name: "read_file", Arguments: `{"path":"main.go"}`}}}},
				{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "call_1", Name: "read_file",
					Content: adaptertest.SummaryFile}}},
				llms.TextParts(llms.ChatMessageTypeAI, "main.go is an empty program."),
			}
		},
		Task:      1,
		User:      func(s string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeHuman, s) },
		Assistant: func(s string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeAI, s) },
		ToHistory: hlangchaingo.ToHistory,
		Send: func(ctx context.Context, s adaptertest.Summarizer, _ string, msgs []llms.MessageContent) (string, error) {
			r, err := s.(*hlangchaingo.Summarizer).Model().GenerateContent(ctx, msgs, llms.WithTemperature(0.2),
				llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "read_file", Description: "Reads a file.",
					Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}}}))
			if err != nil {
				return "", err
			}
			return r.Choices[0].Content, nil
		},
	}
	c.Run(t)
}
