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

// Under WithElision a trim first replaces old tool results with
// placeholders, oldest first and only as many as needed, and drops whole
// turns only when that is not enough. Here eliding one result suffices:
// the first request, and the answer to it, stay.
func ExampleWithElision() {
	logText := strings.Repeat("2024-05-01 12:00:00 INFO request served\n", 100)
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are an operations agent."},
		{Role: history.RoleUser, Content: "Why did the service restart?"},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "1", Name: "read_log"}}},
		{Role: history.RoleTool, ToolCallID: "1", Content: logText},
		{Role: history.RoleAssistant, Content: "It ran out of memory at 12:03."},
		{Role: history.RoleUser, Content: "Did it happen again today?"},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "2", Name: "read_log"}}},
		{Role: history.RoleTool, ToolCallID: "2", Content: logText},
	}
	res, err := history.TrimToRecentTurns(msgs, 2000, history.WithElision(history.ElideOptions{KeepRecent: 1}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d -> %d tokens: %d result(s) elided, %d turn(s) dropped\n",
		res.TokensBefore, res.TokensAfter, res.ElidedResults, res.DroppedTurns)
	for i, m := range res.Messages {
		if m.Kind == history.KindElided {
			fmt.Printf("message %d: %s\n", i, m.Content)
		}
	}
	// Output:
	// 3154 -> 1630 tokens: 1 result(s) elided, 0 turn(s) dropped
	// message 3: [elided tool result: read_log, 1546 tokens; re-run the tool if needed]
}
