package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/histrim/history"
)

// FuzzChat parses arbitrary bytes as a chat-completions body and trims
// what parses: it never panics; a body re-emitted with its own messages
// is the body itself; a trimmed body keeps every byte outside the
// messages array, every message it sends is one it received, an elided
// result or a notice, and a body that was valid JSON stays valid.
func FuzzChat(f *testing.F) {
	f.Add([]byte(chatBody(3, 40)), 400)
	f.Add([]byte(chatBody(1, 5)), 50)
	f.Add([]byte(`{"messages":[]}`), 10)
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"messages":[{"role":"user","content":"y"}]}`), 10)
	f.Add([]byte(`{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"q"}]}`), 5)
	f.Add([]byte(`{"a":"\"]}","messages" : [ {"role":"user","content":"\\"} ] }`), 3)
	f.Fuzz(func(t *testing.T, body []byte, budget int) {
		orig := bytes.Clone(body)
		r, err := Parse("/v1/chat/completions", body)
		if err != nil {
			return
		}
		if got := r.Body(r.Messages()); !bytes.Equal(got, body) {
			t.Fatalf("re-emitted body differs")
		}
		out, _, err := chatCodec.Trim(struct{}{}, r.Messages(), max(budget%5000, 1), []history.Option{history.WithElision(history.ElideOptions{})})
		if out == nil {
			return
		}
		sent := r.Body(out)
		if !bytes.HasPrefix(sent, body[:r.msgs.start]) || !bytes.HasSuffix(sent, body[r.msgs.end:]) {
			t.Fatalf("bytes outside the messages changed")
		}
		if json.Valid(body) && !json.Valid(sent) {
			t.Fatalf("valid body made invalid: %s", sent)
		}
		if !bytes.Equal(body, orig) {
			t.Fatal("body modified")
		}
		_ = err
	})
}
