package goopenai_test

import (
	"fmt"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/goopenai"
	openai "github.com/sashabaranov/go-openai"
)

// Trim keeps the system prompt and the most recent whole turns, with the
// tool call and its result together, behind one notice.
func ExampleTrim() {
	long := strings.Repeat("lorem ipsum ", 300)
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a coding agent."},
		{Role: openai.ChatMessageRoleUser, Content: "Read main.go"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "call_1", Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"main.go"}`}}}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Content: long},
		{Role: openai.ChatMessageRoleAssistant, Content: "main.go starts the server."},
		{Role: openai.ChatMessageRoleUser, Content: "Now read go.mod"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "call_2", Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"go.mod"}`}}}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "call_2", Content: "module example.com/app"},
	}
	out, res, err := goopenai.Trim(msgs, 200)
	if err != nil {
		panic(err)
	}
	for _, m := range out {
		fmt.Printf("%-9s %q %d call(s)\n", m.Role, m.Content, len(m.ToolCalls))
	}
	fmt.Println(res.DroppedTurns, "turn dropped; valid:", goopenai.Validate(out) == nil, "; notice:", out[1].Content == history.BreadcrumbText)
	// Output:
	// system    "You are a coding agent." 0 call(s)
	// user      "[earlier turns omitted to fit the context window]" 0 call(s)
	// user      "Now read go.mod" 0 call(s)
	// assistant "" 1 call(s)
	// tool      "module example.com/app" 0 call(s)
	// 1 turn dropped; valid: true ; notice: true
}
