package eino_test

import (
	"fmt"
	"strings"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
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

func ExampleRecoverOverflow() {
	msgs := []*schema.Message{schema.SystemMessage("You are a code reviewer.")}
	for i := range 4 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			schema.UserMessage(fmt.Sprintf("Review file %d.", i)),
			schema.AssistantMessage("", []schema.ToolCall{{ID: id, Type: "function",
				Function: schema.FunctionCall{Name: "read_file", Arguments: `{}`}}}),
			schema.ToolMessage(strings.Repeat("func f() { return }\n", 30), id, schema.WithToolName("read_file")),
			schema.AssistantMessage(fmt.Sprintf("File %d looks fine.", i), nil))
	}
	// generate stands for a chat model's Generate: the endpoint counts 40%
	// more than the heuristic and rejects more than 500 tokens with the
	// error Eino's OpenAI chat model returns (an eino-ext *openai.APIError).
	generate := func(send []*schema.Message) error {
		h, _ := eino.ToHistory(send)
		if used := history.Estimate(h, nil) * 14 / 10; used > 500 {
			return fmt.Errorf("error, status code: 400, status: 400 Bad Request, message: This model's maximum "+
				"context length is 500 tokens. However, your messages resulted in %d tokens. "+
				"Please reduce the length of the messages.", used)
		}
		return nil
	}

	send := msgs
	err := generate(send)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		var res history.Result
		var rerr error
		if send, res, rerr = eino.RecoverOverflow(send, err, attempt); rerr != nil {
			fmt.Println(rerr) // not an overflow, or nothing left to drop
			return
		}
		fmt.Printf("attempt %d: %d messages, %d tokens, target %d, %d turns dropped\n",
			attempt, len(send), res.TokensAfter, res.Budget, res.DroppedTurns)
		err = generate(send)
	}
	fmt.Println("accepted:", err == nil)
	fmt.Println("latest task kept:", send[len(send)-4].Content)
	// Output:
	// attempt 1: 6 messages, 233 tokens, target 321, 3 turns dropped
	// accepted: true
	// latest task kept: Review file 3.
}
