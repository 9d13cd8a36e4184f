package wire

// Anthropic Messages: a request's "messages", each kept as the bytes it
// came in, and its "system", read by the Messages API logic every
// Anthropic adapter shares (internal/anthropicmsg) through its accessor
// over raw JSON: every message is read through its JSON, as the adapters
// read a message built with param.Override. Pairing, thinking blocks and
// their signatures, compaction blocks and the cache breakpoints (at most
// four) hold as in the adapters. A message the trim keeps whole is its
// own bytes; one it cuts down (a result elided, a call's input cleared,
// calls stripped) is re-encoded from its members.

import (
	"bytes"
	"encoding/json"
	"slices"
	"unsafe"

	"github.com/histrim/history/internal/anthropicmsg"
)

var anthropicSDK = &anthropicmsg.SDK[json.RawMessage, json.RawMessage, json.RawMessage]{
	Name:        "wire/anthropic",
	Message:     anthropicMessage,
	WithContent: anthropicWithContent,
	ElideResult: anthropicElide,
	WithInput: func(b *json.RawMessage, args string) (json.RawMessage, bool) {
		if !json.Valid([]byte(args)) {
			return nil, false
		}
		return withMember(*b, "input", []byte(args))
	},
	Override:      func(raw json.RawMessage) json.RawMessage { return raw },
	OverrideBlock: func(raw json.RawMessage) json.RawMessage { return raw },
	Type: func(b *json.RawMessage) string {
		in, _ := anthropicDescribe(b)
		return in.Type
	},
	// Every block is read through its JSON (anthropicmsg.DescribeJSON),
	// as the adapters read a block their SDK does not model, once per
	// distinct block.
	Describe: anthropicDescribe,
	Notice: func(role, text string) json.RawMessage {
		out := []byte(`{"role":"` + role + `","content":[{"type":"text","text":`)
		out = appendString(out, text)
		return append(out, "}]}"...)
	},
	System: anthropicSystem,
	// A client resends its transcript: each message is read once, by
	// its bytes.
	Memo: anthropicMemo,
	// The Transport reads nothing of a Result's messages: the arrays of
	// each request's conversion go to the next one.
	Reuse: true,
}

var anthropicCodec = anthropicSDK.Codec()

