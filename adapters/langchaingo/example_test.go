package langchaingo_test

import (
	"fmt"
	"strings"

	"github.com/histrim/history/adapters/langchaingo"
	"github.com/tmc/langchaingo/llms"
)

func ExampleTrim() {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are a weather bot."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Tell me about clouds. "+strings.Repeat("Be thorough. ", 60)),
		llms.TextParts(llms.ChatMessageTypeAI, strings.Repeat("Clouds are water. ", 60)),
		llms.TextParts(llms.ChatMessageTypeHuman, "What is the weather in Paris?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{
			ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
			ToolCallID: "call_1", Name: "weather", Content: `{"temp_c":21}`}}},
		llms.TextParts(llms.ChatMessageTypeAI, "It is 21°C in Paris."),
	}

	out, res, err := langchaingo.Trim(msgs, 120)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		switch p := m.Parts[0].(type) {
		case llms.ToolCall:
			fmt.Printf("%s: call %s\n", m.Role, p.FunctionCall.Name)
		case llms.ToolCallResponse:
			fmt.Printf("%s: %s answers %s\n", m.Role, p.Content, p.ToolCallID)
		case llms.TextContent:
			fmt.Printf("%s: %s\n", m.Role, p.Text)
		}
	}
	fmt.Printf("dropped %d turn (%d messages), sending %d tokens\n", res.DroppedTurns, res.DroppedMessages, res.TokensAfter)
	fmt.Println("valid:", langchaingo.Validate(out) == nil)
	// Output:
	// system: You are a weather bot.
	// human: [earlier turns omitted to fit the context window]
	// human: What is the weather in Paris?
	// ai: call weather
	// tool: {"temp_c":21} answers call_1
	// ai: It is 21°C in Paris.
	// dropped 1 turn (2 messages), sending 73 tokens
	// valid: true
}
