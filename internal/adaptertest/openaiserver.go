package adaptertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/loopserver"
)

// OpenAI's answers to a chat-completions request that breaks the pairing
// rule (loopserver's, with their sources): OpenAIOrphanBody for a tool
// message that answers no call of the assistant message before it (%d:
// the message's index), OpenAIUnanswered for calls left unanswered (%s:
// their ids).
const (
	OpenAIOrphanBody = loopserver.OpenAIOrphanBody
	OpenAIUnanswered = loopserver.OpenAIUnanswered
)

// OpenAIWireMessage is what OpenAI's pairing rule reads of a
// chat-completions message on the wire.
type OpenAIWireMessage = loopserver.OpenAIMessage

// OpenAIPairing applies OpenAI's pairing rule to a request's messages as
// they travel and returns the body of OpenAI's HTTP 400 for the first tool
// message that answers no open call, or for the first message after an
// assistant message whose calls are not all answered (the end of the
// messages included); "" when the messages are well paired
// (loopserver.OpenAIPairing).
func OpenAIPairing(msgs []OpenAIWireMessage) string {
	return loopserver.OpenAIPairing(len(msgs), func(i int) *OpenAIWireMessage { return &msgs[i] })
}

// JudgeOpenAI is what a test's fake Chat Completions server does with a
// request before it replies: a request that breaks OpenAI's pairing rule
// (wire, its messages as they travel) is answered with OpenAI's 400 and
// reported to l (Unpaired); otherwise l counts the request (Receive) with
// its messages as hist converts them, only then, and its tools JSON, and a
// request over l.Window is answered with OpenAI's context_length_exceeded
// 400. It returns l's count, and whether the request was accepted: the
// server then writes its reply.
func (l *Loop) JudgeOpenAI(w http.ResponseWriter, wire []OpenAIWireMessage, tools json.RawMessage,
	hist func() []history.Message, holds func(text string) bool) (count int, ok bool) {
	if reject := OpenAIPairing(wire); reject != "" {
		l.Unpaired(reject)
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, reject)
		return 0, false
	}
	count, fits := l.Receive(hist(), string(tools), holds)
	if !fits {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, loopserver.OpenAIOverflowBody, l.Window, count)
		return count, false
	}
	return count, true
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
