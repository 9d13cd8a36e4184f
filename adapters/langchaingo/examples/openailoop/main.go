// Command openailoop runs an agent loop through the LangChainGo adapter's
// Model wrapped around LangChainGo's OpenAI provider. The provider talks
// to a local httptest server that speaks OpenAI's chat-completions wire
// format, counts 25% more tokens than the library's Heuristic, and answers
// a request over its 6,000-token window with OpenAI's overflow error. The
// loop keeps its full history and never trims it itself: the Model trims
// every request (tools included), calibrates on the usage each response
// reports, and would retry after an overflow.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/langchaingo"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

const window = 6000

// server answers like OpenAI: a tool call on odd requests and a text
// answer on even ones, or a 400 context_length_exceeded when the request
// counts more than the window.
func server() *httptest.Server {
	n := 0
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
			Tools json.RawMessage `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var hist []history.Message
		for _, m := range req.Messages {
			text, _ := m.Content.(string)
			hist = append(hist, history.Message{Role: history.Role(m.Role), Content: text})
		}
		prompt := int(math.Ceil(1.25*float64(history.Estimate(hist, nil)))) + history.EstimateText(string(req.Tools))
		w.Header().Set("Content-Type", "application/json")
		if prompt > window {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, window, prompt)
			return
		}
		n++
		msg := map[string]any{"role": "assistant", "content": "Here is what I found. " + strings.Repeat("Details follow. ", 20)}
		if n%2 == 1 {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", n), "type": "function",
				"function": map[string]any{"name": "read_file", "arguments": `{"path":"main.go"}`}}}}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": 30, "total_tokens": prompt + 30},
		})
	}))
}

func main() {
	srv := server()
	defer srv.Close()
	llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("offline"), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		log.Fatal(err)
	}
	var requests, trimmed, overflows, largest int
	model := langchaingo.NewModel(llm, langchaingo.Config{
		Budget:      window,
		Options:     []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()},
		Calibration: &history.Calibration{},
		OnEvent: func(ev langchaingo.Event) {
			requests++
			if ev.Overflow {
				overflows++
			}
			if ev.Err == nil && ev.Result.Trimmed {
				trimmed++
				largest = max(largest, ev.PromptTokens)
			}
		},
	})
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name: "read_file", Description: "Read a file of the repository.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
	}}}

	ctx := context.Background()
	full := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You are a coding agent.")}
	for turn := 1; turn <= 8; turn++ {
		full = append(full, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("Task %d: explain main.go.", turn)))
		for {
			resp, err := model.GenerateContent(ctx, full, llms.WithTools(tools))
			if err != nil {
				log.Fatal(err)
			}
			c := resp.Choices[0]
			if len(c.ToolCalls) == 0 {
				full = append(full, llms.TextParts(llms.ChatMessageTypeAI, c.Content))
				break
			}
			tc := c.ToolCalls[0]
			full = append(full,
				llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{tc}},
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
					ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: strings.Repeat("func main() { run(os.Args) }\n", 90)}}})
		}
		hist, _ := langchaingo.ToHistory(full)
		fmt.Printf("task %d done: full history %5d tokens, %d requests so far\n", turn, history.Estimate(hist, nil), requests)
	}
	fmt.Printf("%d requests, %d trimmed, %d overflows; largest trimmed prompt %d of %d tokens\n", requests, trimmed, overflows, largest, window)
	if overflows > 1 || largest > window {
		log.Fatal("the window was not respected")
	}
}
