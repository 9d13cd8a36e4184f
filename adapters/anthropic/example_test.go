package anthropic_test

import (
	"encoding/json"
	"errors"
	"fmt"
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
