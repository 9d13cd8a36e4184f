package refs

import (
	"slices"
	"testing"

	history "github.com/histrim/history"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		text   string
		want   []string
		reason string
	}{
		{"see /repo/plan.go now", []string{"/repo/plan.go", "plan.go", "repo/plan.go"}, "a path, its suffixes and its file name"},
		{"call history.TrimToRecentTurns(msgs)", []string{"TrimToRecentTurns", "history.TrimToRecentTurns"}, "a dotted name and its camelCase part"},
		{"the tool_call_id field", []string{"tool_call_id"}, "underscored"},
		{"reservation ZFA04Y and commit 0629d16", []string{"0629d16", "ZFA04Y"}, "ids and hashes"},
		{"error E0308 and ENOENT", []string{"E0308", "ENOENT"}, "error codes"},
		{"on 2024-05-21 at 1.10.0", nil, "dates and versions are no ids"},
		{"Please read the file and fix it.", nil, "plain words are not salient"},
		{"id 258c7280-ae70-4798-800f-63464d01a85d", []string{"258c7280-ae70-4798-800f-63464d01a85d"}, "a UUID"},
	}
	for _, tc := range tests {
		var got []string
		for tok := range tokensOf(tc.text, nil) {
			got = append(got, tok)
		}
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: tokensOf(%q) = %q, want %q", tc.reason, tc.text, got, want)
		}
	}
}

func TestVisible(t *testing.T) {
	if !Visible("open /repo/plan.go", "plan.go") || Visible("TrimToRecentTurns", "Trim") || !Visible("x(Trim)", "Trim") {
		t.Fatal("visible must match whole tokens only")
	}
}

func call(id, name, args string) history.Message {
	return history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

func result(id, content string) history.Message {
	return history.Message{Role: history.RoleTool, ToolCallID: id, Content: content}
}

func TestReferences(t *testing.T) {
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You edit code. Mention sharedName freely."},
		{Role: history.RoleUser, Content: "Fix parseConfig in /repo/config.go"},
		call("a", "read", `{"path":"/repo/config.go"}`),
		result("a", "func parseConfig() {}\nfunc loadDefaults_v2() {}\nvar sharedName = 1\n// /repo/config.go"),
		{Role: history.RoleAssistant, Content: "I will call loadDefaults_v2 and newHelper."},
		call("b", "write", `{"path":"/repo/helper.go","content":"func newHelper() {}"}`),
		result("b", "wrote newHelper to /repo/helper.go"),
		{Role: history.RoleAssistant, Content: "Now loadDefaults_v2 calls newHelper; see /repo/config.go."},
	}
	refs := Of(msgs)
	want := []Ref{{T: 4, R: 3, Tokens: []string{"loadDefaults_v2"}}, {T: 7, R: 3, Tokens: []string{"loadDefaults_v2"}}}
	// parseConfig and /repo/config.go: the user wrote them; sharedName: the
	// system prompt; newHelper: the model wrote it first (and R=6 echoes
	// the call's arguments).
	if len(refs) != len(want) {
		t.Fatalf("refs %+v, want %+v", refs, want)
	}
	for i := range want {
		if refs[i].T != want[i].T || refs[i].R != want[i].R || !slices.Equal(refs[i].Tokens, want[i].Tokens) {
			t.Fatalf("refs %+v, want %+v", refs, want)
		}
	}
}
