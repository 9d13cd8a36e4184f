package history_test

import (
	"fmt"

	"github.com/histrim/history"
)

func ExampleApply() {
	// The runtime's own message type, with fields the library never sees.
	type native struct {
		Text         string
		CacheControl bool
	}
	natives := []native{{"system prompt", true}, {"an old question, long enough to matter", false}, {"an old answer, long enough to matter", false}, {"new question", false}}
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: natives[0].Text},
		{Role: history.RoleUser, Content: natives[1].Text},
		{Role: history.RoleAssistant, Content: natives[2].Text},
		{Role: history.RoleUser, Content: natives[3].Text},
	}
	res, err := history.TrimToRecentTurns(msgs, 30)
	if err != nil {
		fmt.Println(err)
		return
	}
	out := history.Apply(natives, res, func() native { return native{Text: history.BreadcrumbText} })
	for _, n := range out {
		fmt.Printf("%q cache=%v\n", n.Text, n.CacheControl)
	}
	// Output:
	// "system prompt" cache=true
	// "[earlier turns omitted to fit the context window]" cache=false
	// "new question" cache=false
}
