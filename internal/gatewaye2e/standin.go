package gatewaye2e

// The stand-ins of the three APIs the npm clients speak, for the
// end-to-end test (Run): each counts a request through an
// adaptertest.Loop (the latest user task present, the window), applies
// the API's tool-pairing rule and rejects an overflow with the API's real
// HTTP 400 body; the model is loopserver's script. Chat Completions is
// loopserver.OpenAI and Messages is anthropicserver.Server, streamed here
// when asked; Responses is written here. Besides the APIs, a stand-in
// serves the script to the node clients: /_turn?n=N (opens user turn N
// and returns its task), /_tool?id=ID (a tool's result), /_tools.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/anthropicserver"
	"github.com/histrim/history/internal/loopserver"
)

// standin is the stand-in of the three APIs for one loop.
type standin struct {
	loop  *adaptertest.Loop
	dense bool // id-dense tool results instead of code-like ones
	chat  *loopserver.OpenAI
	msgs  *anthropicserver.Server
	resp  *responsesAPI
	// toolRuns counts the tool results the client fetched.
	mu       sync.Mutex
	toolRuns int
}

func newStandin(l *adaptertest.Loop, dense bool) *standin {
	return &standin{
		loop:  l,
		dense: dense,
		chat:  &loopserver.OpenAI{Judge: l, Window: l.Window},
		msgs:  &anthropicserver.Server{Backend: "standin", Window: l.Window, Judge: l},
		resp:  &responsesAPI{judge: l, window: l.Window},
	}
}

func (s *standin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions":
		s.chat.ServeHTTP(w, r)
	case "/v1/messages":
		s.messages(w, r)
	case "/v1/responses":
		s.resp.ServeHTTP(w, r)
	case "/_turn":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		task := loopserver.Task(n)
		s.loop.Turn(n, task)
		_, _ = io.WriteString(w, task)
	case "/_tool":
		s.mu.Lock()
		s.toolRuns++
		s.mu.Unlock()
		_, _ = io.WriteString(w, s.toolResult(r.URL.Query().Get("id")))
	case "/_tools":
		var tools []map[string]any
		for _, name := range loopserver.ToolNames {
			tools = append(tools, map[string]any{"name": name, "description": loopserver.ToolDescription(name), "parameters": loopserver.ToolParameters()})
		}
		b, _ := json.Marshal(map[string]any{"system": loopserver.SystemPrompt, "tools": tools})
		_, _ = w.Write(b)
	default:
		http.Error(w, "no such endpoint", http.StatusNotFound)
	}
}

// toolResult is the result of the tool call id: code-like text, or
// id-dense lines (hashes, UUIDs, numbers: what tokenizes worst).
func (s *standin) toolResult(id string) string {
	if !s.dense {
		return loopserver.ToolResult(id, s.loop.Words)
	}
	words := strings.Fields(loopserver.ToolResult(id, s.loop.Words))
	var b strings.Builder
	h := uint32(2166136261)
	for i, w := range words {
		for j := 0; j < len(w); j++ {
			h = (h ^ uint32(w[j])) * 16777619
		}
		if i%6 == 0 && i > 0 {
			b.WriteByte('\n')
		} else if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%08x-%04x-%04x", h, h>>7&0xffff, (h^uint32(i))&0xffff)
	}
	return b.String()
}

