package history_test

import (
	"errors"
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
			fmt.Printf("dropped %d turn(s), %d message(s); sending %d tokens\n", e.DroppedTurns, e.DroppedMessages, e.TokensAfter)
		}))
	if err != nil {
		fmt.Println("error:", err)
	}
	for _, m := range res.Messages {
		fmt.Printf("%-9s %s\n", m.Role, m.Content)
	}
	// Output:
	// dropped 1 turn(s), 4 message(s); sending 34 tokens
	// system    You are a coding agent.
	// user      [earlier turns omitted to fit the context window]
	// user      Now summarise README.md.
}

// The latest turn is always kept. When it does not fit, the Result still
// holds a usable history and the error says by how much it is over.
func ExampleTrimToRecentTurns_latestTurnTooLarge() {
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent."},
		{Role: history.RoleUser, Content: "Hello."},
		{Role: history.RoleAssistant, Content: "Hi."},
		{Role: history.RoleUser, Content: "Review this diff: " + strings.Repeat("+ added line\n", 50)},
	}
	res, err := history.TrimToRecentTurns(msgs, 100)
	var be *history.BudgetError
	if errors.As(err, &be) {
		fmt.Printf("over budget: need %d tokens, budget %d\n", be.Need, be.Budget)
	}
	fmt.Println(errors.Is(err, history.ErrLatestTurnTooLarge), len(res.Messages), "messages to send")
	// Output:
	// over budget: need 196 tokens, budget 100
	// true 3 messages to send
}

// An option whose value is out of its domain makes the call fail before it
// does anything, with an *OptionError that wraps ErrInvalidOption.
func ExampleOptionError() {
	msgs := []history.Message{{Role: history.RoleUser, Content: "Hello."}}

	_, err := history.TrimToRecentTurns(msgs, 1000, history.WithLowWater(1.5))
	fmt.Println(errors.Is(err, history.ErrInvalidOption))
	var oe *history.OptionError
	if errors.As(err, &oe) {
		fmt.Printf("option %s: %s\n", oe.Option, oe.Reason)
	}

	// An invalid breadcrumb is also an invalid message: the error wraps a
	// *MessageError with Index -1.
	_, err = history.TrimToRecentTurns(msgs, 1000,
		history.WithBreadcrumb(history.Message{Role: history.RoleTool, ToolCallID: "x"}))
	var me *history.MessageError
	fmt.Println(errors.Is(err, history.ErrInvalidOption), errors.As(err, &me) && me.Index == -1)
	fmt.Println(err)
	// Output:
	// true
	// option WithLowWater: fraction 1.5 is outside (0, 1)
	// true true
	// history: invalid option WithBreadcrumb: invalid breadcrumb: history: invalid message in options: a breadcrumb message cannot be part of a tool exchange
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
