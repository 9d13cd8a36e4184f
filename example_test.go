package history_test

import (
	"fmt"
	"log/slog"
	"os"
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
			fmt.Printf("dropped %d turn(s), %d -> %d tokens\n", e.DroppedTurns, e.TokensBefore, e.TokensAfter)
		}))
	if err != nil {
		fmt.Println("error:", err)
	}
	for _, m := range res.Messages {
		fmt.Printf("%-9s %s\n", m.Role, m.Content)
	}
	// Output:
	// dropped 1 turn(s), 56 -> 34 tokens
	// system    You are a coding agent.
	// user      [earlier turns omitted to fit the context window]
	// user      Now summarise README.md.
}

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

func ExampleBudget_Input() {
	b := history.Budget{Window: 128_000, Output: 8_000, Reserve: 2_000, Limit: 100_000}
	fmt.Println(b.Input())
	// Output: 100000
}

func ExampleApply() {
	// The runtime's own message type, with fields the library never sees.
	type native struct {
		Text         string
		CacheControl bool
	}
	natives := []native{{"system prompt", true}, {"old question", false}, {"old answer", false}, {"new question", false}}
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: natives[0].Text},
		{Role: history.RoleUser, Content: natives[1].Text},
		{Role: history.RoleAssistant, Content: natives[2].Text},
		{Role: history.RoleUser, Content: natives[3].Text},
	}
	res, _ := history.TrimToRecentTurns(msgs, 24)
	out := history.Apply(natives, res, func() native { return native{Text: history.BreadcrumbText} })
	for _, n := range out {
		fmt.Printf("%q cache=%v\n", n.Text, n.CacheControl)
	}
	// Output:
	// "system prompt" cache=true
	// "[earlier turns omitted to fit the context window]" cache=false
	// "new question" cache=false
}

func ExampleLogTrims() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // keep the output stable
			}
			return a
		},
	}))
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "first question, long enough to matter"},
		{Role: history.RoleAssistant, Content: "first answer, long enough to matter"},
		{Role: history.RoleUser, Content: "second question"},
	}
	_, _ = history.TrimToRecentTurns(msgs, 25,
		history.WithOnTrim(history.LogTrims(logger)),
		history.WithLabels(map[string]string{"session_id": "s-42"}))
	// Output:
	// level=INFO msg="history trimmed" trim.type=history_trimmed trim.reason=budget trim.dropped_messages=2 trim.dropped_turns=1 trim.kept_turns=1 trim.dropped_steps=0 trim.elided_results=0 trim.tokens_before=32 trim.tokens_after=23 trim.budget=25 trim.attempt=0 trim.session_id=s-42
}

func ExampleElideToolResults() {
	big := strings.Repeat("line of file content\n", 200)
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "Fix the bug in parser.go."},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "1", Name: "read_file"}}},
		{Role: history.RoleTool, ToolCallID: "1", Content: big},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "2", Name: "read_file"}}},
		{Role: history.RoleTool, ToolCallID: "2", Content: big},
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