// messages answers the Messages API through anthropicserver.Server, and
// turns its answer into the API's events when the request is streamed.
func (s *standin) messages(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !req.Stream {
		s.msgs.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	s.msgs.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	var msg map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &msg)
	content, _ := msg["content"].([]any)
	usage, _ := msg["usage"].(map[string]any)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	// message_start carries the input's usage whole (cache reads and
	// writes with it), as the API sends it; output_tokens comes last.
	startUsage := map[string]any{}
	for k, v := range usage {
		startUsage[k] = v
	}
	startUsage["output_tokens"] = 1
	start["usage"] = startUsage
	ev("message_start", map[string]any{"message": start})
	for i, c := range content {
		blk, _ := c.(map[string]any)
		switch blk["type"] {
		case "tool_use":
			in, _ := json.Marshal(blk["input"])
			ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": map[string]any{}}})
			ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		default:
			ev("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			ev("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": blk["text"]}})
		}
		ev("content_block_stop", map[string]any{"index": i})
	}
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": msg["stop_reason"], "stop_sequence": nil}, "usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	ev("message_stop", map[string]any{})
}

// ResponsesOverflowBody is the Responses API's HTTP 400 for an input over
// the model's window.
const responsesOverflowBody = `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`

// responsesAPI is the Responses API's stand-in: stateless requests (the
// whole input every time), streamed or not.
type responsesAPI struct {
	judge  loopserver.Judge
	window int

	mu       sync.Mutex
	accepted int
}

// responsesItem is what the stand-in reads of an input item.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// text returns the text of a content or an output: a string, or the text
// of its parts.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func responsesError(w http.ResponseWriter, msg, param string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": param, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

func (a *responsesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model        string          `json:"model"`
		Input        json.RawMessage `json:"input"`
		Instructions *string         `json:"instructions"`
		Tools        json.RawMessage `json:"tools"`
		Stream       bool            `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		responsesError(w, "We could not parse the JSON body of your request.", "")
		return
	}
	var items []responsesItem
	if s := ""; json.Unmarshal(req.Input, &s) == nil {
		items = []responsesItem{{Type: "message", Role: "user", Content: req.Input}}
	} else if err := json.Unmarshal(req.Input, &items); err != nil {
		responsesError(w, "Invalid type for 'input'.", "input")
		return
	}
	var hist []history.Message
	if req.Instructions != nil && *req.Instructions != "" {
		hist = append(hist, history.Message{Role: history.RoleSystem, Content: *req.Instructions})
	}
	open := map[string]bool{}
	for i, it := range items {
		switch it.Type {
		case "function_call":
			open[it.CallID] = true
			call := history.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if n := len(hist); n > 0 && hist[n-1].Role == history.RoleAssistant && len(hist[n-1].ToolCalls) > 0 {
				hist[n-1].ToolCalls = append(hist[n-1].ToolCalls, call)
			} else {
				hist = append(hist, history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{call}})
			}
		case "function_call_output":
			if !open[it.CallID] {
				why := "No tool call found for function call output with call_id " + it.CallID + "."
				a.judge.Unpaired(why)
				responsesError(w, why, "input")
				return
			}
			delete(open, it.CallID)
			hist = append(hist, history.Message{Role: history.RoleTool, ToolCallID: it.CallID, Content: text(it.Output)})
		case "reasoning":
		case "message", "":
			role := history.RoleUser
			switch it.Role {
			case "assistant":
				role = history.RoleAssistant
			case "system", "developer":
				role = history.RoleSystem
			}
			hist = append(hist, history.Message{Role: role, Content: text(it.Content)})
		default:
			responsesError(w, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'message', 'function_call', 'function_call_output' and 'reasoning'.", it.Type), "input["+strconv.Itoa(i)+"].type")
			return
		}
	}
	for id := range open {
		why := "No tool output found for function call " + id + "."
		a.judge.Unpaired(why)
		responsesError(w, why, "input")
		return
	}
	tools := string(req.Tools)
	if tools == "null" {
		tools = ""
	}
	prompt, fits := a.judge.Receive(hist, tools, func(t string) bool {
		for _, m := range hist {
			if m.Role == history.RoleUser && m.Content == t {
				return true
			}
		}
		return false
	})
	if !fits {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, responsesOverflowBody)
		return
	}
	a.mu.Lock()
	a.accepted++
	n := strconv.Itoa(a.accepted)
	a.mu.Unlock()

	reply := loopserver.Play(hist)
	var output []map[string]any
	for k, c := range reply.Calls {
		output = append(output, map[string]any{"type": "function_call", "id": "fc_" + n + "_" + strconv.Itoa(k), "call_id": c.ID,
			"name": c.Name, "arguments": c.Arguments, "status": "completed"})
	}
	if len(reply.Calls) == 0 {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
	}
	out := 12 + 20*len(reply.Calls)
	resp := map[string]any{
		"id": "resp_" + n, "object": "response", "created_at": 1700000000, "status": "completed", "model": req.Model,
		"output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "error": nil,
		"incomplete_details": nil, "instructions": nil, "metadata": map[string]any{}, "temperature": 1.0, "top_p": 1.0,
		"truncation": "disabled", "previous_response_id": nil, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"usage": map[string]any{"input_tokens": prompt, "output_tokens": out, "total_tokens": prompt + out,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}},
	}
	if !req.Stream {
		b, _ := json.Marshal(resp)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	seq := 0
	ev := func(typ string, v map[string]any) {
		v["type"], v["sequence_number"] = typ, seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	progress := map[string]any{}
	for k, v := range resp {
		progress[k] = v
	}
	progress["status"], progress["output"], progress["usage"] = "in_progress", []any{}, nil
	ev("response.created", map[string]any{"response": progress})
	ev("response.in_progress", map[string]any{"response": progress})
	for i, item := range output {
		if item["type"] == "function_call" {
			added := map[string]any{}
			for k, v := range item {
				added[k] = v
			}
			added["arguments"], added["status"] = "", "in_progress"
			ev("response.output_item.added", map[string]any{"output_index": i, "item": added})
			ev("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": item["id"], "delta": item["arguments"]})
			ev("response.function_call_arguments.done", map[string]any{"output_index": i, "item_id": item["id"], "arguments": item["arguments"]})
		} else {
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"type": "message", "id": item["id"], "role": "assistant", "status": "in_progress", "content": []any{}}})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			ev("response.content_part.added", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0, "part": part})
			ev("response.output_text.delta", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0, "delta": reply.Text})
			ev("response.output_text.done", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0, "text": reply.Text})
			ev("response.content_part.done", map[string]any{"output_index": i, "item_id": item["id"], "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	ev("response.completed", map[string]any{"response": resp})
}
