package history_test

import (
	"fmt"
	"strings"

	"github.com/histrim/history"
)

func ExampleElideToolResults() {
	file := strings.Repeat("line of file content\n", 200)
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "Fix the bug in parser.go."},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "1", Name: "read_file"}}},
		{Role: history.RoleTool, ToolCallID: "1", Content: file},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "2", Name: "read_file"}}},
		{Role: history.RoleTool, ToolCallID: "2", Content: file},
	}
	res, err := history.ElideToolResults(msgs, history.ElideOptions{
		KeepRecent: 1, // the newest result stays
		Archive: func(m history.Message) error {
			fmt.Println("archived result of call", m.ToolCallID)
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Elided, "elided,", len(res.Messages), "messages kept")
	fmt.Println(res.Messages[2].Content)
	// Output:
	// archived result of call 1
	// 1 elided, 5 messages kept
	// [elided tool result: read_file, 892 tokens; re-run the tool if needed]
}
