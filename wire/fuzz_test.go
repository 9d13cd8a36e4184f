package wire

import (
	"bytes"
	"encoding/json"
	"strings"
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

// FuzzObjectArray: the scan that reads a body's members and its messages
// array in one pass (objectArray) gives, for any bytes, what the two
// passes it replaced give: the members (objectMembers' scan, each value
// skipped) and the elements arrayElements reads from the value of the
// last member named so, or the same failure.
func FuzzObjectArray(f *testing.F) {
	f.Add([]byte(chatBody(2, 5)), "messages")
	f.Add([]byte(anthropicBody(2, 5)), "messages")
	f.Add([]byte(responsesBody(2, 5)), "input")
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"x"}]}], "contents" : [ ] }`), "contents")
	f.Add([]byte(`{"messages":[1 2],"x":[}`), "messages")
	f.Add([]byte(`{"messages":"[1]","messages":[1,{"a":"]"}]}`), "messages")
	f.Add([]byte(`{"mess\u0061ges":[1],"messages" :[ 1 , 2 ]  }`), "messages")
	f.Add([]byte(`{"messages":[1,],"x":1}`), "messages")
	// An element nested as deep as the scanner follows, with the array
	// around it, and one level deeper.
	for _, d := range []int{maxDepth - 1, maxDepth} {
		f.Add([]byte(`{"messages":[`+strings.Repeat("[", d)+strings.Repeat("]", d)+`]}`), "messages")
	}
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		ms, els, ok, err := objectArray(b, name, nil, nil)
		// The two passes, as Parse made them before.
		var want []member
		werr := eachItem(b, '{', '}', func(i int) (int, error) {
			if b[i] != '"' {
				return 0, errSyntax
			}
			k, err := skipString(b, i)
			if err != nil {
				return 0, err
			}
			j := skipWS(b, k)
			if j >= len(b) || b[j] != ':' {
				return 0, errSyntax
			}
			v := skipWS(b, j+1)
			e, err := skipValue(b, v)
			if err != nil {
				return 0, err
			}
			want = append(want, member{key: b[i:k], whole: span{i, e}, val: span{v, e}})
			return e, nil
		})
		if (err == nil) != (werr == nil) {
			t.Fatalf("error %v, two passes %v", err, werr)
		}
		if err != nil {
			return
		}
		if len(ms) != len(want) {
			t.Fatalf("%d members, two passes %d", len(ms), len(want))
		}
		for i := range ms {
			if !bytes.Equal(ms[i].key, want[i].key) || ms[i].whole != want[i].whole || ms[i].val != want[i].val {
				t.Fatalf("member %d: %+v, two passes %+v", i, ms[i], want[i])
			}
		}
		var wantEls []span
		wantOK := false
		if m, found := find(want, name); found && name != "" {
			if e, aerr := arrayElements(b[m.val.start:m.val.end]); aerr == nil {
				wantEls, wantOK = e, true
			}
		}
		if ok != wantOK || len(els) != len(wantEls) {
			t.Fatalf("elements %v (%v), two passes %v (%v)", els, ok, wantEls, wantOK)
		}
		for i := range els {
			if els[i] != wantEls[i] {
				t.Fatalf("element %d: %v, two passes %v", i, els[i], wantEls[i])
			}
		}
	})
}
