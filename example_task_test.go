package history_test

import (
	"fmt"
	"strings"

	"github.com/histrim/history"
)

// A runtime injected a task notification after the agent's last step: by
// default it opens a new turn, with the rule it belongs to the task.
func ExampleUserWritten() {
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "Migrate the config loader"},
		{Role: history.RoleAssistant, Content: "Started the migration in the background."},
		{Role: history.RoleUser, Content: "<task-notification>\n<task-id>b7636e2</task-id>\n<status>completed</status>\n</task-notification>"},
	}
	fmt.Println(len(history.Turns(msgs)), "turns by default")
	fmt.Println(len(history.Turns(msgs, history.WithTurnStart(history.UserWritten))), "turn with UserWritten")
	// Output:
	// 2 turns by default
	// 1 turn with UserWritten
}

// An elided result keeps a digest: the target of its call, its head and
// tail, and the lines it is most likely to be used for.
func ExampleElideToolResults_digest() {
	var file strings.Builder
	for i := 1; i <= 60; i++ {
		switch i {
		case 30:
			file.WriteString("func LoadConfig(path string) (*Config, error) {\n")
		case 45:
			file.WriteString("\treturn nil, ErrNoConfig\n")
		default:
			file.WriteString("\t// nothing to see here, a line of comment\n")
		}
	}
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "Why does loading fail?"},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"config.go"}`}}},
		{Role: history.RoleTool, ToolCallID: "c1", Content: file.String()},
		{Role: history.RoleAssistant, Content: "LoadConfig returns ErrNoConfig when the file is missing."},
	}
	res, _ := history.ElideToolResults(msgs, history.ElideOptions{KeepRecent: -1, Digest: 80})
	fmt.Println(res.Messages[2].Content)
	// Output:
	// [elided tool result: read_file, 607 tokens; re-run the tool if needed]
	// excerpt of config.go:
	// 	// nothing to see here, a line of comment
	// 	// nothing to see here, a line of comment
	// [... 27 lines]
	// func LoadConfig(path string) (*Config, error) {
	// [... 14 lines]
	// 	return nil, ErrNoConfig
	// [... 14 lines]
	// 	// nothing to see here, a line of comment
}

// The newest result of a task does not fit the budget: WithTask cuts it to
// a head and tail digest instead of failing the request, and keeps the
// task's opening request.
func ExampleWithTask() {
	var log strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&log, "ok   pkg/module%03d\t0.%03ds\n", i, i)
	}
	log.WriteString("FAIL pkg/parser\tTestParse: unexpected EOF\n")
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent."},
		{Role: history.RoleUser, Content: "Make the test suite pass."},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "t1", Name: "bash", Arguments: `{"command":"go test ./..."}`}}},
		{Role: history.RoleTool, ToolCallID: "t1", Content: log.String()},
	}
	res, err := history.TrimToRecentTurns(msgs, 400, history.WithTask(1, history.ElideOptions{}))
	fmt.Println(err, res.TokensAfter <= 400, res.CutResults)
	cut := res.Messages[3].Content
	fmt.Println(cut[:strings.IndexByte(cut, '\n')])
	fmt.Println(strings.Contains(cut, "FAIL pkg/parser"))
	// Output:
	// <nil> true 1
	// [cut tool result: bash, 3792 tokens cut to fit the context window; head, tail and key lines below; re-run the tool for the rest]
	// true
}

// Per-tool rules: the todo list is never elided, the listing goes first.
func ExampleToolPolicy() {
	long := strings.Repeat("a line of tool output that takes some room\n", 40)
	call := func(id, name string) history.Message {
		return history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: name, Arguments: `{"path":"` + id + `"}`}}}
	}
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "Ship the release."},
		call("t", "todo_write"), {Role: history.RoleTool, ToolCallID: "t", Content: long},
		call("r", "read_file"), {Role: history.RoleTool, ToolCallID: "r", Content: long},
		call("l", "list_files"), {Role: history.RoleTool, ToolCallID: "l", Content: long},
		call("n", "read_file"), {Role: history.RoleTool, ToolCallID: "n", Content: long},
	}
	opts := history.ElideOptions{KeepRecent: 1, Tools: []history.ToolPolicy{
		{Name: "todo_write", Keep: true},
		{Name: "list_files", First: true},
	}}
	budget := history.Estimate(msgs, nil) - 300 // one result must go
	res, _ := history.TrimToRecentTurns(msgs, budget, history.WithElision(opts))
	for _, m := range res.Messages {
		if m.Role == history.RoleTool {
			fmt.Println(m.ToolCallID, m.Kind == history.KindElided)
		}
	}
	// Output:
	// t false
	// r false
	// l true
	// n false
}

// The goal is an index, or -1 for none: -1 pins nothing, and the latest
// request is kept as every latest turn is. Here the task was opened two
// turns ago and the user has since written "Continue."; at this budget
// only the latest turn fits besides a pinned goal.
func ExampleWithTask_noGoal() {
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent."},
		{Role: history.RoleUser, Content: "Port the parser to the new AST, keeping every exported name."},
		{Role: history.RoleAssistant, Content: strings.Repeat("Ported the lexer and half of the parser. ", 20)},
		{Role: history.RoleUser, Content: "Continue."},
		{Role: history.RoleAssistant, Content: "Porting the rest of the parser now."},
	}
	holds := func(res history.Result, text string) bool {
		for _, m := range res.Messages {
			if m.Content == text {
				return true
			}
		}
		return false
	}
	for _, goal := range []int{1, -1} {
		res, _ := history.TrimToRecentTurns(msgs, 80, history.WithTask(goal, history.ElideOptions{}))
		fmt.Printf("goal %d: the opening request kept %v, the latest request kept %v\n",
			goal, holds(res, msgs[1].Content), holds(res, msgs[3].Content))
	}
	// Output:
	// goal 1: the opening request kept true, the latest request kept true
	// goal -1: the opening request kept false, the latest request kept true
}
