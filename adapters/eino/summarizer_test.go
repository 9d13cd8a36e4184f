package eino_test

import (
	"context"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	"github.com/histrim/history"
	heino "github.com/histrim/history/adapters/eino"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
	orderedmap "github.com/wk8/go-ordered-map/v2"
)

// TestSummarizer runs the Summarizer through Eino's OpenAI chat model
// (eino-ext) against a local Chat Completions server
// (adaptertest.Summary).
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[*schema.Message]{
		Path:   "/chat/completions",
		List:   "messages",
		Caps:   []string{"max_tokens"},
		Reply:  adaptertest.ChatReply,
		Errors: adaptertest.OpenAIErrors,
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			return heino.NewSummarizer(chatModel(t, url), cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[*schema.Message] {
			return heino.NewTrimmer(opts...)
		},
		Open: func() []*schema.Message {
			return []*schema.Message{
				schema.SystemMessage("You are a coding agent."),
				schema.UserMessage(adaptertest.SummaryTask),
				schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Type: "function",
					Function: schema.FunctionCall{Name: "read_file", Arguments: `{"path":"main.go"}`}}}),
				schema.ToolMessage(adaptertest.SummaryFile, "call_1"),
				schema.AssistantMessage("main.go is an empty program.", nil),
			}
		},
		Task:      1,
		User:      schema.UserMessage,
		Assistant: func(s string) *schema.Message { return schema.AssistantMessage(s, nil) },
		ToHistory: heino.ToHistory,
		Send: func(ctx context.Context, s adaptertest.Summarizer, _ string, msgs []*schema.Message) (string, error) {
			cm, err := s.(*heino.Summarizer).ChatModel().WithTools(summaryTools())
			if err != nil {
				return "", err
			}
			m, err := cm.Generate(ctx, msgs, model.WithTemperature(0.2))
			if err != nil {
				return "", err
			}
			return m.Content, nil
		},
	}
	c.Run(t)
}

// chatModel returns Eino's OpenAI chat model, sending to url.
func chatModel(t *testing.T, url string) model.ToolCallingChatModel {
	cm, err := einoopenai.NewChatModel(context.Background(), &einoopenai.ChatModelConfig{BaseURL: url, APIKey: "test", Model: "gpt-4.1"})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// summaryTools is the conversation's one tool.
func summaryTools() []*schema.ToolInfo {
	props := orderedmap.New[string, *jsonschema.Schema]()
	props.Set("path", &jsonschema.Schema{Type: "string"})
	return []*schema.ToolInfo{{Name: "read_file", Desc: "Reads a file.",
		ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&jsonschema.Schema{Type: "object", Properties: props})}}
}
