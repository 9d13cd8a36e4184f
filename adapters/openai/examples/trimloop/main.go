// Command trimloop simulates an agent loop that keeps its history as
// openai-go message params and trims it before every request with the
// histrim OpenAI adapter. It runs offline: the "model" is a stub that calls
// a tool on every other turn.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/openai/openai-go/v3"
)

const budget = 2_000 // tokens of prompt we allow ourselves

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, nil))
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helpful agent.")}
	for turn := 1; turn <= 30; turn++ {
		msgs = append(msgs, openai.UserMessage("Turn "+strconv.Itoa(turn)+": "+strings.Repeat("tell me more about the logs. ", 10)))

		// Trim before sending; the caller's own values come back.
		trimmed, res, err := hopenai.Trim(msgs, budget, history.WithOnTrim(history.LogTrims(logger)))
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			fail(err)
		}
		if err := hopenai.Validate(trimmed); err != nil {
			fail(err) // would be an HTTP 400 from the API
		}
		msgs = trimmed
		if res.TokensAfter > budget {
			fail(fmt.Errorf("turn %d: %d tokens over budget %d", turn, res.TokensAfter, budget))
		}

		// Stub model: every other turn it calls a tool first.
		if turn%2 == 0 {
			id := "call_" + strconv.Itoa(turn)
			call := openai.AssistantMessage("")
			call.OfAssistant.Content = openai.ChatCompletionAssistantMessageParamContentUnion{}
			call.OfAssistant.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       id,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_logs", Arguments: `{"lines":50}`},
				},
			}}
			msgs = append(msgs, call, openai.ToolMessage(strings.Repeat("INFO ok\n", 60), id))
		}
		msgs = append(msgs, openai.AssistantMessage("Here is what I found on turn "+strconv.Itoa(turn)+"."))
	}
	fmt.Printf("final history: %d messages, valid pairing: %v\n", len(msgs), hopenai.Validate(msgs) == nil)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "trimloop:", err)
	os.Exit(1)
}
