// Command openailoop runs an agent loop on LangChainGo's OpenAI provider
// through the door of the histrim LangChainGo adapter: one
// langchaingo.Trimmer per conversation; before every GenerateContent call
// its Fit trims the full history for the model named (gpt-4o-mini: its
// window and output room from the models table), the tools of the call
// (llms.WithTools) counted; after an overflow its RecoverOverflow trims
// below what the server said and the loop retries; Observe(resp) feeds
// the usage each response reports to the Calibration the Trimmer owns.
// The provider talks to a local httptest server that speaks OpenAI's
// chat-completions wire format, counts 25% more tokens than the library's
// Heuristic, and answers a request over its 6,000-token window with
// OpenAI's overflow error. The loop keeps its full history and never cuts
// it.
//
// The window of 6,000 tokens is the server's, far below gpt-4o-mini's
// 128,000, so that eight tasks outgrow it offline: the first request over
// it is rejected (the 400 states the window), and the Trimmer keeps the
// later requests below it, as for a deployment whose window is smaller
// than the table's. (langchaingo.Model, the adapter's wrapper for chains
// and agents that call the model themselves, takes its budget in
// langchaingo.Config.Budget rather than from the model's name.)
package main

import (
	"context"
	"encoding/json"
	"errors"
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
	const name = "gpt-4o-mini" // a name the models table knows: the door's budget is its window
	llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("offline"), openai.WithModel(name))
	if err != nil {
		log.Fatal(err)
	}
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name: "read_file", Description: "Read a file of the repository.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
	}}}
	callOpts := []llms.CallOption{llms.WithTools(tools)} // Fit counts the tools
	tr := langchaingo.NewTrimmer()                       // one per conversation

	ctx := context.Background()
	var requests, trimmed, overflows, largest int
	full := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You are a coding agent.")}
	for turn := 1; turn <= 8; turn++ {
		full = append(full, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("Task %d: explain main.go.", turn)))
		for {
			send, res, err := tr.Fit(ctx, name, full, callOpts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				log.Fatal(err) // an unknown model (models.ErrUnknownModel), invalid messages
			}
			requests++
			resp, err := llm.GenerateContent(ctx, send, callOpts...)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				if send, res, rerr = tr.RecoverOverflow(full, err, attempt); rerr != nil {
					break // not an overflow, or nothing left to drop: err stands
				}
				overflows++
				requests++
				resp, err = llm.GenerateContent(ctx, send, callOpts...)
			}
			if err != nil {
				log.Fatal(err)
			}
			tr.Observe(resp) // what the server counted
			if res.Trimmed {
				trimmed++
				largest = max(largest, langchaingo.PromptTokens(resp))
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
	fmt.Printf("%d requests, %d trimmed, %d overflows recovered; largest trimmed prompt %d of %d tokens\n", requests, trimmed, overflows, largest, window)
	if overflows > 1 || largest > window {
		log.Fatal("the window was not respected")
	}
}
