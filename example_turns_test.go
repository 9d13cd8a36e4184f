package history_test

import (
	"fmt"
	"strings"

	"github.com/histrim/history"
)

// Turns reports the turns a trim works with. A runtime that sends tool
// results back as user text tells the library with WithTurnStart, so that
// such a message stays in the turn of the request that caused it.
func ExampleTurns() {
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent."},
		{Role: history.RoleUser, Content: "Fix the failing test."},
		{Role: history.RoleAssistant, Content: "Running the tests."},
		{Role: history.RoleUser, Content: "[Tool results] FAIL TestParse"},
		{Role: history.RoleAssistant, Content: "Fixed the parser."},
		{Role: history.RoleUser, Content: "Thanks. Now update the docs."},
	}
	show := func(turns []history.Turn) {
		for _, tn := range turns {
			fmt.Printf("  [%d, %d) starts with %q\n", tn.Start, tn.End, msgs[tn.Start].Content)
		}
	}

	fmt.Println("default rule:")
	show(history.Turns(msgs))

	toolText := history.WithTurnStart(func(m history.Message) bool {
		return m.Role == history.RoleUser && !strings.HasPrefix(m.Content, "[Tool results]")
	})
	fmt.Println("WithTurnStart:")
	show(history.Turns(msgs, toolText))
	// The same option goes to the trim, which then keeps the test run with
	// the request that caused it:
	res, err := history.TrimToRecentTurns(msgs, 1000, toolText)
	fmt.Println(res.KeptTurns, "turns kept,", err)
	// Output:
	// default rule:
	//   [1, 3) starts with "Fix the failing test."
	//   [3, 5) starts with "[Tool results] FAIL TestParse"
	//   [5, 6) starts with "Thanks. Now update the docs."
	// WithTurnStart:
	//   [1, 5) starts with "Fix the failing test."
	//   [5, 6) starts with "Thanks. Now update the docs."
	// 2 turns kept, <nil>
}
