// Command agent runs a trpc-agent-go agent (llmagent, runner, its OpenAI
// model, 20 function tools) for 30 user turns against a local OpenAI
// chat-completions endpoint with a 16k window that counts 1.3 times the
// library's estimate and answers an overflow with OpenAI's 400. The
// model tailors with the histrim Strategy and is wrapped to recover and
// calibrate. It prints what the provider saw.
package main

import (
	"context"
	"log"

	"github.com/histrim/history"
	htrpc "github.com/histrim/history/frameworks/trpc"
	"github.com/histrim/history/internal/loopserver"
	"trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/model/openai"
	"trpc.group/trpc-go/trpc-agent-go/runner"
	"trpc.group/trpc-go/trpc-agent-go/tool"
	"trpc.group/trpc-go/trpc-agent-go/tool/function"
)

func main() {
	srv, ts := loopserver.ExampleOpenAI()
	defer ts.Close()

	var cal history.Calibration
	trims := 0
	s := htrpc.NewStrategy(htrpc.Config{
		Calibration: &cal,
		Elision:     &history.ElideOptions{},
		StepTrim:    true,
		OnTrim:      func(history.Event) { trims++ },
	})
	m := htrpc.Wrap(openai.New("local-16k",
		openai.WithBaseURL(ts.URL+"/v1"), openai.WithAPIKey("sk-local"),
		openai.WithEnableTokenTailoring(true), openai.WithContextWindow(loopserver.ExampleWindow),
		openai.WithTailoringStrategy(s), openai.WithTokenCounter(s.Counter()),
		// The calibration learns the provider's count: no 10% margin.
		openai.WithTokenTailoringConfig(&model.TokenTailoringConfig{ProtocolOverheadTokens: 1, ReserveOutputTokens: 1, SafetyMarginRatio: 1e-4}),
	), s)

	var tools []tool.Tool
	for _, name := range loopserver.ToolNames {
		tools = append(tools, function.NewFunctionTool(func(_ context.Context, in loopserver.ToolArgs) (string, error) {
			return loopserver.ToolResult(name+in.Path+in.Reason, loopserver.Words(150, 500)), nil
		}, function.WithName(name), function.WithDescription(loopserver.ToolDescription(name))))
	}
	ag := llmagent.New("coder", llmagent.WithModel(m), llmagent.WithInstruction(loopserver.SystemPrompt),
		llmagent.WithTools(tools), llmagent.WithGenerationConfig(model.GenerationConfig{Stream: false}))
	r := runner.NewRunner("example", ag)
	defer r.Close()

	failed := 0
	for turn := 1; turn <= loopserver.ExampleTurns; turn++ {
		events, err := r.Run(context.Background(), "user", "session", model.NewUserMessage(loopserver.Task(turn)))
		if err != nil {
			log.Fatal(err)
		}
		for ev := range events {
			if ev.Response != nil && ev.Response.Error != nil {
				failed++
				log.Printf("turn %d: %s", turn, ev.Response.Error.Message)
			}
		}
	}
	if err := loopserver.Report(srv.Stats(), "the runner's session kept whole", trims, failed, &cal); err != nil {
		log.Fatal(err)
	}
}
