package anthropicmsg

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/histrim/history"
)

// TestDescribeJSON: the wire format's blocks read as the rules need them,
// whatever SDK carried them.
func TestDescribeJSON(t *testing.T) {
	text := func(s string) history.Part { return history.Part{Type: history.PartText, Text: s} }
	reasoning := func(s string) history.Part { return history.Part{Type: history.PartReasoning, Text: s} }
	tests := []struct {
		raw    string
		want   Info
		reason string
	}{
		{`{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}`, Info{Type: "text", Parts: []history.Part{text("hi")}, Cache: true}, "a marker is seen"},
		{`{"type":"tool_use","id":"t1","name":"read","input":{"p":1}}`, Info{Type: "tool_use", ID: "t1", Name: "read", Input: `{"p":1}`}, "the input as JSON text"},
		{`{"type":"tool_result","tool_use_id":"t1","content":"out"}`, Info{Type: "tool_result", ResultFor: "t1", Parts: []history.Part{text("out")}}, "a string content"},
		{`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"search_result","x":1}]}`,
			Info{Type: "tool_result", ResultFor: "t1", Parts: []history.Part{text("a"), text(`{"type":"search_result","x":1}`)}}, "other items count their JSON"},
		{`{"type":"thinking","thinking":"t","signature":"longer signature"}`, Info{Type: "thinking", Parts: []history.Part{reasoning("t"), reasoning("longer signature")}}, "the signature carries the thinking when longer"},
		{`{"type":"redacted_thinking","data":"xyz"}`, Info{Type: "redacted_thinking", Parts: []history.Part{reasoning("xyz")}}, "its data"},
		{`{"type":"compaction","content":"sum","encrypted_content":"e","signature":"s"}`,
			Info{Type: "compaction", Parts: []history.Part{text("sum")}, Compaction: &Compaction{Payload: "e\x00s"}}, "its summary counts"},
		{`{"type":"compaction","content":null,"encrypted_content":"e"}`, Info{Type: "compaction", Compaction: &Compaction{Null: true, Payload: "e"}}, "a failed compaction: a no-op"},
		{`{"type":"compaction","content":"","encrypted_content":"e"}`, Info{Type: "compaction", Compaction: &Compaction{Empty: true, Payload: "e"}}, "empty: never sent"},
		{`{"type":"document","title":"T","source":{"type":"text","data":"body"}}`, Info{Type: "document", Parts: []history.Part{text("T\n"), text("body")}}, "title, then the text"},
		{`{"type":"web_search_tool_result","tool_use_id":"s"}`, Info{Type: "web_search_tool_result", Parts: []history.Part{text(`{"type":"web_search_tool_result","tool_use_id":"s"}`)}}, "server tools count their JSON"},
	}
	for _, tc := range tests {
		if got := DescribeJSON(json.RawMessage(tc.raw)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %s\n got %+v\nwant %+v", tc.reason, tc.raw, got, tc.want)
		}
	}
}

// TestBoundary: the latest compaction with content bounds what the API
// reads, in a message of any role but system (the API refuses one that is
// not the first block of the messages, compaction_block_misplaced).
func TestBoundary(t *testing.T) {
	c := func(s string) Info { return DescribeJSON(json.RawMessage(`{"type":"compaction","content":` + s + `}`)) }
	tx := Info{Type: "text"}
	rs := []read[struct{}]{
		{role: RoleAssistant, infos: []Info{c(`"one"`), tx}},
		{role: RoleUser, infos: []Info{c(`"in a user message"`)}},
		{role: RoleAssistant, infos: []Info{tx, c(`"two"`), c(`null`), c(`""`)}},
	}
	if i, j := Boundary(rs); i != 2 || j != 1 {
		t.Fatalf("got %d, %d; want the latest with content, 2, 1", i, j)
	}
	if i, j := Boundary(rs[:2]); i != 1 || j != 0 {
		t.Fatalf("got %d, %d; a user message's compaction is the latest here, 1, 0", i, j)
	}
	sys := []read[struct{}]{{role: RoleSystem, infos: []Info{c(`"sys"`)}}}
	if i, _ := Boundary(sys); i != -1 {
		t.Fatalf("a system message holds no boundary (the API refuses it there)")
	}
	if (*Compaction)(nil).Boundary() {
		t.Fatal("no compaction is no boundary")
	}
}
