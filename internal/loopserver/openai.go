package loopserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/histrim/history"
)

// OpenAIOverflowBody is the body of OpenAI's HTTP 400 for a chat request
// over the model's window (%d: the window, then the request's count).
const OpenAIOverflowBody = `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`

// OpenAI is a local OpenAI chat-completions endpoint: an http.Handler that
// answers POST .../chat/completions (streamed or not) as the scripted
// model ([Play]), with the request's count (by Judge) as
// usage.prompt_tokens. A request that breaks OpenAI's tool-pairing rule
// gets OpenAI's HTTP 400 for it; one whose
// count exceeds the window, OpenAI's context_length_exceeded 400
// ([OpenAIOverflowBody]). It is safe for concurrent requests.
type OpenAI struct {
	// Judge counts and checks the requests.
	Judge Judge
	// Window is the window the overflow body states.
	Window int

	counter
}

// wireRequest is what the endpoint reads of a chat-completions request.
type wireRequest struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	Tools         json.RawMessage `json:"tools"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// wireMessage is a chat-completions message as it travels.
type wireMessage struct {
	OpenAIMessage
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ReasoningContent string          `json:"reasoning_content"`
}

// OpenAIMessage is what OpenAI's pairing rule reads of a chat-completions
// message on the wire.
type OpenAIMessage struct {
	Role       string       `json:"role"`
	ToolCallID string       `json:"tool_call_id"`
	ToolCalls  []OpenAICall `json:"tool_calls"`
}

// OpenAICall is a tool call of a chat-completions message on the wire.
type OpenAICall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// text returns the message's text: its content string, or the text of its
// content parts; images and other parts are counted by the caller.
func (m *wireMessage) text() (text string, parts []history.Part) {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var ps []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &ps) != nil {
		return "", nil
	}
	var b strings.Builder
	for _, p := range ps {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "image_url":
			parts = append(parts, history.Part{Type: history.PartImage})
		default:
			parts = append(parts, history.Part{Type: history.PartFile})
		}
	}
	return b.String(), parts
}

// OpenAIHistory converts the messages of a chat-completions request, as
// they travel, to history messages: one for one, by role.
func openAIHistory(msgs []wireMessage) []history.Message {
	out := make([]history.Message, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		text, parts := m.text()
		h := history.Message{Content: text, Parts: parts, Name: m.Name}
		switch m.Role {
		case "system", "developer":
			h.Role = history.RoleSystem
		case "assistant":
			h.Role = history.RoleAssistant
			if m.ReasoningContent != "" {
				h.Parts = append(h.Parts, history.Part{Type: history.PartReasoning, Text: m.ReasoningContent})
			}
			for _, c := range m.ToolCalls {
				h.ToolCalls = append(h.ToolCalls, history.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
		case "tool":
			h.Role, h.ToolCallID = history.RoleTool, m.ToolCallID
		default:
			h.Role = history.RoleUser
		}
		out[i] = h
	}
	return out
}

// OpenAI's answers to a chat-completions request that breaks the pairing
// rule. OpenAIOrphanBody is the body OpenAI returns for a tool message that
// answers no call of the assistant message before it (%d: the message's
// index; langchain4j/langchain4j#585, quoted whole; also
// BerriAI/litellm#4931, microsoft/semantic-kernel#12708). OpenAIUnanswered
// is the message OpenAI returns for calls left unanswered (%s: their ids;
// langchain-ai/langchainjs#6621, which quotes the message only: the
// envelope is the one of the first).
const (
	OpenAIOrphanBody = `{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[%d].role","code":null}}`
	OpenAIUnanswered = `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s`
)

