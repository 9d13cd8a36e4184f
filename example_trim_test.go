package history_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/histrim/history"
)

func ExampleTrimToRecentTurns() {
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent."},
		{Role: history.RoleUser, Content: "List the files."},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "call_1", Name: "ls", Arguments: `{}`}}},
		{Role: history.RoleTool, ToolCallID: "call_1", Content: "main.go go.mod README.md"},
		{Role: history.RoleAssistant, Content: "There are three files."},
		{Role: history.RoleUser, Content: "Now summarise README.md."},
	}
	res, err := history.TrimToRecentTurns(msgs, 40,
		history.WithOnTrim(func(e history.Event) {
			fmt.Printf("dropped %d turn(s), %d -> %d tokens\n", e.DroppedTurns, e.TokensBefore, e.TokensAfter)
		}))
	if err != nil {
		fmt.Println("error:", err)
	}
	for _, m := range res.Messages {
		fmt.Printf("%-9s %s\n", m.Role, m.Content)
	}
	// Output:
	// dropped 1 turn(s), 56 -> 34 tokens
	// system    You are a coding agent.
	// user      [earlier turns omitted to fit the context window]
	// user      Now summarise README.md.
}

func ExampleWithStepTrim() {
	// One request followed by many tool steps: there is no older turn to drop.
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent."},
		{Role: history.RoleUser, Content: "Make the tests pass."},
	}
	for i := range 6 {
		id := strconv.Itoa(i)
		msgs = append(msgs,
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "run_tests"}}},
			history.Message{Role: history.RoleTool, ToolCallID: id, Content: strings.Repeat("FAIL test ", 40)})
	}
	res, err := history.TrimToRecentTurns(msgs, 300, history.WithStepTrim())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("dropped %d steps (%d messages), kept %d messages:\n", res.DroppedSteps, res.DroppedMessages, len(res.Messages))
	for _, m := range res.Messages[:3] {
		fmt.Println(" ", m.Role, m.Content)
	}
	// Output:
	// dropped 4 steps (8 messages), kept 7 messages:
	//   system You are a coding agent.
	//   user Make the tests pass.
	//   user [earlier steps of this task omitted to fit the context window]
}
