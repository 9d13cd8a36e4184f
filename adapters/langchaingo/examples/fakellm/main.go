// Command fakellm shows the LangChainGo adapter in front of a model call:
// the runtime keeps its full []llms.MessageContent history, and before each
// GenerateContent call it sends the trimmed copy. The model is a fake
// llms.Model (no network) that calls a tool on every other step and
// reports how many messages it received.
package main

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/langchaingo"
	"github.com/tmc/langchaingo/llms"
)

// fakeModel implements llms.Model without a network: it rejects unpaired
// histories the way providers do, and otherwise alternates between a tool
// call and a text answer.
type fakeModel struct{ step int }

func (f *fakeModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := langchaingo.Validate(msgs); err != nil {
		return nil, fmt.Errorf("400 bad request: %w", err)
	}
	f.step++
	choice := &llms.ContentChoice{Content: fmt.Sprintf("Answer %d. %s", f.step, strings.Repeat("Details. ", 30))}
	if f.step%2 == 1 {
		choice = &llms.ContentChoice{ToolCalls: []llms.ToolCall{{ID: fmt.Sprintf("call_%d", f.step), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}}}}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

func (f *fakeModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, f, prompt, options...)
}

func main() {
	ctx := context.Background()
	var model llms.Model = &fakeModel{}
	full := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You are a research assistant.")}
	const budget = 900
	for q := 1; q <= 6; q++ {
		full = append(full, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("Question %d?", q)))
		for {
			send, res, err := langchaingo.Trim(full, budget)
			if err != nil {
				log.Fatal(err)
			}
			resp, err := model.GenerateContent(ctx, send)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("question %d: sent %2d of %2d messages (%3d tokens, %d turns dropped)\n",
				q, len(send), len(full), res.TokensAfter, res.DroppedTurns)
			c := resp.Choices[0]
			if len(c.ToolCalls) == 0 {
				full = append(full, llms.TextParts(llms.ChatMessageTypeAI, c.Content))
				break
			}
			ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			for _, tc := range c.ToolCalls {
				ai.Parts = append(ai.Parts, tc)
			}
			full = append(full, ai)
			for _, tc := range c.ToolCalls {
				full = append(full, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: strings.Repeat("result ", 80)}}})
			}
		}
	}
	fmt.Println("estimated full history:", history.Estimate(must(langchaingo.ToHistory(full)), nil), "tokens; every request fit", budget)
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}
