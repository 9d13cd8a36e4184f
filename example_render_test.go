package history_test

import (
	"fmt"

	"github.com/histrim/history"
)

func ExampleRenderTranscript() {
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "What is the capital of France?"},
		{Role: history.RoleAssistant, Content: "Paris."},
		{Role: history.RoleUser, Content: "And of Italy?"},
		{Role: history.RoleAssistant, Content: "Rome."},
	}
	fmt.Println(history.RenderTranscript(msgs, 70, history.RenderOptions{}))
	// Output:
	// [earlier conversation truncated]
	// user: And of Italy?
	// assistant: Rome.
}
