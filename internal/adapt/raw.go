package adapt

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"

	"github.com/histrim/history"
)

// Raw returns c over the JSON of a request body: its native messages are
// the elements of the body's messages array, each the bytes it came in,
// and its other part is the body (or what of it the caller passes: the
// body without its messages, say). Each element is decoded into N
// with decode (an SDK type built from the raw JSON, param.Override, so
// that the adapter reads it as the JSON that came), the body into R with
// system, and c converts and maps back as it does for its SDK: its rules
// (pairing, reasoning, signatures) hold as they hold there. The
// decision is mapped back to bytes by index: an output message that
// encodes (encode) as the message it came from is that message's own
// bytes; one the trim changed (an elided result, cleared arguments) is
// its encoding; a notice is its encoding. An error of system (a request
// that cannot be trimmed) is the conversion's error.
func Raw[R, N any](c *Codec[R, N], system func(body json.RawMessage) (R, error), decode func(json.RawMessage) N,
	encode func(*N) ([]byte, error)) *Codec[json.RawMessage, json.RawMessage] {
	return RawSplice(c, system, decode, encode, nil)
}

// RawSplice is Raw whose messages the trim changed are first offered to
// splice: splice(orig, was, now) returns the bytes of now, the message
// the trim made of was (orig decoded), written over orig's own bytes
// (what the trim changed replaced, every other byte as it came: members
// the SDK's type does not know included), or false, for the encoding
// Raw sends. A nil splice is Raw. The Back of a View its Convert returns
// is called at most once (as Decide and Positions call it): it gives the
// messages it decoded to a later request.
func RawSplice[R, N any](c *Codec[R, N], system func(body json.RawMessage) (R, error), decode func(json.RawMessage) N,
	encode func(*N) ([]byte, error), splice func(orig json.RawMessage, was, now *N) (json.RawMessage, bool)) *Codec[json.RawMessage, json.RawMessage] {
	// arrays holds the arrays of decoded messages whose requests are done
	// (Back has mapped the decision to bytes, which hold none of their
	// memory), emptied, for the next request's: a request of 100k tokens
	// decodes some 800 messages, hundreds of bytes each for an SDK's
	// union type.
	var arrays sync.Pool // of *[]N
	return &Codec[json.RawMessage, json.RawMessage]{
		Name: c.Name, Noun: c.Noun, Rules: c.Rules, Overflow: c.Overflow,
		Convert: func(body json.RawMessage, msgs []json.RawMessage, opts []history.Option) (*View[json.RawMessage], error) {
			r, err := system(body)
			if err != nil {
				return nil, err
			}
			var ns []N
			if p, _ := arrays.Get().(*[]N); p != nil && cap(*p) >= len(msgs) {
				ns = (*p)[:len(msgs)]
			} else {
				ns = make([]N, len(msgs))
			}
			for i, m := range msgs {
				ns[i] = decode(m)
			}
			v, err := c.Convert(r, ns, opts)
			if err != nil {
				return nil, err
			}
			return &View[json.RawMessage]{Hist: v.Hist, Lead: v.Lead, N: v.N, Of: v.Of,
				Back: func(res history.Result) ([]json.RawMessage, []int) {
					out, from := v.Back(res)
					raw := make([]json.RawMessage, len(out))
					for k := range out {
						raw[k] = rawBack(msgs, ns, out, from[k], k, encode, splice)
					}
					if v.Release != nil {
						v.Release() // raw holds bytes, never out's memory
					}
					if len(ns) <= maxPooledMessages {
						// The View is done: nothing reads ns after Back
						// (Of serves the pins, before it).
						clear(ns)
						arrays.Put(&ns)
					}
					return raw, from
				}}, nil
		},
	}
}

// maxPooledMessages is the longest array of decoded messages RawSplice
// keeps for a later request (past it, the collector has it).
const maxPooledMessages = 1 << 16

// rawBack returns output message k, which came from msgs[i] (decoded as
// ns[i]; i < 0 for a notice), as bytes: msgs[i] itself when it encodes as
// ns[i] does, else what splice (when not nil) writes over msgs[i], else
// its encoding. A message that does not encode
// (which a message built from JSON never is) is the one it came from, or
// null for a notice.
func rawBack[N any](msgs []json.RawMessage, ns, out []N, i, k int, encode func(*N) ([]byte, error),
	splice func(orig json.RawMessage, was, now *N) (json.RawMessage, bool)) json.RawMessage {
	if i >= 0 && i < len(msgs) && samePointer(out[k], ns[i]) {
		return msgs[i] // the message decoded itself: it encodes as it does
	}
	if splice != nil && i >= 0 && i < len(msgs) {
		if b, ok := splice(msgs[i], &ns[i], &out[k]); ok {
			return b
		}
	}
	b, err := encode(&out[k])
	if i < 0 || i >= len(msgs) {
		if err != nil {
			return json.RawMessage("null")
		}
		return b
	}
	if err != nil {
		return msgs[i]
	}
	if orig, oerr := encode(&ns[i]); oerr == nil && bytes.Equal(orig, b) {
		return msgs[i]
	}
	return b
}

// samePointer reports whether a and b are the same non-nil pointer (N a
// pointer type, as *genai.Content): an output message that is the decoded
// message itself, which the trim kept as it came, needs no encoding to
// tell.
// (Any other N is false at once, without boxing a or b: an SDK's union
// struct is hundreds of bytes.)
func samePointer[N any](a, b N) bool {
	if reflect.TypeFor[N]().Kind() != reflect.Pointer {
		return false
	}
	return any(a) == any(b) && reflect.ValueOf(a).Pointer() != 0
}
