// Command agentloop shows the Eino adapter in an agent loop: before every
// model call the runtime trims its full history to the budget, and a fake
// chat model (no network) answers with tool calls that the loop executes.
// The history the loop keeps is never modified; the trimmed copy is what
// would be sent.
package main

import (
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/eino"
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
	full := []*schema.Message{schema.SystemMessage("You are a code reviewer.")}
	const budget = 1500
	for step := 0; step < 16; step++ {
		if step%2 == 0 {
			full = append(full, schema.UserMessage(fmt.Sprintf("Review part %d.", step/2)))
		}
		send, res, err := eino.Trim(full, budget, history.WithLabels(map[string]string{"step": fmt.Sprint(step)}))
		if err != nil {
			log.Fatal(err)
		}
		if err := eino.Validate(send); err != nil {
			fmt.Println("invalid request:", err)
			os.Exit(1)
		}
		fmt.Printf("step %2d: history %2d messages, sending %2d (%4d tokens, %d turns dropped)\n",
			step, len(full), len(send), res.TokensAfter, res.DroppedTurns)

		reply := fakeModel(step)
		full = append(full, reply)
		for _, tc := range reply.ToolCalls {
			body := strings.Repeat("func f() { return }\n", 40)
			full = append(full, &schema.Message{Role: schema.Tool, ToolCallID: tc.ID, ToolName: tc.Function.Name, Content: body})
		}
	}
	fmt.Println("every request was within budget and well paired")
}
