package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/openai/openai-go/v3"
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
