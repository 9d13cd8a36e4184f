package responses

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/histrim/history/internal/bytecache"
	"github.com/histrim/history/internal/wireapi"
)

// splice writes now, the item the trim made of was (which orig decodes
// to), over orig's own bytes (see adapt.RawSplice): the one member the
// trim rewrites (the output, or a program's result, of an output it
// elided; the arguments, or a custom tool call's input, of a call whose
// arguments it cleared) holds now's value, every other byte of orig as it
// came: the members' order and spacing, fields the SDK does not know.
// An item the trim kept as it came is orig itself. It returns false (for
// the encoding) for any other item, or JSON it cannot rewrite so.
func splice(orig json.RawMessage, was, now *Item) (json.RawMessage, bool) {
	if wireapi.Member == nil || wireapi.WithMember == nil {
		return nil, false
	}
	raw, err := rawJSON(now)
	if err != nil {
		return nil, false
	}
	if w, ok := rawOf(was); ok && sameSlice(w, raw) || bytes.Equal(raw, orig) {
		// Kept as it came: now sends the bytes was, decoded from orig,
		// sends (the encoding of an item decoded from orig is orig).
		return orig, true
	}
	// A client resends its transcript and the plan rewrites the same
	// items the same way: what was written over orig is kept with the
	// wire memo's rewrite of was, or else by orig's bytes with the item it
	// was written for.
	if out, ok := wireMemo.splicedOf(was, raw); ok {
		return out, true
	}
	if s, ok := spliced.Get(orig); ok && bytes.Equal(s.now, raw) {
		wireMemo.keepSpliced(was, raw, s.out)
		return s.out, true
	}
	out, ok := spliceOnce(orig, raw)
	if ok {
		out = slices.Clip(out)
		spliced.Add(orig, splicing{bytes.Clone(raw), out}, len(orig)+len(raw)+len(out))
		wireMemo.keepSpliced(was, raw, out)
	}
	return out, ok
}

// spliced keeps splice's items (see there).
var spliced bytecache.Cache[splicing]

// splicing is an item written over the bytes it came in: the encoding of
// the item the trim made (now), and what splice wrote (out, never written
// to: Request.Body copies it).
type splicing struct{ now, out []byte }

// spliceOnce is splice without its cache: raw is the encoding of the item
// the trim made of orig's.
func spliceOnce(orig, raw json.RawMessage) (json.RawMessage, bool) {
	t, ok := wireapi.Member(orig, "type")
	var typ string
	if !ok || json.Unmarshal(t, &typ) != nil {
		return nil, false
	}
	key := ""
	switch typ {
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output", "apply_patch_call_output", "shell_call_output":
		key = "output"
	case "program_output":
		key = "result"
	case "function_call":
		key = "arguments"
	case "custom_tool_call":
		key = "input"
	default:
		return nil, false
	}
	v, ok := wireapi.Member(raw, key)
	if !ok {
		return nil, false
	}
	return wireapi.WithMember(orig, key, v)
}
