package fit_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	"github.com/histrim/history/models"
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

// The two other policy points: one option each, after the model's name.
// With Cheaper a maintenance point comes at 0.65 of the budget and trims
// down to 0.32; with KeepMore it comes at the budget and trims down to 0.9.
func ExampleCheaper() {
	m := models.Model{Name: "local", Window: 10_000, Output: 2_000}
	transcript := []history.Message{{Role: history.RoleSystem, Content: "You are a coding agent."}}
	for i := range 40 {
		transcript = append(transcript, history.Message{Role: history.RoleUser, Content: strings.Repeat(fmt.Sprintf("step %d ", i), 150)})
		transcript = append(transcript, history.Message{Role: history.RoleAssistant, Content: "done"})
	}
	for _, p := range []struct {
		name string
		opt  history.Option
	}{{"Cheaper", fit.Cheaper()}, {"KeepMore", fit.KeepMore()}} {
		res, err := fit.For(m, p.opt).Fit(context.Background(), transcript)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %.2f of the budget\n", p.name, float64(res.TokensAfter)/float64(res.Budget))
	}
	// Output:
	// Cheaper: 0.28 of the budget
	// KeepMore: 0.88 of the budget
}
