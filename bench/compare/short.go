package compare

import (
	"strconv"
	"strings"

	history "github.com/histrim/history"
)

// Short returns a history of n short messages (n >= 1): a system prompt,
// then user turns of a question, a tool call, its result and an answer,
// each message some 60 to 90 characters (about 19 tokens by runes/4), so
// that a budget of 8,000 tokens keeps about 420 of them. It is the input
// of the 40,001-message comparison: the cost of a trim that keeps little
// of a long history.
func Short(n int) []history.Message {
	msgs := make([]history.Message, 0, n)
	msgs = append(msgs, history.Message{Role: history.RoleSystem, Content: "You are a support agent. Look the order up before you answer the customer."})
	pad := func(s string, i int) string { return s + strings.Repeat(".", 20+i%30) }
	for i := 0; len(msgs) < n; i++ {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			history.Message{Role: history.RoleUser, Content: pad("Where is my order number "+strconv.Itoa(1000+i)+"? It has not arrived", i)},
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "lookup_order", Arguments: `{"order":"` + strconv.Itoa(1000+i) + `","fields":"status"}`}}},
			history.Message{Role: history.RoleTool, ToolCallID: id, Content: pad(`{"order":"`+strconv.Itoa(1000+i)+`","status":"shipped","eta":"tomorrow"}`, i)},
			history.Message{Role: history.RoleAssistant, Content: pad("Your order "+strconv.Itoa(1000+i)+" has shipped and arrives tomorrow", i)},
		)
	}
	return msgs[:n]
}
