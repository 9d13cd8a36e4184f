package anthropic_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
)

func ExampleTrim() {
	system := []anthropic.TextBlockParam{{Text: "You are a weather bot."}}
	msgs := []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo? " + strings.Repeat("Please be detailed. ", 40))),
		anthropic.NewAssistantMessage(
			anthropic.NewThinkingBlock("sig-1", "The user wants the weather."),
			anthropic.NewToolUseBlock("toolu_1", map[string]string{"city": "Oslo"}, "get_weather"),
		),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", `{"temp_c":4}`, false)),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("4 °C in Oslo.")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("And tomorrow?")),
	}

	out, res, err := hanthropic.Trim(system, msgs, 60)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		fmt.Println("error:", err)
		return
	}
	for _, m := range out {
		b, _ := json.Marshal(m) // the caller's own values, as they will be sent
		fmt.Println(string(b))
	}
	fmt.Println("dropped turns:", res.DroppedTurns, "valid:", hanthropic.Validate(out) == nil)
	// Output:
	// {"content":[{"text":"[earlier turns omitted to fit the context window]","type":"text"}],"role":"user"}
	// {"content":[{"text":"And tomorrow?","type":"text"}],"role":"user"}
	// dropped turns: 1 valid: true
}

func ExampleRecoverOverflow() {
	system := []anthropic.TextBlockParam{{Text: "You are a coding agent."}}
	var msgs []anthropic.MessageParam
	for i := 1; i <= 4; i++ {
		id := "toolu_" + strconv.Itoa(i)
		msgs = append(msgs,
			anthropic.NewUserMessage(anthropic.NewTextBlock("Task "+strconv.Itoa(i)+": fix the build.")),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock(id, map[string]string{"path": "go.mod"}, "read_file")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, "module example.com/app\n\ngo 1.24\n", false)),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Fixed.")),
		)
	}
	// The API rejected the request msgs: the text of the *anthropic.Error
	// the client returned.
	providerErr := errors.New(`POST "https://api.anthropic.com/v1/messages": 400 Bad Request ` +
		`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 230000 tokens > 200000 maximum"}}`)

	out, res, err := hanthropic.RecoverOverflow(system, msgs, providerErr, 1)
	if err != nil {
		fmt.Println("surface:", err) // not an overflow, or nothing left to drop
		return
	}
	// Resend system and out (attempt 2 if it is rejected again).
	fmt.Printf("%d of %d messages kept, %d turns dropped, valid: %v\n", len(out), len(msgs), res.DroppedTurns, hanthropic.Validate(out) == nil)
	// Output:
	// 9 of 16 messages kept, 2 turns dropped, valid: true
}

func ExampleOverhead() {
	params := anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet4_6,
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are a weather bot."}}, // counted by Trim
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string", "description": "City name"}},
			Required:   []string{"city"},
		}, "get_weather")},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))},
	}
	var cal history.Calibration
	msgs, res, err := hanthropic.Trim(params.System, params.Messages, 150_000,
		history.WithCalibration(&cal), history.WithOverhead(hanthropic.Overhead(params, nil)))
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		fmt.Println("error:", err)
		return
	}
	params.Messages = msgs
	// Send params; then, from the response's usage:
	// cal.Observe(res.TokensAfter, int(u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens))
	fmt.Println("tool definitions:", hanthropic.Overhead(params, nil), "tokens; whole request:", res.TokensAfter, "tokens")
	// Output:
	// tool definitions: 55 tokens; whole request: 72 tokens
}
