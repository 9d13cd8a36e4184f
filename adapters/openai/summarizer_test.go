package openai_test

import (
	"context"
	"testing"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestSummarizer runs the Summarizer with openai-go's client against a
// local Chat Completions server (adaptertest.Summary).
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[openai.ChatCompletionMessageParamUnion]{
		Path:   "/chat/completions",
		List:   "messages",
		Caps:   []string{"max_completion_tokens"},
		Reply:  adaptertest.ChatReply,
		Errors: adaptertest.OpenAIErrors,
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			return hopenai.NewSummarizer(summaryClient(url), cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[openai.ChatCompletionMessageParamUnion] {
			return hopenai.NewTrimmer(opts...)
		},
		Open:      summaryOpening,
		Task:      1,
		User:      func(s string) openai.ChatCompletionMessageParamUnion { return openai.UserMessage(s) },
		Assistant: func(s string) openai.ChatCompletionMessageParamUnion { return openai.AssistantMessage(s) },
		ToHistory: hopenai.ToHistory,
		Send: func(ctx context.Context, s adaptertest.Summarizer, url string, msgs []openai.ChatCompletionMessageParamUnion) (string, error) {
			params := openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: msgs, Tools: summaryTools}
			s.(*hopenai.Summarizer).Sent(params)
			client := summaryClient(url)
			c, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return "", err
			}
			return c.Choices[0].Message.Content, nil
		},
	}
	c.Run(t)
}

func summaryClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

// summaryTools is the conversation's one tool.
var summaryTools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:       "read_file",
	Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
})}

// summaryOpening is the opening of the tests' conversation: a system
// prompt, the task, a call of read_file, its result, an answer.
func summaryOpening() []openai.ChatCompletionMessageParamUnion {
	call := openai.AssistantMessage("")
	call.OfAssistant.Content = openai.ChatCompletionAssistantMessageParamContentUnion{}
	call.OfAssistant.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_file", Arguments: `{"path":"main.go"}`},
	}}}
	return []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."),
		openai.UserMessage(adaptertest.SummaryTask),
		call,
		openai.ToolMessage(adaptertest.SummaryFile, "call_1"),
		openai.AssistantMessage("main.go is an empty program."),
	}
}
