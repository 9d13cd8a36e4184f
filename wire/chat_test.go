package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/histrim/history"
)

// chatBody returns a chat-completions body of turns user turns, each with
// a tool call and its result of words words, with fields the package does
// not read at the top level, in messages, in calls and in parts, and
// whitespace as a hand-written body has it.
func chatBody(turns, words int) string {
	var b strings.Builder
	b.WriteString(`{"model": "gpt-4.1",  "temperature":0.2, "x_vendor": {"a":[1,2,{"b":null}]},` + "\n" +
		` "tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}],` +
		` "messages": [` + "\n" + `  {"role":"system","content":"You are terse.","x_extra":"sys"}`)
	for t := range turns {
		fmt.Fprintf(&b, `,
  {"role":"user","content":[{"type":"text","text":"task %d: read file %d"},{"type":"text","text":"please","cache_control":{"type":"ephemeral"}}]},
  {"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read","arguments":"{\"path\":\"f%d.go\"}"},"x_call":true}],"reasoning_content":"think %d","x_msg":[1]},
  {"role":"tool","tool_call_id":"call_%d","content":%q, "x_tool": {"k":"v"}},
  {"role":"assistant","content":"done %d \u00e9\ud83d\ude00","x_after":1}`, t, t, t, t, t, t, strings.Repeat("line of output ", words), t)
	}
	b.WriteString("\n ],\n" + ` "stream": false, "user":"u-1", "metadata":{"z":"\u2028"}}`)
	return b.String()
}

// outside returns the body's bytes before and after the messages array.
func outside(t *testing.T, r *Request, body []byte) (before, after []byte) {
	t.Helper()
	return body[:r.msgs.start], body[r.msgs.end:]
}

// TestChatBodyFidelity trims chat bodies at several budgets and checks
// that what the upstream receives differs from what the client sent only
// in the messages array, and there only by whole messages dropped, tool
// results' content replaced, and notices inserted: every other message
// byte for byte, every member of an elided result but its content byte
// for byte.
func TestChatBodyFidelity(t *testing.T) {
	body := []byte(chatBody(12, 200))
	orig := bytes.Clone(body)
	r, err := Parse("/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model != "gpt-4.1" || r.Stream || r.Key != "u-1" || len(r.items) != 1+4*12 {
		t.Fatalf("parsed %+v, %d messages", r, len(r.items))
	}
	in := map[string]bool{}
	for _, m := range r.items {
		in[string(m)] = true
	}
	for _, budget := range []int{100_000, 6_000, 3_000, 1_500, 700} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			opts := []history.Option{history.WithElision(history.ElideOptions{}), history.WithOverhead(30)}
			out, res, err := chatCodec.Trim(struct{}{}, r.Messages(), budget, opts)
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
			before, after := outside(t, r, body)
			if !bytes.HasPrefix(sent, before) || !bytes.HasSuffix(sent, after) {
				t.Fatalf("bytes outside the messages changed")
			}
			s2, err := Parse("/v1/chat/completions", sent)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range s2.items {
				if in[string(m)] {
					continue
				}
				var probe map[string]json.RawMessage
				if err := json.Unmarshal(m, &probe); err != nil {
					t.Fatal(err)
				}
				switch role := string(probe["role"]); {
				case role == `"tool"` && res.ElidedResults > 0:
					// the original with only its content replaced
					if !matchesButContent(m, r.items) {
						t.Errorf("elided result changed beyond its content: %s", m)
					}
				case len(probe) == 2 && probe["content"] != nil: // a notice
				default:
					t.Errorf("message neither kept, elided nor a notice: %s", m)
				}
			}
			if !bytes.Equal(body, orig) {
				t.Fatal("the caller's body was modified")
			}
		})
	}
}

