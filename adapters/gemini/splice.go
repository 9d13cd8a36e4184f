package gemini

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/histrim/history/internal/bytecache"
	"github.com/histrim/history/internal/wireapi"
	"google.golang.org/genai"
)

// splice writes now, the content the trim made of was (which orig
// decodes to), over orig's own bytes (see adapt.RawSplice): orig with its
// parts array holding, for each part now keeps, that part's bytes as they
// came, a function response elided with its response replaced and its
// own parts removed, or a function call whose arguments were cleared with
// its args replaced and its partialArgs removed. Every other byte stays
// as it came, fields genai does not know included, where encoding now
// would drop them. It returns false (for the encoding) on anything else:
// a part it cannot tell the origin of, a role changed, members it cannot
// find (a proto-style snake_case key), JSON it cannot read. A content
// whose every part is kept as it came is orig itself.
func splice(orig json.RawMessage, was, now **genai.Content) (json.RawMessage, bool) {
	w, n := *was, *now
	if wireapi.Member == nil || wireapi.Elements == nil || wireapi.WithMember == nil ||
		w == nil || n == nil || w.Role != n.Role {
		return nil, false
	}
	// The plan's key is written into a buffer an earlier splice is done
	// with: it holds the elided texts, and is most often only compared.
	buf, _ := keyBuffers.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	plan, ok := planSplice(w, n, (*buf)[:0])
	defer func() {
		if cap(plan.key) <= maxKeyBuffer {
			*buf = plan.key[:0]
			keyBuffers.Put(buf)
		}
	}()
	if !ok {
		return nil, false
	}
	if plan.whole(len(w.Parts)) {
		return orig, true // every part kept as it came: the content itself
	}
	// A client resends its transcript and the plan cuts the same contents
	// the same way: what was written over orig is kept by orig's bytes
	// with the plan it was written for.
	if s, ok := spliced.Get(orig); ok && bytes.Equal(s.plan, plan.key) {
		return s.out, true
	}
	out, ok := plan.write(orig, len(w.Parts))
	if ok {
		out = slices.Clip(out)
		key := bytes.Clone(plan.key)
		spliced.Add(orig, splicing{key, out}, len(orig)+len(key)+len(out))
	}
	return out, ok
}

// keyBuffers holds the buffers splice writes plans' keys into (*[]byte),
// each at most maxKeyBuffer bytes.
var keyBuffers sync.Pool

const maxKeyBuffer = 1 << 20

// spliced keeps splice's contents (see there).
var spliced bytecache.Cache[splicing]

// splicing is a content written over the bytes it came in: the plan it
// was written for (splicePlan.key) and what was written (never written
// to: Request.Body copies it).
type splicing struct{ plan, out []byte }

// splicePlan is what a content cut down keeps of the parts of the one it
// came from: for each part kept, the index of its origin and, for a part
// the trim rewrote, the member rewritten and its new value.
type splicePlan struct {
	parts []splicedPart
	key   []byte // the plan as bytes, to compare plans
}

type splicedPart struct {
	from  int
	field string // "" for the part as it came; functionResponse or functionCall
	val   []byte // the new response or args, encoded (nil until write for an elided response)
	// output is an elided response's text, for a response of the shape
	// elide gives ({"output": text}): encoded only when the plan is
	// written, as a client resending its transcript makes the same plan
	// again and again (the encoding to compare plans was a tenth of the
	// Transport's time).
	output *string
}

// whole reports whether p keeps each of n parts as it came, in order.
func (p splicePlan) whole(n int) bool {
	if len(p.parts) != n {
		return false
	}
	for k, sp := range p.parts {
		if sp.from != k || sp.field != "" {
			return false
		}
	}
	return true
}

// planSplice returns the plan that makes now of was, or false when a part
// of now is not made of a part of was in order. The plan's key is
// appended to key (its buffer, or nil).
func planSplice(was, now *genai.Content, key []byte) (splicePlan, bool) {
	p := splicePlan{key: key}
	j := 0
	for _, q := range now.Parts {
		found := false
		for ; j < len(was.Parts) && !found; j++ {
			sp, made, ok := planPart(was.Parts[j], q)
			if !ok {
				return splicePlan{key: p.key}, false
			}
			if made {
				sp.from, found = j, true
				p.parts = append(p.parts, sp)
				p.key = strconv.AppendInt(p.key, int64(j), 10)
				p.key = append(p.key, sp.field...)
				if sp.output != nil {
					// A mark no encoded value starts with, then the text
					// after its length (it may hold any byte).
					p.key = append(strconv.AppendInt(append(p.key, 1), int64(len(*sp.output)), 10), ':')
					p.key = append(p.key, *sp.output...)
				} else {
					p.key = append(p.key, sp.val...)
				}
				p.key = append(p.key, 0)
			}
		}
		if !found {
			return splicePlan{key: p.key}, false // no part of was is q's origin
		}
	}
	return p, true
}

