// Command chatmodel runs an agent loop through eino.ChatModel, which wraps
// Eino's OpenAI chat model: before every request it trims the history to
// the budget, leaving room for the bound tools; it feeds the usage of every
// reply to a Calibration, and retries when the endpoint rejects a request
// as too long. The endpoint is a local httptest server that speaks OpenAI's
// chat completions protocol, counts 30% more tokens than the library's
// heuristic and rejects requests over its 3,000-token window, so the
// example runs offline.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
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

	openaiModel, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{
		BaseURL: srv.URL, APIKey: "offline", Model: "gpt-4o", HTTPClient: srv.Client()})
	if err != nil {
		log.Fatal(err)
	}
	var cal history.Calibration // one per model; save it with json.Marshal to keep it across restarts
	var overflows, trims atomic.Int32
	cm, err := eino.NewChatModel(openaiModel, eino.Config{
		Budget:      window,
		Calibration: &cal,
		Options: []history.Option{
			history.WithElision(history.ElideOptions{}),
			history.WithStepTrim(),
			history.WithOnTrim(func(history.Event) { trims.Add(1) }),
		},
		OnEvent: func(ev eino.Event) {
			if ev.Type == eino.EventOverflow {
				overflows.Add(1)
				fmt.Printf("  overflow: the endpoint rejected %d tokens (our count); retrying\n", ev.Tokens)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// The tools bound here count against the budget on every request.
	agent, err := cm.WithTools([]*schema.ToolInfo{{Name: "read_file", Desc: "Reads a file of the workspace.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"path": {Type: schema.String, Desc: "file to read", Required: true}})}})
	if err != nil {
		log.Fatal(err)
	}

	// The runtime keeps the whole transcript; the ChatModel sends a trimmed
	// view of it and never modifies it.
	full := []*schema.Message{schema.SystemMessage("You are a code reviewer. Read the files, then answer.")}
	for task := 1; task <= 6; task++ {
		full = append(full, schema.UserMessage(fmt.Sprintf("Review package %d.", task)))
		for {
			reply, err := agent.Generate(ctx, full)
			if err != nil {
				log.Fatal(err)
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
	scale, overhead, _, _ := cal.Model()
	fmt.Printf("transcript: %d messages; trims: %d; overflows: %d; calibrated: provider = %.2f x ours + %.0f\n",
		len(full), trims.Load(), overflows.Load(), scale, overhead)
}
