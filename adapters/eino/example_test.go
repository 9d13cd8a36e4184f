package eino_test

import (
	"fmt"
	"strings"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history/adapters/eino"
)

func ExampleTrim() {
	msgs := []*schema.Message{
		schema.SystemMessage("You are a weather bot."),
		schema.UserMessage("Tell me about clouds. " + strings.Repeat("Be thorough. ", 60)),
		schema.AssistantMessage(strings.Repeat("Clouds are water. ", 60), nil),
		schema.UserMessage("What is the weather in Paris?"),
		{Role: schema.Assistant, ReasoningContent: "I need the forecast.", ToolCalls: []schema.ToolCall{
			{ID: "call_1", Type: "function", Function: schema.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
		}},
		schema.ToolMessage(`{"temp_c":21}`, "call_1"),
		schema.AssistantMessage("It is 21°C in Paris.", nil),
	}

	out, res, err := eino.Trim(msgs, 120)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		switch {
		case len(m.ToolCalls) > 0:
			fmt.Printf("%s: call %s (reasoning kept: %v)\n", m.Role, m.ToolCalls[0].Function.Name, m.ReasoningContent != "")
		case m.Extra[eino.KindKey] == "breadcrumb":
			fmt.Printf("%s: %s (breadcrumb)\n", m.Role, m.Content)
		default:
			fmt.Printf("%s: %s\n", m.Role, m.Content)
		}
	}
	fmt.Println("same pointer:", out[3] == msgs[4])
	fmt.Printf("dropped %d turn (%d messages), sending %d tokens\n", res.DroppedTurns, res.DroppedMessages, res.TokensAfter)
	fmt.Println("valid:", eino.Validate(out) == nil)
	// Output:
	// system: You are a weather bot.
	// user: [earlier turns omitted to fit the context window] (breadcrumb)
	// user: What is the weather in Paris?
	// assistant: call weather (reasoning kept: true)
	// tool: {"temp_c":21}
	// assistant: It is 21°C in Paris.
	// same pointer: true
	// dropped 1 turn (2 messages), sending 75 tokens
	// valid: true
}
