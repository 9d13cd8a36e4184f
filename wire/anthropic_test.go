package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/histrim/history"
)

// anthropicBody returns a Messages body of turns user turns, each with a
// thinking block, a tool call and its result of words words, with fields
// the package does not read at every level, cache breakpoints, and
// whitespace as a hand-written body has it.
func anthropicBody(turns, words int) string {
	var b strings.Builder
	b.WriteString(`{"model": "claude-sonnet-4-5", "max_tokens": 1024, "x_vendor": {"a": [1, {"b": null}]},
 "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
 "tools": [{"name": "read", "input_schema": {"type": "object"}}],
 "thinking": {"type": "enabled", "budget_tokens": 2000},
 "messages": [`)
	for t := range turns {
		if t > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `
  {"role": "user", "content": "task %d: read file %d"},
  {"role": "assistant", "content": [{"type": "thinking", "thinking": "think %d", "signature": "sig%d"}, {"type": "tool_use", "id": "tu_%d", "name": "read", "input": {"path": "f%d.go"}, "x_block": 1}], "x_msg": true},
  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_%d", "content": [{"type": "text", "text": %q}], "is_error": false, "x_res": {"k": "v"}}, {"type": "x_unknown_block", "data": [1, 2]}]},
  {"role": "assistant", "content": [{"type": "text", "text": "done %d \u00e9"}]}`, t, t, t, t, t, t, t, strings.Repeat("line of output ", words), t)
	}
	b.WriteString("\n ],\n" + ` "metadata": {"user_id": "u-7"}, "stream": false}`)
	return b.String()
}

// blockSet returns every content block of the messages, as they came.
func blockSet(items []json.RawMessage) map[string]bool {
	out := map[string]bool{}
	for _, m := range items {
		m := m
		if _, blocks, ok := anthropicMessage(&m); ok {
			for _, b := range blocks {
				out[string(b)] = true
			}
		}
	}
	return out
}

// TestAnthropicBodyFidelity trims Messages bodies at several budgets:
// the bytes outside the messages array arrive as sent, and inside it each
// message is one received, a notice, or one received with its content
// cut down, every other member as it came and each block kept as it came
// or, for an elided result or a call whose input was cleared, with that
// one member replaced.
func TestAnthropicBodyFidelity(t *testing.T) {
	body := []byte(anthropicBody(12, 200))
	orig := bytes.Clone(body)
	r, err := Parse("/v1/messages", body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "claude-sonnet-4-5" || r.MaxOutput != 1024 || r.Key != "u-7" || len(r.items) != 4*12 || len(r.system) == 0 {
		t.Fatalf("parsed %+v, %d messages", r, len(r.items))
	}
	in := map[string]bool{}
	for _, m := range r.items {
		in[string(m)] = true
	}
	blocks := blockSet(r.items)
	for _, budget := range []int{100_000, 6_000, 3_000, 1_500} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			opts := []history.Option{history.WithElision(history.ElideOptions{}), history.WithOverhead(30)}
			out, _, err := anthropicCodec.Trim(r.system, r.Messages(), budget, opts)
			if err != nil && out == nil {
				t.Fatal(err)
			}
			sent := r.Body(out)
			if !json.Valid(sent) {
				t.Fatalf("not JSON: %s", sent)
			}
			if budget == 100_000 && !bytes.Equal(sent, orig) {
				t.Fatalf("nothing to trim, and the body changed")
			}
			if !bytes.HasPrefix(sent, body[:r.msgs.start]) || !bytes.HasSuffix(sent, body[r.msgs.end:]) {
				t.Fatalf("bytes outside the messages changed")
			}
			if budget < 100_000 && bytes.Equal(sent, body) {
				t.Fatalf("budget %d: nothing trimmed", budget)
			}
			for _, m := range out {
				if in[string(m)] {
					continue
				}
				role, bs, ok := anthropicMessage(&m)
				if !ok {
					t.Fatalf("output message does not read: %s", m)
				}
				if len(bs) == 1 && strings.HasPrefix(string(m), `{"role":"`+role+`","content":[{"type":"text","text":`) {
					continue // a notice
				}
				if !matchesButMember(m, r.items, "content") {
					t.Errorf("a message cut down changed beyond its content: %s", m)
				}
				for _, b := range bs {
					if !blocks[string(b)] && !matchesButMember(b, keys(blocks), "content") && !matchesButMember(b, keys(blocks), "input") {
						t.Errorf("a block neither kept nor elided: %s", b)
					}
				}
			}
			if !bytes.Equal(body, orig) {
				t.Fatal("the caller's body was modified")
			}
		})
	}
}

func keys(m map[string]bool) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(m))
	for k := range m {
		out = append(out, json.RawMessage(k))
	}
	return out
}

// matchesButMember reports whether m is one of items with the value of
// its member name replaced and every other byte as it was.
func matchesButMember(m json.RawMessage, items []json.RawMessage, name string) bool {
	ms, err := objectMembers(m)
	if err != nil {
		return false
	}
	c, ok := find(ms, name)
	if !ok {
		return false
	}
	for _, it := range items {
		is, err := objectMembers(it)
		if err != nil {
			continue
		}
		ic, ok := find(is, name)
		if ok && bytes.Equal(it[:ic.val.start], m[:c.val.start]) && bytes.Equal(it[ic.val.end:], m[c.val.end:]) {
			return true
		}
	}
	return false
}

// FuzzAnthropic is FuzzChat for Messages bodies.
func FuzzAnthropic(f *testing.F) {
	f.Add([]byte(anthropicBody(3, 40)), 400)
	f.Add([]byte(anthropicBody(1, 5)), 50)
	f.Add([]byte(`{"system":"s","messages":[{"role":"user","content":"x"}]}`), 10)
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]},{"role":"user","content":"q"}]}`), 5)
	f.Fuzz(func(t *testing.T, body []byte, budget int) {
		orig := bytes.Clone(body)
		r, err := Parse("/v1/messages", body)
		if err != nil {
			return
		}
		if got := r.Body(r.Messages()); !bytes.Equal(got, body) {
			t.Fatalf("re-emitted body differs")
		}
		out, _, _ := anthropicCodec.Trim(r.system, r.Messages(), max(budget%5000, 1), []history.Option{history.WithElision(history.ElideOptions{})})
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
	})
}
