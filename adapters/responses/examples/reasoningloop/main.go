// Command reasoningloop runs an agent loop on the OpenAI Responses API with
// a reasoning model (o4-mini), fitting its input items before every
// request through the door of the histrim Responses adapter: one Trimmer
// per conversation, Fit(ctx, params) before each request, the Trimmer's
// RecoverOverflow when the API answers context_length_exceeded, and
// Observe(resp.Usage) after each response. A reasoning item stays with
// the item after it. It runs offline: the "API" is an httptest server it
// starts itself, which answers like a reasoning model (a reasoning item,
// then two parallel tool calls or a message) and, like the real API,
// rejects an input that separates a reasoning item from the item after
// it, or that exceeds its context window.
//
// The door takes the window from the models table: 200,000 tokens for
// o4-mini. The server enforces 5,000 (in tokens of 4 bytes of input JSON),
// so that ten tasks outgrow it offline, and says so in the real API's
// words, without numbers: the first request over it is rejected, the
// Trimmer recovers (trims below what was refused and resends) and keeps
// the later requests below it, as it does for a deployment whose window
// is smaller than the table's.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/histrim/history"
	hresponses "github.com/histrim/history/adapters/responses"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// window is the server's context window, in tokens of 4 bytes of input
// JSON: far below o4-mini's 200,000 (see above).
const window = 5_000

type item = responses.ResponseInputItemUnionParam

func main() {
	srv := httptest.NewServer(&model{follows: map[string]string{}})
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-offline"), option.WithMaxRetries(0))
	ctx := context.Background()

	// The request as the runtime keeps it: the model, the reply's room,
	// and the whole transcript as its input items.
	params := responses.ResponseNewParams{Model: "o4-mini", MaxOutputTokens: openai.Int(1024)}
	transcript := []item{responses.ResponseInputItemParamOfMessage("You are a coding agent.", responses.EasyInputMessageRoleDeveloper)}
	tr := hresponses.NewTrimmer() // one per conversation
	requests, trims, overflows, largest := 0, 0, 0, 0
	for task := 1; task <= 10; task++ {
		transcript = append(transcript, responses.ResponseInputItemParamOfMessage(
			"Task "+strconv.Itoa(task)+": find and fix the failing test.", responses.EasyInputMessageRoleUser))
		for {
			// Fit a view of the full transcript before every request.
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: transcript}
			send, res, err := tr.Fit(ctx, params)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				fail(err) // an unknown model (models.ErrUnknownModel), invalid items
			}
			requests++
			resp, err := client.Responses.New(ctx, send)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				var items []item
				if items, res, rerr = tr.RecoverOverflow(transcript, err, attempt); rerr != nil {
					break // not an overflow, or nothing left to drop: err stands
				}
				overflows++
				fmt.Printf("task %d: rejected for length (%d items); resending %d\n", task, len(send.Input.OfInputItemList), len(items))
				send.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
				requests++
				resp, err = client.Responses.New(ctx, send)
			}
			if err != nil {
				fail(fmt.Errorf("task %d: %w", task, err))
			}
			tr.Observe(resp.Usage) // what the API counted: the Trimmer's Calibration learns it
			largest = max(largest, int(resp.Usage.InputTokens))
			if res.Trimmed {
				trims++
			}
			out := outputItems(resp)
			transcript = append(transcript, out...)
			calls := toolOutputs(out)
			if len(calls) == 0 {
				break
			}
			transcript = append(transcript, calls...)
		}
	}
	fmt.Printf("%d requests, %d of them trimmed, %d rejected for length and recovered; the largest accepted input: %d of the server's %d tokens\n",
		requests, trims, overflows, largest, window)
	fmt.Printf("transcript: %d items, valid: %v\n", len(transcript), hresponses.Validate(transcript) == nil)
}

// outputItems returns the response's output as input items, as an
// application keeps them: reasoning items and messages through their
// ToParam methods, other items as their raw JSON.
func outputItems(resp *responses.Response) []item {
	var out []item
	for _, o := range resp.Output {
		switch o.Type {
		case "reasoning":
			r := o.AsReasoning().ToParam()
			out = append(out, item{OfReasoning: &r})
		case "message":
			m := o.AsMessage().ToParam()
			out = append(out, item{OfOutputMessage: &m})
		default:
			out = append(out, param.Override[item](json.RawMessage(o.RawJSON())))
		}
	}
	return out
}

// toolOutputs runs the function calls among out: each reads a file.
func toolOutputs(out []item) []item {
	var res []item
	for _, o := range out {
		var call struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		if b, err := json.Marshal(o); err == nil && json.Unmarshal(b, &call) == nil && call.Type == "function_call" {
			res = append(res, responses.ResponseInputItemParamOfFunctionCallOutput(call.CallID,
				strings.Repeat("func TestParse(t *testing.T) { /* "+call.CallID+" */ }\n", 30)))
		}
	}
	return res
}

// model is the offline stand-in for the API.
type model struct {
	mu      sync.Mutex
	n       int
	follows map[string]string // reasoning id -> the item that followed it
}

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(body, &req)
	type wire struct{ Type, ID, Role string }
	in := make([]wire, len(req.Input))
	size := 0
	for i, raw := range req.Input {
		_ = json.Unmarshal(raw, &in[i])
		size += len(raw) / 4
	}
	reject := func(body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, body)
	}
	for i, it := range in {
		if next, ok := m.follows[it.ID]; ok && (i+1 == len(in) || in[i+1].ID != next) {
			reject(`{"error":{"message":"Item '` + it.ID + `' of type 'reasoning' was provided without its required following item.","type":"invalid_request_error","param":"input","code":null}}`)
			return
		}
	}
	if size > window {
		reject(`{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`)
		return
	}
	m.n++
	n := strconv.Itoa(m.n)
	output := []map[string]any{{"type": "reasoning", "id": "rs_" + n, "summary": []any{}, "encrypted_content": "gAAAAB" + strings.Repeat("k9", 150)}}
	if last := in[len(in)-1]; last.Role == "user" {
		for k := range 2 {
			output = append(output, map[string]any{"type": "function_call", "id": "fc_" + n + "_" + strconv.Itoa(k),
				"call_id": "call_" + n + "_" + strconv.Itoa(k), "name": "read_file", "arguments": `{"path":"parse_test.go"}`, "status": "completed"})
		}
	} else {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "Fixed.", "annotations": []any{}}}})
	}
	m.follows["rs_"+n] = output[1]["id"].(string)
	b, _ := json.Marshal(map[string]any{"id": "resp_" + n, "object": "response", "created_at": 0, "model": "o4-mini", "status": "completed",
		"output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": size, "output_tokens": 50, "total_tokens": size + 50,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 30}}})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "reasoningloop:", err)
	os.Exit(1)
}
