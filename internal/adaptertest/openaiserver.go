package adaptertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

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

// OpenAIWireMessage is what OpenAI's pairing rule reads of a
// chat-completions message on the wire.
type OpenAIWireMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

// OpenAIPairing applies OpenAI's pairing rule to a request's messages as
// they travel and returns the body of OpenAI's HTTP 400 for the first tool
// message that answers no open call, or for the first message after an
// assistant message whose calls are not all answered (the end of the
// messages included); "" when the messages are well paired.
func OpenAIPairing(msgs []OpenAIWireMessage) string {
	var open []string
	for i, m := range msgs {
		if m.Role == "tool" {
			j := slices.Index(open, m.ToolCallID)
			if j < 0 {
				return fmt.Sprintf(OpenAIOrphanBody, i)
			}
			open = slices.Delete(open, j, j+1)
			continue
		}
		if len(open) > 0 {
			return unanswered(open, i)
		}
		for _, c := range m.ToolCalls {
			open = append(open, c.ID)
		}
	}
	if len(open) > 0 {
		return unanswered(open, len(msgs))
	}
	return ""
}

func unanswered(open []string, at int) string {
	msg, _ := json.Marshal(fmt.Sprintf(OpenAIUnanswered, strings.Join(open, ", ")))
	return fmt.Sprintf(`{"error":{"message":%s,"type":"invalid_request_error","param":"messages.[%d].role","code":null}}`, msg, at)
}

// OpenAIPairingServer answers chat completions as OpenAI does with respect
// to tool pairing, reading the request's wire JSON itself (OpenAIPairing):
// 400 and OpenAI's body for a request that breaks the rule; otherwise 200
// with a short reply. Any SDK speaking the chat-completions protocol can
// be pointed at it.
func OpenAIPairingServer(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []OpenAIWireMessage `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if body := OpenAIPairing(req.Messages); body != "" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, body)
			return
		}
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Answer writes a provider's answer to w: status, body, and headers (pairs
// of name and value), with contentType as its Content-Type, or def when
// contentType is empty.
func Answer(w http.ResponseWriter, status int, contentType, def, body string, headers ...string) {
	if contentType == "" {
		contentType = def
	}
	w.Header().Set("Content-Type", contentType)
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// Refusal returns the error an SDK call returns when the provider answers
// it with status and the JSON body: call makes the call against base, the
// URL of a local server that answers every request so. The call must
// fail.
func Refusal(t testing.TB, status int, body string, call func(base string) error) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		Answer(w, status, "", "application/json", body)
	}))
	defer srv.Close()
	err := call(srv.URL)
	if err == nil {
		t.Fatal("the provider refused the request, the SDK returned no error")
	}
	return err
}