// OpenAIPairing applies OpenAI's pairing rule to n chat-completions
// messages, message i read as at(i), and returns the body of OpenAI's HTTP
// 400 for the first tool message that answers no open call, or for the
// first message after an assistant message whose calls are not all
// answered (the end of the messages included); "" when the messages are
// well paired. The fake server and the adapters' tests share it.
func OpenAIPairing(n int, at func(i int) *OpenAIMessage) string {
	var open []string
	unanswered := func(i int) string {
		msg, _ := json.Marshal(fmt.Sprintf(OpenAIUnanswered, strings.Join(open, ", ")))
		return fmt.Sprintf(`{"error":{"message":%s,"type":"invalid_request_error","param":"messages.[%d].role","code":null}}`, msg, i)
	}
	for i := range n {
		m := at(i)
		if m.Role == "tool" {
			j := slices.Index(open, m.ToolCallID)
			if j < 0 {
				return fmt.Sprintf(OpenAIOrphanBody, i)
			}
			open = slices.Delete(open, j, j+1)
			continue
		}
		if len(open) > 0 {
			return unanswered(i)
		}
		for _, c := range m.ToolCalls {
			open = append(open, c.ID)
		}
	}
	if len(open) > 0 {
		return unanswered(n)
	}
	return ""
}

// ServeHTTP answers one chat-completions request.
func (s *OpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Requests++ })
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		s.count(func(st *Stats) { st.BadRequests++ })
		s.problem("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req wireRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.count(func(st *Stats) { st.BadRequests++ })
		s.problem("undecodable request: %v", err)
		writeJSON(w, http.StatusBadRequest, `{"error":{"message":"We could not parse the JSON body of your request.","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	msgs := openAIHistory(req.Messages)
	holds := func(text string) bool {
		for _, m := range msgs {
			if m.Role == history.RoleUser && m.Content == text {
				return true
			}
		}
		return false
	}
	prompt, id, ok := s.judge(w, s.Judge, OpenAIPairing(len(req.Messages), func(i int) *OpenAIMessage { return &req.Messages[i].OpenAIMessage }), msgs, req.Tools, holds,
		func(prompt int) string { return fmt.Sprintf(OpenAIOverflowBody, s.Window, prompt) })
	if !ok {
		return
	}
	reply := Play(msgs)
	if req.Stream {
		s.stream(w, req, reply, id, prompt)
		return
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	finish := openAIReply(msg, reply, false)
	out := 12 + 20*len(reply.Calls)
	body, _ := json.Marshal(map[string]any{ // maps of strings, numbers and slices always encode
		"id": "chatcmpl-" + strconv.Itoa(id), "object": "chat.completion", "created": 1700000000 + id, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]int{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
	})
	writeJSON(w, http.StatusOK, string(body))
}

// openAIReply sets reply on m, a message or a stream's delta: its tool
// calls (indexed in a stream), or else its text; and returns the finish
// reason.
func openAIReply(m map[string]any, reply Reply, indexed bool) (finish string) {
	if len(reply.Calls) > 0 {
		m["tool_calls"] = openAICalls(reply.Calls, indexed)
		return "tool_calls"
	}
	m["content"] = reply.Text
	return "stop"
}

// openAICalls returns calls as the API's tool_calls (with their index in
// a stream).
func openAICalls(calls []Call, indexed bool) []any {
	out := make([]any, len(calls))
	for k, c := range calls {
		call := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		if indexed {
			call["index"] = k
		}
		out[k] = call
	}
	return out
}

// stream answers a streamed request with server-sent events: the reply in
// one delta, the finish reason, the usage when asked for, and [DONE].
func (s *OpenAI) stream(w http.ResponseWriter, req wireRequest, reply Reply, id, prompt int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(choices []any, usage any) {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-" + strconv.Itoa(id), "object": "chat.completion.chunk", "created": 1700000000 + id,
			"model": req.Model, "choices": choices, "usage": usage,
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	delta := map[string]any{"role": "assistant"}
	finish := openAIReply(delta, reply, true)
	chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil)
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		out := 12 + 20*len(reply.Calls)
		chunk([]any{}, map[string]int{"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out})
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}
