package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

func ExampleTrim() {
	call := openai.AssistantMessage("")
	call.OfAssistant.Content = openai.ChatCompletionAssistantMessageParamContentUnion{}
	call.OfAssistant.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{
		OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID:       "call_1",
			Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		},
	}}
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a weather bot."),
		openai.UserMessage("Weather in Oslo? " + strings.Repeat("Please be detailed. ", 40)),
		call,
		openai.ToolMessage(`{"temp_c":4}`, "call_1"),
		openai.AssistantMessage("4 °C in Oslo."),
		openai.UserMessage("And tomorrow?"),
	}

	out, res, err := hopenai.Trim(msgs, 60)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		fmt.Println("error:", err)
		return
	}
	for _, m := range out {
		b, _ := json.Marshal(m) // the caller's own values, as they will be sent
		fmt.Println(string(b))
	}
	fmt.Println("dropped turns:", res.DroppedTurns, "valid:", hopenai.Validate(out) == nil)
	// Output:
	// {"content":"You are a weather bot.","role":"system"}
	// {"content":"[earlier turns omitted to fit the context window]","role":"user"}
	// {"content":"And tomorrow?","role":"user"}
	// dropped turns: 1 valid: true
}

func ExampleRecoverOverflow() {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a research assistant.")}
	for _, topic := range []string{"tides", "comets", "glaciers", "volcanoes"} {
		msgs = append(msgs,
			openai.UserMessage("Summarise what we know about "+topic+"."),
			openai.AssistantMessage(strings.Repeat("A long summary about "+topic+". ", 30)))
	}
	// What client.Chat.Completions.New returned for msgs: an *openai.Error
	// with this body, which the library reads through its RawJSON.
	providerErr := errors.New(`{"error":{"message":"This model's maximum context length is 800 tokens. However, your messages resulted in 1010 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)

	out, res, err := hopenai.RecoverOverflow(msgs, providerErr, 1)
	if err != nil {
		fmt.Println("cannot recover:", err) // history.ErrNotOverflow, or a *history.RecoverError
		return
	}
	for _, m := range out {
		var wire struct{ Role, Content string }
		b, _ := json.Marshal(m) // the caller's own values, as they will be sent
		_ = json.Unmarshal(b, &wire)
		fmt.Printf("%-9s %.40s\n", wire.Role, wire.Content)
	}
	fmt.Printf("dropped %d turns to fit a target of %d tokens; retry with the %d messages\n", res.DroppedTurns, res.Budget, len(out))
	// Output:
	// system    You are a research assistant.
	// user      [earlier turns omitted to fit the contex
	// user      Summarise what we know about glaciers.
	// assistant A long summary about glaciers. A long su
	// user      Summarise what we know about volcanoes.
	// assistant A long summary about volcanoes. A long s
	// dropped 2 turns to fit a target of 576 tokens; retry with the 6 messages
}

func ExampleOverhead() {
	params := openai.ChatCompletionNewParams{
		Model: "gpt-4o-mini",
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        "get_weather",
			Description: openai.String("Current weather in a city."),
			Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
	}
	overhead := hopenai.Overhead(params, nil) // the tools JSON, in Heuristic tokens
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")}
	_, res, _ := hopenai.Trim(msgs, 1000, history.WithOverhead(overhead))
	fmt.Println("overhead:", overhead, "whole request:", res.TokensAfter)
	// Output:
	// overhead: 61 whole request: 69
}
