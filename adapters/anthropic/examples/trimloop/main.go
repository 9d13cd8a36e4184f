// Command trimloop simulates an agent loop that keeps its history as
// anthropic-sdk-go MessageParams (with extended thinking and prompt
// caching) and fits it before every request through the door of the
// histrim Anthropic adapter: one Trimmer per conversation, Fit(ctx,
// params) before each request. It runs offline: the "model" is a stub
// that thinks (with a signature) and calls a tool on every other turn.
//
// The door takes the window from the models table: 200,000 tokens for
// claude-sonnet-4-5, which 30 short turns never reach. So that the example
// trims offline, it gives the Trimmer a window of 4,000 tokens of its own
// with history.WithModel, an option of the caller's, which overrides the
// door's (docs/options.md), as for a deployment whose window is smaller
// than the table's. A program naming a real model leaves it out.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
	"github.com/histrim/history/models"
)

func main() {
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5",
		MaxTokens: 1024,
		System: []anthropic.TextBlockParam{{
			Text:         "You are a helpful agent.",
			CacheControl: anthropic.NewCacheControlEphemeralParam(), // survives every trim
		}},
	}
	// A window smaller than the table's, so that the offline run trims
	// (see above): the reply's room is the request's max_tokens.
	small := models.Model{Name: string(params.Model), Provider: "anthropic", Window: 4_000, Output: int(params.MaxTokens)}
	tr := hanthropic.NewTrimmer(nil, history.WithModel(small)) // one per conversation; Fit reads the system prompt from params
	trims := 0
	var last anthropic.MessageNewParams // the last request sent
	for turn := 1; turn <= 30; turn++ {
		params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(
			"Turn "+strconv.Itoa(turn)+": "+strings.Repeat("tell me more about the logs. ", 10))))

		// Fit before sending: params.Messages is the whole transcript, and
		// send carries the caller's own values that fit.
		send, res, err := tr.Fit(ctx, params)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			fail(err)
		}
		if err := hanthropic.Validate(send.Messages); err != nil {
			fail(err) // would be an HTTP 400 from the API
		}
		if res.Trimmed {
			trims++
		}
		last = send
		// A real loop sends send here and, after the response, calls
		// tr.Observe(message.Usage); the stub reports no usage.

		// Stub model: every other turn it thinks and calls a tool first.
		if turn%2 == 0 {
			id := "toolu_" + strconv.Itoa(turn)
			params.Messages = append(params.Messages,
				anthropic.NewAssistantMessage(
					anthropic.NewThinkingBlock("signature-"+strconv.Itoa(turn), "I should read the logs."),
					anthropic.NewToolUseBlock(id, map[string]int{"lines": 50}, "read_logs"),
				),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, strings.Repeat("INFO ok\n", 60), false)),
			)
		}
		params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock("Here is what I found on turn "+strconv.Itoa(turn)+".")))
	}
	fmt.Printf("transcript: %d messages after %d trims; the last request sent %d, %d signed thinking blocks intact, valid pairing: %v\n",
		len(params.Messages), trims, len(last.Messages), signed(last.Messages), hanthropic.Validate(last.Messages) == nil)
}

// signed counts the thinking blocks of msgs that carry the model's
// original signature: those of the kept turns come back as they went in.
func signed(msgs []anthropic.MessageParam) int {
	n := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.OfThinking != nil && strings.HasPrefix(b.OfThinking.Signature, "signature-") {
				n++
			}
		}
	}
	return n
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "trimloop:", err)
	os.Exit(1)
}
