package quality

import (
	"testing"

	history "github.com/histrim/history"
)

func call(id, name, args string) history.Message {
	return history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

func result(id, content string) history.Message {
	return history.Message{Role: history.RoleTool, ToolCallID: id, Content: content}
}

// opts is a stateless policy with o.
func opts(o ...history.Option) Policy {
	return Policy{Name: "test", Options: func(*Session) []history.Option { return o }}
}

func TestReplay(t *testing.T) {
	big := "func loadDefaults_v2() {}\n" + string(make([]byte, 4000))
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "go"},
		call("a", "read", `{"path":"/x"}`),
		result("a", big),
		call("b", "read", `{"path":"/y"}`),
		result("b", "small"),
		{Role: history.RoleAssistant, Content: "loadDefaults_v2 is there"},
	}
	s := NewSession("t", msgs)
	if len(s.Refs) != 1 || s.Goal != 0 {
		t.Fatalf("refs %+v goal %d", s.Refs, s.Goal)
	}
	// A budget that needs the big result elided: the reference is lost
	// with the README's policy, kept whole by nothing else.
	st, err := Replay(&s, s.Peak/3, opts(history.WithElision(history.ElideOptions{KeepRecent: -1}), history.WithStepTrim()))
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests == 0 || st.Refs != 1 || st.Kept != 0 {
		t.Fatalf("%+v", st)
	}
	// With a digest, the line that defines it stays in view.
	st, err = Replay(&s, s.Peak/3, opts(history.WithElision(history.ElideOptions{KeepRecent: -1, Digest: 100}), history.WithStepTrim()))
	if err != nil {
		t.Fatal(err)
	}
	if st.Refs != 1 || st.Kept != 1 || st.Recall() != 1 {
		t.Fatalf("%+v", st)
	}
}
