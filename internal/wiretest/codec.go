package wiretest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/wire"
)

// Codec is one input of an adapter's FuzzWireCodec: body, arbitrary
// bytes, as a request to path, trimmed by c (the codec the adapter
// registers with package wire) as wire.Transport trims it, to budget
// folded into 1..4999 tokens, results elided and arguments cleared. It
// checks that nothing panics; that the body is not modified; that a body
// that was valid JSON stays valid; that every byte outside the messages
// array stays; and that the messages sent come from those received in
// their order, each byte for byte or checked by changed: changed(t, orig,
// sent) for a message sent for orig but not as its bytes, and
// changed(t, nil, sent) for a notice, which fails t unless the adapter's
// rules allow sent.
func Codec(t *testing.T, path string, c *adapt.Codec[json.RawMessage, json.RawMessage], body []byte, budget int,
	changed func(t *testing.T, orig, sent json.RawMessage)) {
	t.Helper()
	orig := bytes.Clone(body)
	r, err := wire.Parse(path, body)
	if err != nil {
		return
	}
	items := r.Messages()
	budget = max(budget%5000, 1)
	params := r.Body([]json.RawMessage{})
	opts := []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 1})}
	out, _, from, _ := c.Decide(params, items, budget, opts,
		func(hist []history.Message, opts []history.Option) (history.Result, error) {
			return history.TrimToRecentTurns(hist, budget, opts...)
		})
	if !bytes.Equal(body, orig) {
		t.Fatal("body modified")
	}
	if out == nil {
		return
	}
	sent := r.Body(out)
	if json.Valid(body) && !json.Valid(sent) {
		t.Fatalf("valid body made invalid: %s", sent)
	}
	if s, err := wire.Parse(path, sent); err != nil || !bytes.Equal(s.Body([]json.RawMessage{}), params) {
		t.Fatalf("bytes outside the messages changed (%v)", err)
	}
	last := -1
	for k, it := range out {
		i := from[k]
		if i < 0 {
			changed(t, nil, it)
			continue
		}
		if i <= last {
			t.Fatalf("message %d out of order", k)
		}
		last = i
		if !bytes.Equal(it, items[i]) {
			changed(t, items[i], it)
		}
	}
}
