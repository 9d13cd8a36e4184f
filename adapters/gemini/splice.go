package gemini

import (
	"encoding/json"

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
// find (a proto-style snake_case key), JSON it cannot read.
func splice(orig json.RawMessage, was, now **genai.Content) (json.RawMessage, bool) {
	w, n := *was, *now
	if wireapi.Member == nil || wireapi.Elements == nil || wireapi.WithMember == nil ||
		w == nil || n == nil || w.Role != n.Role {
		return nil, false
	}
	arr, ok := wireapi.Member(orig, "parts")
	if !ok {
		return nil, false
	}
	elems, ok := wireapi.Elements(arr)
	if !ok || len(elems) != len(w.Parts) {
		return nil, false
	}
	out := make([]byte, 0, len(arr))
	out = append(out, '[')
	j := 0
	for k, q := range n.Parts {
		var b []byte
		for ; j < len(w.Parts) && b == nil; j++ {
			b, ok = splicePart(elems[j], w.Parts[j], q)
			if !ok {
				return nil, false
			}
		}
		if b == nil {
			return nil, false // no part of was is q's origin
		}
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	out = append(out, ']')
	return wireapi.WithMember(orig, "parts", out)
}

// splicePart returns the bytes of q when it is p (whose bytes are raw)
// or what the trim makes of p (an elided function response, a call whose
// arguments were cleared: the same kind of part, the same id and name),
// written over raw; nil when q is not made of p (p was dropped); false
// when q is made of p but raw cannot be rewritten.
func splicePart(raw []byte, p, q *genai.Part) ([]byte, bool) {
	switch {
	case p == q:
		return raw, true
	case p == nil || q == nil:
		return nil, true
	case p.FunctionResponse != nil && q.FunctionResponse != nil && p.FunctionCall == nil && q.FunctionCall == nil &&
		p.FunctionResponse.ID == q.FunctionResponse.ID && p.FunctionResponse.Name == q.FunctionResponse.Name:
		resp, err := json.Marshal(q.FunctionResponse.Response)
		if err != nil || len(q.FunctionResponse.Parts) > 0 {
			return nil, false
		}
		b, ok := rewrite(raw, "functionResponse", func(fr []byte) ([]byte, bool) {
			fr, ok := wireapi.WithMember(fr, "response", resp)
			return without(fr, "parts"), ok
		})
		return b, ok
	case p.FunctionCall != nil && q.FunctionCall != nil && p.FunctionResponse == nil && q.FunctionResponse == nil &&
		p.FunctionCall.ID == q.FunctionCall.ID && p.FunctionCall.Name == q.FunctionCall.Name:
		args, err := json.Marshal(q.FunctionCall.Args)
		if err != nil || len(q.FunctionCall.PartialArgs) > 0 {
			return nil, false
		}
		b, ok := rewrite(raw, "functionCall", func(fc []byte) ([]byte, bool) {
			fc, ok := wireapi.WithMember(fc, "args", args)
			return without(fc, "partialArgs"), ok
		})
		return b, ok
	}
	return nil, true
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