// anthropicSystem reads a request's system prompt: a string, or text
// blocks (each cache_control marker counts as a breakpoint).
func anthropicSystem(raw json.RawMessage) ([]string, []bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []string{s}, []bool{false}
	}
	var blocks []struct {
		Text         string          `json:"text"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return nil, nil
	}
	texts, cached := make([]string, len(blocks)), make([]bool, len(blocks))
	for i, b := range blocks {
		texts[i] = b.Text
		cached[i] = len(b.CacheControl) > 0 && string(b.CacheControl) != "null"
	}
	return texts, cached
}

// anthropicMessage returns the role and the content blocks of a message
// whose content is an array, each block the bytes it came in; ok is false
// for a string content or a message that does not read, which the shared
// logic then reads through its JSON.
//
// A client resends its transcript, and the messages a plan cuts down are
// read again to map the decision back: where each block lies is kept by
// m's exact bytes (anthropicSplits), so that a message is scanned once.
func anthropicMessage(m *json.RawMessage) (string, []json.RawMessage, bool) {
	sp, ok := anthropicSplits.lookup(*m)
	if !ok {
		sp = splitMessage(*m)
		anthropicSplits.add(*m, sp, len(*m)+len(sp.role)+len(sp.blocks)*int(unsafe.Sizeof(span{})))
	}
	if !sp.ok {
		return "", nil, false
	}
	blocks := make([]json.RawMessage, len(sp.blocks))
	for i, e := range sp.blocks {
		blocks[i] = (*m)[e.start:e.end:e.end]
	}
	return sp.role, blocks, true
}

// split is where anthropicMessage finds a message's role and content
// blocks: each block's span in the message's bytes (no byte of them).
type split struct {
	role   string
	blocks []span
	ok     bool // false: a string content, or a message that does not read
}

// splitMessage reads m as anthropicMessage describes.
func splitMessage(m json.RawMessage) split {
	ms, err := objectMembers(m)
	if err != nil {
		return split{}
	}
	r, ok := find(ms, "role")
	c, ok2 := find(ms, "content")
	if !ok || !ok2 {
		return split{}
	}
	var role string
	if json.Unmarshal(m[r.val.start:r.val.end], &role) != nil {
		return split{}
	}
	els, err := arrayElements(m[c.val.start:c.val.end])
	if err != nil {
		return split{}
	}
	for i := range els {
		els[i].start += c.val.start
		els[i].end += c.val.start
	}
	return split{role: role, blocks: slices.Clip(els), ok: true}
}

// anthropicWithContent returns the message m, which anthropicMessage
// read, with content as its blocks: every other byte of m as it came.
//
// A client resends its transcript, and a plan cuts the same messages the
// same way from one request to the next: the message written is kept by
// m's exact bytes with the content it was given (anthropicRebuilt).
func anthropicWithContent(m json.RawMessage, content []json.RawMessage) json.RawMessage {
	if w, ok := anthropicRebuilt.lookup(m); ok && joined(w.content, content) {
		return w.out
	}
	ms, err := objectMembers(m)
	if err != nil {
		return m
	}
	arr := []byte{'['}
	for i, b := range content {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, b...)
	}
	arr = append(arr, ']')
	out, ok := replaceMember(m, ms, "content", arr)
	if !ok {
		return m
	}
	out = slices.Clip(out)
	anthropicRebuilt.add(m, rebuilt{arr, out}, len(m)+len(arr)+len(out))
	return out
}

// anthropicElide returns the tool_result block b with text as its only
// content, kept by b's exact bytes with text (anthropicElided), as
// anthropicWithContent keeps messages.
func anthropicElide(b *json.RawMessage, text string) (json.RawMessage, bool) {
	if w, ok := anthropicElided.lookup(*b); ok && string(w.content) == text {
		return w.out, true
	}
	content := appendString([]byte(`[{"type":"text","text":`), text)
	out, ok := withMember(*b, "content", append(content, "}]"...))
	if !ok {
		return nil, false
	}
	out = slices.Clip(out)
	anthropicElided.add(*b, rebuilt{[]byte(text), out}, len(*b)+len(text)+len(out))
	return out, true
}

// anthropicRebuilt and anthropicElided keep the messages and blocks
// anthropicWithContent and anthropicElide wrote.
var anthropicRebuilt, anthropicElided convCache[rebuilt]

// anthropicSplits keeps where anthropicMessage found each message's
// blocks.
var anthropicSplits convCache[split]

// rebuilt is a message or block written anew: what was written into it
// (the content array; the placeholder's text), and the result (never
// written to: Request.Body copies it). Neither shares a byte with a
// request's body.
type rebuilt struct {
	content []byte
	out     json.RawMessage
}

// joined reports whether arr is the JSON array of content's elements,
// each as it is, without building it.
func joined(arr []byte, content []json.RawMessage) bool {
	if len(arr) < 2 || arr[0] != '[' {
		return false
	}
	rest := arr[1:]
	for i, b := range content {
		if i > 0 {
			if len(rest) == 0 || rest[0] != ',' {
				return false
			}
			rest = rest[1:]
		}
		if !bytes.HasPrefix(rest, b) {
			return false
		}
		rest = rest[len(b):]
	}
	return len(rest) == 1 && rest[0] == ']'
}

// withMember returns the JSON object obj with the value of its member
// name replaced by val, every other byte as it came; ok is false when obj
// is not an object with such a member.
func withMember(obj json.RawMessage, name string, val []byte) (json.RawMessage, bool) {
	ms, err := objectMembers(obj)
	if err != nil {
		return nil, false
	}
	out, ok := replaceMember(obj, ms, name, val)
	return out, ok
}
