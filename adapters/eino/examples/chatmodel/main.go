// Command chatmodel runs an agent loop on Eino's OpenAI chat model
// (eino-ext) through the door of the histrim Eino adapter: one
// eino.Trimmer per conversation; before every request its Fit trims the
// whole transcript for the model named (gpt-4o: its window and output room
// from the models table), leaving room for the tools the call passes
// (model.WithTools); when the endpoint rejects a request as too long, the
// Trimmer's RecoverOverflow trims below what it said and the loop retries;
// the usage of every reply goes to Observe, which feeds the Calibration
// the Trimmer owns. The endpoint is a local httptest server that speaks
// OpenAI's chat completions protocol, counts 30% more tokens than the
// library's heuristic and rejects requests over its 3,000-token window, so
// the example runs offline.
//
// The window of 3,000 tokens is the endpoint's, far below gpt-4o's
// 128,000, so that six tasks outgrow it offline: the first request over
// it is rejected with OpenAI's 400 (which states the window), and the
// Trimmer keeps the later requests below it, as for a deployment whose
// window is smaller than the table's. (eino.ChatModel, the adapter's
// wrapper for graphs and agents that call the model themselves, takes its
// budget in eino.Config.Budget rather than from the model's name.)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/eino"
)

const window = 3000

// endpoint answers like OpenAI: an HTTP 400 context_length_exceeded when
// the request is over the window, otherwise a tool call (or, when the
// latest message is a tool result of the third step, a final answer) with
// the usage it counted.
func endpoint(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []*schema.Message `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hist, _ := eino.ToHistory(req.Messages)
	used := int(math.Ceil(1.3*float64(history.Estimate(hist, nil)))) + history.EstimateText(string(req.Tools))
	w.Header().Set("Content-Type", "application/json")
	if used > window {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, window, used)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	msg := map[string]any{"role": "assistant", "content": "Done: the file looks fine."}
	if last.Role == schema.User || !strings.HasSuffix(last.ToolCallID, "_2") {
		step := 0
		if last.Role == schema.Tool {
			fmt.Sscanf(last.ToolCallID[strings.LastIndexByte(last.ToolCallID, '_')+1:], "%d", &step)
			step++
		}
		id := fmt.Sprintf("call_%d_%d", len(req.Messages), step)
		msg = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": `{"path":"main.go"}`}}}}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": used, "completion_tokens": 10, "total_tokens": used + 10}})
}

func main() {
	srv := httptest.NewServer(http.HandlerFunc(endpoint))
	defer srv.Close()
	ctx := context.Background()

	const name = "gpt-4o" // a name the models table knows: the door's budget is its window
	chat, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{
		BaseURL: srv.URL, APIKey: "offline", Model: name, HTTPClient: srv.Client()})
	if err != nil {
		log.Fatal(err)
	}
	// The tools go with every call (model.WithTools): Fit counts them.
	callOpts := []model.Option{model.WithTools([]*schema.ToolInfo{{Name: "read_file", Desc: "Reads a file of the workspace.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"path": {Type: schema.String, Desc: "file to read", Required: true}})}})}
	tr := eino.NewTrimmer() // one per conversation

	// The runtime keeps the whole transcript; Fit returns a trimmed view
	// of it and never modifies it.
	full := []*schema.Message{schema.SystemMessage("You are a code reviewer. Read the files, then answer.")}
	requests, trims, overflows := 0, 0, 0
	for task := 1; task <= 6; task++ {
		full = append(full, schema.UserMessage(fmt.Sprintf("Review package %d.", task)))
		for {
			send, res, err := tr.Fit(ctx, name, full, callOpts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				log.Fatal(err) // an unknown model (models.ErrUnknownModel), invalid messages
			}
			requests++
			reply, err := chat.Generate(ctx, send, callOpts...)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				if send, res, rerr = tr.RecoverOverflow(full, err, attempt); rerr != nil {
					break // not an overflow, or nothing left to drop: err stands
				}
				overflows++
				fmt.Printf("  overflow: the endpoint rejected the request; resending %d of %d messages\n", len(send), len(full))
				requests++
				reply, err = chat.Generate(ctx, send, callOpts...)
			}
			if err != nil {
				log.Fatal(err)
			}
			if reply.ResponseMeta != nil {
				tr.Observe(reply.ResponseMeta.Usage) // what the endpoint counted
			}
			if res.Trimmed {
				trims++
			}
			full = append(full, reply)
			if len(reply.ToolCalls) == 0 {
				fmt.Printf("task %d: %q after %d prompt tokens (window %d)\n",
					task, reply.Content, reply.ResponseMeta.Usage.PromptTokens, window)
				break
			}
			for _, tc := range reply.ToolCalls {
				full = append(full, schema.ToolMessage(strings.Repeat("func handler() error { return nil }\n", 40),
					tc.ID, schema.WithToolName(tc.Function.Name)))
			}
		}
	}
	fmt.Printf("transcript: %d messages; requests: %d, trimmed: %d, rejected for length and recovered: %d\n",
		len(full), requests, trims, overflows)
}
