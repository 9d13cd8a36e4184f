// Command agent runs a fantasy agent (20 tools, fantasy's
// OpenAI-compatible provider) for 30 user turns against a local OpenAI
// chat-completions endpoint with a 16k window that counts 1.3 times the
// library's estimate and answers an overflow with OpenAI's 400. The
// language model is wrapped with hfantasy.NewModel with no budget (the
// door): every call is trimmed to the window of the model it names
// (gpt-3.5-turbo, from the models table), overflows are recovered from,
// usage feeds the calibration. It prints what the provider saw.
package main

import (
	"context"
	"fmt"
	"log"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openaicompat"
	"github.com/histrim/history"
	hfantasy "github.com/histrim/history/frameworks/fantasy"
	"github.com/histrim/history/internal/loopserver"
)

func main() {
	srv, ts := loopserver.ExampleOpenAI()
	defer ts.Close()
	ctx := context.Background()

	provider, err := openaicompat.New(openaicompat.WithBaseURL(ts.URL+"/v1"), openaicompat.WithAPIKey("sk-local"))
	if err != nil {
		log.Fatal(err)
	}
	lm, err := provider.LanguageModel(ctx, "gpt-3.5-turbo") // its name is all the door needs
	if err != nil {
		log.Fatal(err)
	}
	var cal history.Calibration
	trims := 0
	model := hfantasy.NewModel(lm, hfantasy.Config{Calibration: &cal, // nil: the Model's own
		Options: []history.Option{history.WithOnTrim(func(history.Event) { trims++ })}})

	var tools []fantasy.AgentTool
	for _, name := range loopserver.ToolNames {
		tools = append(tools, fantasy.NewAgentTool(name, loopserver.ToolDescription(name),
			func(_ context.Context, _ loopserver.ToolArgs, call fantasy.ToolCall) (fantasy.ToolResponse, error) {
				return fantasy.NewTextResponse(loopserver.ToolResult(call.ID, loopserver.Words(150, 500))), nil
			}))
	}
	agent := fantasy.NewAgent(model, fantasy.WithSystemPrompt(loopserver.SystemPrompt), fantasy.WithTools(tools...))

	var msgs []fantasy.Message
	for turn := 1; turn <= loopserver.ExampleTurns; turn++ {
		task := loopserver.Task(turn)
		res, err := agent.Generate(ctx, fantasy.AgentCall{Prompt: task, Messages: msgs})
		if err != nil {
			log.Fatalf("turn %d: %v", turn, err)
		}
		msgs = append(msgs, fantasy.NewUserMessage(task))
		for _, s := range res.Steps {
			msgs = append(msgs, s.Messages...)
		}
	}
	if err := loopserver.Report(srv.Stats(), fmt.Sprintf("%d messages kept whole by the agent", len(msgs)), trims, 0, &cal); err != nil {
		log.Fatal(err)
	}
}