// matchesButContent reports whether m is one of items with its content
// member's value replaced and every other byte as it was.
func matchesButContent(m json.RawMessage, items []json.RawMessage) bool {
	ms, err := objectMembers(m)
	if err != nil {
		return false
	}
	c, ok := find(ms, "content")
	if !ok {
		return false
	}
	for _, it := range items {
		is, err := objectMembers(it)
		if err != nil {
			continue
		}
		ic, ok := find(is, "content")
		if ok && bytes.Equal(it[:ic.val.start], m[:c.val.start]) && bytes.Equal(it[ic.val.end:], m[c.val.end:]) {
			return true
		}
	}
	return false
}

// TestChatConversion checks what the conversion reads of each shape, with
// the reason for each case.
func TestChatConversion(t *testing.T) {
	cases := []struct {
		name, msg string
		want      history.Message
		bad       bool
	}{
		{"string content", `{"role":"user","content":"hi"}`, history.Message{Role: history.RoleUser, Content: "hi"}, false},
		{"developer is system", `{"role":"developer","content":"rules"}`, history.Message{Role: history.RoleSystem, Content: "rules"}, false},
		{"unknown members are ignored", `{"role":"user","content":"hi","x":{"y":[1]}}`, history.Message{Role: history.RoleUser, Content: "hi"}, false},
		{"tool result pairs by id", `{"role":"tool","tool_call_id":"c1","content":"out"}`, history.Message{Role: history.RoleTool, ToolCallID: "c1", Content: "out"}, false},
		{"legacy function result", `{"role":"function","name":"f","content":"out"}`, history.Message{Role: history.RoleTool, ToolCallID: legacyCallID, Name: "f", Content: "out"}, false},
		{"tool message without id does not pair", `{"role":"tool","content":"out"}`, history.Message{}, true},
		{"call without id cannot pair", `{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}`, history.Message{}, true},
		{"two calls with one id", `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"a","function":{"name":"g"}}]}`, history.Message{}, true},
		{"unknown role is not guessed", `{"role":"critic","content":"x"}`, history.Message{}, true},
		{"not an object", `["role"]`, history.Message{}, true},
		{"content of the wrong type", `{"role":"user","content":12}`, history.Message{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := json.RawMessage(c.msg)
			m, err := chatToMessage(&raw)
			if (err != nil) != c.bad {
				t.Fatalf("err %v, want bad=%v", err, c.bad)
			}
			if !c.bad && (m.Role != c.want.Role || m.Content != c.want.Content || m.ToolCallID != c.want.ToolCallID || m.Name != c.want.Name) {
				t.Fatalf("got %+v, want %+v", m, c.want)
			}
		})
	}
}

// TestChatCalls checks the rewriting of an assistant message's calls: a
// call the sweep stripped goes, a call whose arguments were cleared gets
// them and keeps its other members, and a message left without calls
// loses its tool_calls member.
func TestChatCalls(t *testing.T) {
	orig := json.RawMessage(`{"role":"assistant", "tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}","x":2},"y":3}, {"id":"b","type":"custom","custom":{"name":"g","input":"in"}}],"x_after":true}`)
	got := chatCalls(orig, &history.Message{ToolCalls: []history.ToolCall{{ID: "a", Arguments: "{}"}}})
	want := `{"role":"assistant", "tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}","x":2},"y":3}],"x_after":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = chatCalls(orig, &history.Message{ToolCalls: []history.ToolCall{{ID: "b", Arguments: "in"}}})
	want = `{"role":"assistant", "tool_calls":[{"id":"b","type":"custom","custom":{"name":"g","input":"in"}}],"x_after":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = chatCalls(orig, &history.Message{})
	want = `{"role":"assistant", "x_after":true}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	legacy := json.RawMessage(`{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{\"a\":1}"}}`)
	if got := chatCalls(legacy, &history.Message{}); string(got) != `{"role":"assistant","content":null}` {
		t.Errorf("legacy call kept: %s", got)
	}
	if !json.Valid(orig) {
		t.Fatal("test body invalid")
	}
}