// planPart says whether q is p or made of it by the trim (an elided
// function response, a call whose arguments were cleared: the same kind
// of part, the same id and name), and what to write for it; ok is false
// when q is made of p but cannot be written so.
func planPart(p, q *genai.Part) (sp splicedPart, made, ok bool) {
	switch {
	case p == q:
		return splicedPart{}, true, true
	case p == nil || q == nil:
		return splicedPart{}, false, true
	case p.FunctionResponse != nil && q.FunctionResponse != nil && p.FunctionCall == nil && q.FunctionCall == nil &&
		p.FunctionResponse.ID == q.FunctionResponse.ID && p.FunctionResponse.Name == q.FunctionResponse.Name:
		if len(q.FunctionResponse.Parts) > 0 {
			return splicedPart{}, true, false
		}
		if text, ok := elidedOutput(q.FunctionResponse.Response); ok {
			return splicedPart{field: "functionResponse", output: &text}, true, true
		}
		resp, err := json.Marshal(q.FunctionResponse.Response)
		if err != nil {
			return splicedPart{}, true, false
		}
		return splicedPart{field: "functionResponse", val: resp}, true, true
	case p.FunctionCall != nil && q.FunctionCall != nil && p.FunctionResponse == nil && q.FunctionResponse == nil &&
		p.FunctionCall.ID == q.FunctionCall.ID && p.FunctionCall.Name == q.FunctionCall.Name:
		args, err := json.Marshal(q.FunctionCall.Args)
		if err != nil || len(q.FunctionCall.PartialArgs) > 0 {
			return splicedPart{}, true, false
		}
		return splicedPart{field: "functionCall", val: args}, true, true
	}
	return splicedPart{}, false, true
}

// write returns orig, a content of n parts, with its parts array as p
// says.
func (p splicePlan) write(orig []byte, n int) ([]byte, bool) {
	arr, ok := wireapi.Member(orig, "parts")
	if !ok {
		return nil, false
	}
	elems, ok := wireapi.Elements(arr)
	if !ok || len(elems) != n {
		return nil, false
	}
	out := make([]byte, 0, len(arr))
	out = append(out, '[')
	for k, sp := range p.parts {
		b := elems[sp.from]
		if sp.output != nil {
			val, err := json.Marshal(map[string]any{"output": *sp.output})
			if err != nil {
				return nil, false
			}
			sp.val = val
		}
		if e, ok := edits[sp.field]; ok {
			if b, ok = rewrite(b, sp.field, func(v []byte) ([]byte, bool) {
				v, ok := wireapi.WithMember(v, e.set, sp.val)
				return without(v, e.drop), ok
			}); !ok {
				return nil, false
			}
		}
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	out = append(out, ']')
	return wireapi.WithMember(orig, "parts", out)
}

// edits says, for each kind of part the trim rewrites, the member of it
// that holds the new value and the member that goes: an elided function
// response holds no parts of its own, a call whose arguments were cleared
// no partial arguments (see elide and withArgs).
var edits = map[string]struct{ set, drop string }{
	"functionResponse": {"response", "parts"},
	"functionCall":     {"args", "partialArgs"},
}

// rewrite returns the JSON object raw with the value of its member name
// replaced by what edit makes of it.
func rewrite(raw []byte, name string, edit func([]byte) ([]byte, bool)) ([]byte, bool) {
	v, ok := wireapi.Member(raw, name)
	if !ok {
		return nil, false
	}
	if v, ok = edit(v); !ok {
		return nil, false
	}
	return wireapi.WithMember(raw, name, v)
}

// without returns the JSON object obj without its member name, or obj
// itself when it has none.
func without(obj []byte, name string) []byte {
	if out, ok := wireapi.WithMember(obj, name, nil); ok {
		return out
	}
	return obj
}

// elidedOutput returns the text of a response of the shape elide gives,
// {"output": text}, or false.
func elidedOutput(resp map[string]any) (string, bool) {
	if len(resp) != 1 {
		return "", false
	}
	text, ok := resp["output"].(string)
	return text, ok
}
