package tiktoken_test

import (
	"fmt"

	"github.com/histrim/history"
	"github.com/histrim/history/tiktoken"
)

func ExampleNew() {
	c, err := tiktoken.New("o200k_base")
	if err != nil {
		panic(err)
	}
	fmt.Println(c.CountText("hello world"))
	fmt.Println(c.CountText("<|endoftext|>")) // special tokens count as ordinary text
	// Output:
	// 2
	// 7
}

func ExampleForModel() {
	for _, model := range []string{"gpt-4o-2024-08-06", "gpt-4-turbo", "o3-mini", "claude-sonnet-4"} {
		c, err := tiktoken.ForModel(model)
		if err != nil {
			fmt.Println(model, "->", err)
			continue
		}
		fmt.Println(model, "->", c.Encoding())
	}
	// Output:
	// gpt-4o-2024-08-06 -> o200k_base
	// gpt-4-turbo -> cl100k_base
	// o3-mini -> o200k_base
	// claude-sonnet-4 -> history/tiktoken: unknown model "claude-sonnet-4"
}

func ExampleCounter_CountRequest() {
	c, err := tiktoken.ForModel("gpt-4o")
	if err != nil {
		panic(err)
	}
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are terse."},
		{Role: history.RoleUser, Content: "hello world"},
	}
	// Per message: 3 framing + 1 role + content; per request: 3 reply priming.
	fmt.Println(c.CountMessage(msgs[1]))
	// With the trimmer: history.WithCounter(history.NewCache(c, 0)).
	fmt.Println(c.CountRequest(msgs))
	// Output:
	// 6
	// 17
}
