package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/histrim/history"
)

// The OpenAI chat-completions wire format, as much of it as the loop uses.
type (
	wireRequest struct {
		Model    string        `json:"model"`
		Messages []wireMessage `json:"messages"`
	}
	wireMessage struct {
		Role       string         `json:"role"`
		Content    *string        `json:"content"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	wireResponse struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Choices []wireChoice `json:"choices"`
		Usage   wireUsage    `json:"usage"`
	}
	wireChoice struct {
		Index        int         `json:"index"`
		Message      wireMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	}
	wireUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	wireErrorBody struct {
		Error wireError `json:"error"`
	}
	wireError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
)

// FakeProvider is a local stand-in for an OpenAI-compatible chat endpoint.
//
// It counts a request's tokens its own way (Factor times the library's
// Heuristic estimate plus Overhead for the tool schemas it would inject),
// so the runtime's count underestimates it, and rejects requests above
// Limit with OpenAI's context_length_exceeded error, alternating between the
// chat-completions message that states the sizes and the newer one that does
// not. It rejects broken tool pairing with OpenAI's 400s. Otherwise it plays
// a tool-heavy model: a user message asking for "calls=N parallel=P" gets N
// tool calls, P at a time, and then a final answer.
type FakeProvider struct {
	Limit    int
	Factor   float64
	Overhead int

	mu    sync.Mutex
	stats ProviderStats
}

// ProviderStats counts what the provider saw.
type ProviderStats struct {
	Requests, Accepted, LengthRejections, PairingRejections int
}

// Stats returns a snapshot of the counters.
func (p *FakeProvider) Stats() ProviderStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

var callsRe = regexp.MustCompile(`calls=(\d+) parallel=(\d+)`)

func (p *FakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "invalid_request_error", "", "")
		return
	}
	p.mu.Lock()
	p.stats.Requests++
	p.mu.Unlock()

	if msg := checkPairing(req.Messages); msg != "" {
		p.mu.Lock()
		p.stats.PairingRejections++
		p.mu.Unlock()
		writeError(w, http.StatusBadRequest, msg, "invalid_request_error", "messages", "")
		return
	}

	msgs := fromWire(req.Messages)
	n := int(float64(history.Estimate(msgs, history.Heuristic()))*p.Factor) + p.Overhead
	if n > p.Limit {
		p.mu.Lock()
		p.stats.LengthRejections++
		quiet := p.stats.LengthRejections%2 == 0
		p.mu.Unlock()
		// The two real shapes of OpenAI's length error (see docs/overflow.md).
		msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", p.Limit, n)
		if quiet {
			msg = "Your input exceeds the context window of this model. Please adjust your input and try again."
		}
		writeError(w, http.StatusBadRequest, msg, "invalid_request_error", "messages", "context_length_exceeded")
		return
	}
	p.mu.Lock()
	p.stats.Accepted++
	id := p.stats.Accepted
	p.mu.Unlock()

	reply := p.play(req.Messages, id)
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(wireResponse{
		ID:      "chatcmpl-" + strconv.Itoa(id),
		Object:  "chat.completion",
		Choices: []wireChoice{{Message: reply, FinishReason: finish}},
		Usage:   wireUsage{PromptTokens: n, CompletionTokens: 20, TotalTokens: n + 20},
	})
}

// play decides the model's next message from the latest user request and
// the tool results that followed it.
func (p *FakeProvider) play(msgs []wireMessage, id int) wireMessage {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && msgs[i].Content != nil && callsRe.MatchString(*msgs[i].Content) {
			last = i
			break
		}
	}
	calls, parallel, done := 0, 1, 0
	if last >= 0 {
		m := callsRe.FindStringSubmatch(*msgs[last].Content)
		calls, _ = strconv.Atoi(m[1])
		parallel, _ = strconv.Atoi(m[2])
		for _, m := range msgs[last+1:] {
			if m.Role == "tool" {
				done++
			}
		}
	}
	if done >= calls {
		text := fmt.Sprintf("Done: %d tool results read.", done)
		return wireMessage{Role: "assistant", Content: &text}
	}
	out := wireMessage{Role: "assistant"}
	for j := 0; j < parallel && done+j < calls; j++ {
		out.ToolCalls = append(out.ToolCalls, wireToolCall{
			ID:       fmt.Sprintf("call_%d_%d", id, j),
			Type:     "function",
			Function: wireFunction{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/file_%d_%d.go"}`, id, j)},
		})
	}
	return out
}

// checkPairing applies OpenAI's tool-message rules and returns its error
// message for the first violation, or "".
func checkPairing(msgs []wireMessage) string {
	var pending []string // call IDs of the open assistant message, unanswered
	open := false
	for _, m := range msgs {
		if m.Role == "tool" {
			i := indexOf(pending, m.ToolCallID)
			if !open || i < 0 {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
			}
			pending = append(pending[:i], pending[i+1:]...)
			continue
		}
		if len(pending) > 0 {
			return missing(pending)
		}
		open = m.Role == "assistant" && len(m.ToolCalls) > 0
		pending = pending[:0]
		for _, c := range m.ToolCalls {
			pending = append(pending, c.ID)
		}
	}
	if len(pending) > 0 {
		return missing(pending)
	}
	return ""
}

func missing(ids []string) string {
	return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(ids, ", ")
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func writeError(w http.ResponseWriter, status int, msg, typ, param, code string) {
	body := wireErrorBody{Error: wireError{Message: msg, Type: typ}}
	if param != "" {
		body.Error.Param = &param
	}
	if code != "" {
		body.Error.Code = &code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func toWire(msgs []history.Message) []wireMessage {
	out := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		w := wireMessage{Role: string(m.Role), ToolCallID: m.ToolCallID}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			c := m.Content
			w.Content = &c
		}
		for _, c := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: c.Arguments}})
		}
		out[i] = w
	}
	return out
}

func fromWire(msgs []wireMessage) []history.Message {
	out := make([]history.Message, len(msgs))
	for i, w := range msgs {
		m := history.Message{Role: history.Role(w.Role), ToolCallID: w.ToolCallID}
		if w.Content != nil {
			m.Content = *w.Content
		}
		for _, c := range w.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		out[i] = m
	}
	return out
}
