package responses_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/histrim/history"
	hresponses "github.com/histrim/history/adapters/responses"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// TestSummarizer runs the Summarizer with openai-go's client against a
// local Responses server (adaptertest.Summary).
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[hresponses.Item]{
		Path:  "/responses",
		List:  "input",
		Caps:  []string{"max_output_tokens"},
		Reply: responseReply,
		Errors: slices.Concat(adaptertest.OpenAIErrors, []adaptertest.ErrorAnswer{{
			// anomalyco/opencode#6071: the Responses API's overflow.
			Name: "400 context_length_exceeded, Responses", Status: 400,
			Body: `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`,
		}}),
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			return hresponses.NewSummarizer(summaryClient(url), cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[hresponses.Item] {
			return hresponses.NewTrimmer(opts...)
		},
		Open: func() []hresponses.Item {
			return []hresponses.Item{
				responses.ResponseInputItemParamOfMessage(adaptertest.SummaryTask, responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfFunctionCall(`{"path":"main.go"}`, "call_1", "read_file"),
				responses.ResponseInputItemParamOfFunctionCallOutput("call_1", adaptertest.SummaryFile),
				responses.ResponseInputItemParamOfMessage("main.go is an empty program.", responses.EasyInputMessageRoleAssistant),
			}
		},
		User: func(s string) hresponses.Item {
			return responses.ResponseInputItemParamOfMessage(s, responses.EasyInputMessageRoleUser)
		},
		Assistant: func(s string) hresponses.Item {
			return responses.ResponseInputItemParamOfMessage(s, responses.EasyInputMessageRoleAssistant)
		},
		ToHistory: hresponses.ToHistory,
		Send: func(ctx context.Context, s adaptertest.Summarizer, url string, items []hresponses.Item) (string, error) {
			params := responses.ResponseNewParams{
				Model:        "gpt-5",
				Instructions: param.NewOpt("You are a coding agent."),
				Input:        responses.ResponseNewParamsInputUnion{OfInputItemList: items},
				Tools: []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "read_file",
					Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}}},
			}
			s.(*hresponses.Summarizer).Sent(params)
			client := summaryClient(url)
			r, err := client.Responses.New(ctx, params)
			if err != nil {
				return "", err
			}
			return r.OutputText(), nil
		},
	}
	c.Run(t)
}

func summaryClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

// responseReply is a response whose output is a message holding text;
// cut: incomplete at max_output_tokens.
func responseReply(text string, cut bool) string {
	status, incomplete := "completed", any(nil)
	if cut {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	b, _ := json.Marshal(map[string]any{"id": "resp_1", "object": "response", "created_at": 1700000000, "model": "gpt-5",
		"status": status, "incomplete_details": incomplete, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"output": []any{map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": status,
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}},
		"usage": map[string]any{"input_tokens": 900, "output_tokens": 40, "total_tokens": 940,
			"input_tokens_details": map[string]any{"cached_tokens": 768}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}})
	return string(b)
}
