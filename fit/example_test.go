package fit_test

import (
	"context"
	"fmt"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
)

// The door: name the model, trim before every request, tell the Trimmer
// what the provider counted.
func Example() {
	tr, err := fit.New("claude-sonnet-4-5")
	if err != nil {
		panic(err)
	}
	transcript := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent."},
		{Role: history.RoleUser, Content: "Fix the failing test in parser_test.go."},
	}
	res, err := tr.Fit(context.Background(), transcript)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Messages), "messages, budget", res.Budget)
	// ... send res.Messages; then, from the response's usage:
	fmt.Println(tr.Observe(res.TokensAfter + 12))
	// Output:
	// 2 messages, budget 126000
	// used
}
