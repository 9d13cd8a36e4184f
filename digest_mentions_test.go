package history

import (
	"strconv"
	"strings"
	"testing"
)

// symbols returns a listing of n definitions, fn_1 .. fn_n, one a line,
// each as salient as the others.
func symbols(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("def load_item_" + strconv.Itoa(i) + "(path): ...\n")
	}
	return b.String()
}

// TestDigestPrefersMentions elides an old listing of 120 equally salient
// definitions with a small digest, and checks which lines the digest
// keeps, as later messages go on.
func TestDigestPrefersMentions(t *testing.T) {
	read := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "r", Name: "read", Arguments: `{"path":"/repo/items.py"}`}}}
	tests := []struct {
		later  []Message
		want   []string // lines the digest shows
		absent []string // lines it does not
		reason string
	}{
		{
			later:  []Message{{Role: RoleAssistant, Content: "The bug is in load_item_77; load_item_93 calls it."}},
			want:   []string{"load_item_77(path)", "load_item_93(path)"},
			reason: "the definitions the agent went on to mention",
		},
		{
			later: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "e", Name: "edit", Arguments: `{"path":"/repo/items.py","old":"load_item_64"}`}}},
				{Role: RoleTool, ToolCallID: "e", Content: "edited"}},
			want:   []string{"load_item_64(path)"},
			reason: "a name in a later call's arguments",
		},
		{
			later: []Message{{Role: RoleAssistant, Content: "Now load_item_55 and load_item_56.", ToolCalls: []ToolCall{{ID: "g", Name: "grep", Arguments: `{"q":"x"}`}}},
				{Role: RoleTool, ToolCallID: "g", Content: "items.py: def load_item_55(path): ..."}},
			want:   []string{"load_item_56(path)"},
			absent: []string{"load_item_55(path)"},
			reason: "a later result shows load_item_55 again: the credit goes to the line only this result shows",
		},
	}
	for _, tc := range tests {
		msgs := []Message{
			{Role: RoleUser, Content: "fix the loader"},
			read,
			{Role: RoleTool, ToolCallID: "r", Content: symbols(120)},
		}
		msgs = append(msgs, tc.later...)
		msgs = append(msgs, Message{Role: RoleUser, Content: "go on"})
		res, err := ElideToolResults(msgs, ElideOptions{KeepRecent: -1, Digest: 80})
		if err != nil {
			t.Fatal(err)
		}
		d := res.Messages[2].Content
		for _, w := range tc.want {
			if !strings.Contains(d, w) {
				t.Errorf("%s: the digest leaves out %q:\n%s", tc.reason, w, d)
			}
		}
		for _, w := range tc.absent {
			if strings.Contains(d, w) {
				t.Errorf("%s: the digest shows %q:\n%s", tc.reason, w, d)
			}
		}
	}
}
