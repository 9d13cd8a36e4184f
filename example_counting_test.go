package history_test

import (
	"fmt"

	"github.com/histrim/history"
)

// A runtime that trims before every request wraps its exact counter in a
// cache once, and passes it to every trim: each message is counted once.
func ExampleNewCache() {
	var counted int
	slow := history.CounterFunc(func(m history.Message) int {
		counted++
		return history.Heuristic().CountMessage(m)
	})
	cached := history.WithCounter(history.NewCache(slow, 1000))

	msgs := []history.Message{
		{Role: history.RoleUser, Content: "hi"},
		{Role: history.RoleAssistant, Content: "hello"},
	}
	if _, err := history.TrimToRecentTurns(msgs, 1000, cached); err != nil {
		fmt.Println(err)
	}
	msgs = append(msgs, history.Message{Role: history.RoleUser, Content: "how are you?"})
	if _, err := history.TrimToRecentTurns(msgs, 1000, cached); err != nil {
		fmt.Println(err)
	}
	fmt.Println("messages counted:", counted)
	// Output: messages counted: 3
}
