// Command agentloop shows the Eino adapter's door in an agent loop: one
// eino.Trimmer per conversation, and before every model call its Fit trims
// the full history for the model named, while a fake chat model (no
// network) answers with tool calls that the loop executes. The history
// the loop keeps is never modified; the trimmed copy is what would be
// sent. The fake model reports no usage, so there is nothing to Observe
// (a real loop calls tr.Observe(msg.ResponseMeta.Usage) after each reply).
//
// The door takes the window from the models table: 128,000 tokens for
// gpt-4o, which 16 short steps never reach. So that the example trims
// offline, it gives the Trimmer a window of 2,000 tokens of its own (400
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
	"os"
	"strings"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/eino"
	"github.com/histrim/history/models"
)

// fakeModel stands in for an eino ChatModel: on even steps it calls the
// "read_file" tool, on odd steps it answers.
func fakeModel(step int) *schema.Message {
	if step%2 == 0 {
		return &schema.Message{Role: schema.Assistant, ReasoningContent: "I should read the file.",
			ToolCalls: []schema.ToolCall{{ID: fmt.Sprintf("call_%d", step), Type: "function",
				Function: schema.FunctionCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path":"src/%d.go"}`, step)}}}}
	}
	return schema.AssistantMessage(fmt.Sprintf("Step %d done. %s", step, strings.Repeat("Looks fine. ", 20)), nil)
}

func main() {
	const name = "gpt-4o"
	// A window smaller than the table's, so that the offline run trims
	// (see above).
	small := models.Model{Name: name, Provider: "openai", Window: 2_000, Output: 400}
	tr := eino.NewTrimmer(history.WithModel(small)) // one per conversation
	ctx := context.Background()
	full := []*schema.Message{schema.SystemMessage("You are a code reviewer.")}
	for step := 0; step < 16; step++ {
		if step%2 == 0 {
			full = append(full, schema.UserMessage(fmt.Sprintf("Review part %d.", step/2)))
		}
		send, res, err := tr.Fit(ctx, name, full)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			log.Fatal(err)
		}
		if err := eino.Validate(send); err != nil {
			fmt.Println("invalid request:", err)
			os.Exit(1)
		}
		fmt.Printf("step %2d: history %2d messages, sending %2d (%4d tokens of a budget of %d, %d turns dropped)\n",
			step, len(full), len(send), res.TokensAfter, res.Budget, res.DroppedTurns)

		reply := fakeModel(step)
		full = append(full, reply)
		for _, tc := range reply.ToolCalls {
			body := strings.Repeat("func f() { return }\n", 40)
			full = append(full, &schema.Message{Role: schema.Tool, ToolCallID: tc.ID, ToolName: tc.Function.Name, Content: body})
		}
	}
	fmt.Println("every request was within the budget and well paired")
}
