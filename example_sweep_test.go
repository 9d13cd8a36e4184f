package history_test

import (
	"fmt"

	"github.com/histrim/history"
)

func ExampleSweepOrphans() {
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "Check both."},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "a", Name: "read"}, {ID: "b", Name: "read"}}},
		{Role: history.RoleTool, ToolCallID: "a", Content: "ok"},
		{Role: history.RoleTool, ToolCallID: "zzz", Content: "answer to a call nobody made"},
	}
	out, rep := history.SweepOrphans(msgs)
	fmt.Printf("%d messages, %d orphan result(s), %d unanswered call(s)\n", len(out), rep.Results, rep.Calls)
	fmt.Println("calls left:", len(out[1].ToolCalls), "- caller's message still has", len(msgs[1].ToolCalls))
	// Output:
	// 3 messages, 1 orphan result(s), 1 unanswered call(s)
	// calls left: 1 - caller's message still has 2
}
