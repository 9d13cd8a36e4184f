package history_test

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/histrim/history"
)

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
		history.WithFullCount(), // count the dropped turns too, for tokens_before
		history.WithLabels(map[string]string{"session_id": "s-42"}))
	// Output:
	// level=INFO msg="history trimmed" trim.type=history_trimmed trim.reason=budget trim.dropped_messages=2 trim.dropped_turns=1 trim.kept_turns=1 trim.dropped_steps=0 trim.elided_results=0 trim.orphans_removed=0 trim.dropped_instructions=0 trim.tokens_before=32 trim.tokens_after=23 trim.budget=25 trim.attempt=0 trim.session_id=s-42
}

// By default a trim counts newest first and stops once it knows what to
// keep: the turns it drops are not counted, and the log says so.
func ExampleLogTrims_notCounted() {
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
	res, _ := history.TrimToRecentTurns(msgs, 25, history.WithOnTrim(history.LogTrims(logger)))
	fmt.Println("Result.TokensBefore:", res.TokensBefore)
	// Output:
	// level=INFO msg="history trimmed" trim.type=history_trimmed trim.reason=budget trim.dropped_messages=2 trim.dropped_turns=1 trim.kept_turns=1 trim.dropped_steps=0 trim.elided_results=0 trim.orphans_removed=0 trim.dropped_instructions=0 trim.tokens_before="not counted" trim.tokens_after=23 trim.budget=25 trim.attempt=0
	// Result.TokensBefore: -1
}
