// Command trimloop simulates an agent loop that keeps its history as
// anthropic-sdk-go v2 MessageParams (with extended thinking and prompt
// caching) and trims it before every request with the histrim adapter for
// anthropic-sdk-go v2. It runs offline: the "model" is a stub that calls a
// tool on every other turn.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropicv2"
)

const budget = 2_000 // tokens of prompt we allow ourselves

func main() {
	system := []anthropic.TextBlockParam{{
		Text:         "You are a helpful agent.",
		CacheControl: anthropic.NewCacheControlEphemeralParam(), // survives every trim
	}}
	var msgs []anthropic.MessageParam
	trims := 0
	for turn := 1; turn <= 30; turn++ {
		msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(
			"Turn "+strconv.Itoa(turn)+": "+strings.Repeat("tell me more about the logs. ", 10))))

		// Trim before sending; the caller's own values come back.
		trimmed, res, err := hanthropic.Trim(system, msgs, budget)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			fail(err)
		}
		if err := hanthropic.Validate(trimmed); err != nil {
			fail(err) // would be an HTTP 400 from the API
		}
		if res.Trimmed {
			trims++
		}
		msgs = trimmed

		// Stub model: every other turn it thinks and calls a tool first.
		if turn%2 == 0 {
			id := "toolu_" + strconv.Itoa(turn)
			msgs = append(msgs,
				anthropic.NewAssistantMessage(
					anthropic.NewThinkingBlock("signature-"+strconv.Itoa(turn), "I should read the logs."),
					anthropic.NewToolUseBlock(id, map[string]int{"lines": 50}, "read_logs"),
				),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, strings.Repeat("INFO ok\n", 60), false)),
			)
		}
		msgs = append(msgs, anthropic.NewAssistantMessage(anthropic.NewTextBlock("Here is what I found on turn "+strconv.Itoa(turn)+".")))
	}
	// Signed thinking blocks of the kept turns are the model's originals.
	signed := 0
	for _, m := range msgs {
		if m.OfAssistant == nil { // v2: a message is a union of user, assistant and system
			continue
		}
		for _, b := range m.OfAssistant.Content {
			if b.OfThinking != nil && strings.HasPrefix(b.OfThinking.Signature, "signature-") {
				signed++
			}
		}
	}
	fmt.Printf("final history: %d messages after %d trims, %d signed thinking blocks intact, valid pairing: %v\n",
		len(msgs), trims, signed, hanthropic.Validate(msgs) == nil)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "trimloop:", err)
	os.Exit(1)
}
