// Command fakellm shows the LangChainGo adapter's door in front of a model
// call: the runtime keeps its full []llms.MessageContent history, and
// before each GenerateContent call it sends what a Trimmer's Fit returns
// for the model named. The model is a fake llms.Model (no network) that
// calls a tool on every other step; it reports no usage, so there is
// nothing to Observe (a real loop calls tr.Observe(resp) after each
// response).
//
// The door takes the window from the models table: 128,000 tokens for
// gpt-4o-mini, which six questions never reach. So that the example trims
// offline, it gives the Trimmer a window of 1,300 tokens of its own (300
// of them for the reply) with history.WithModel, an option of the
// caller's, which overrides the door's (docs/options.md), as for a
// deployment whose window is smaller than the table's. A program naming a
// real model leaves it out.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/langchaingo"
	"github.com/histrim/history/models"
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
	const name = "gpt-4o-mini"
	// A window smaller than the table's, so that the offline run trims
	// (see above).
	small := models.Model{Name: name, Provider: "openai", Window: 1_300, Output: 300}
	tr := langchaingo.NewTrimmer(history.WithModel(small)) // one per conversation
	budget := 0
	for q := 1; q <= 6; q++ {
		full = append(full, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("Question %d?", q)))
		for {
			send, res, err := tr.Fit(ctx, name, full)
			budget = res.Budget
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
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
