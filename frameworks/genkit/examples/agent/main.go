// Command agent runs a Genkit tool loop (genkit.Generate with 20 tools
// and the googlegenai plugin) for 30 user turns against a local Gemini
// endpoint with a 16k window that counts 1.3 times the library's estimate
// and answers an overflow with Gemini's 400, with the histrim middleware:
// every model call is trimmed, overflows are recovered from, usage feeds
// the calibration. It prints what Gemini saw. The genai client reads the
// endpoint from GOOGLE_GEMINI_BASE_URL, which the googlegenai plugin
// leaves it to.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/firebase/genkit/go/plugins/googlegenai"
	"github.com/histrim/history"
	hgenkit "github.com/histrim/history/frameworks/genkit"
	"github.com/histrim/history/internal/loopserver"
)

func main() {
	srv, ts := loopserver.ExampleGemini()
	defer ts.Close()
	if err := os.Setenv("GOOGLE_GEMINI_BASE_URL", ts.URL); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	g := genkit.Init(ctx, genkit.WithPlugins(&googlegenai.GoogleAI{APIKey: "local"}))
	var tools []ai.ToolRef
	for _, name := range loopserver.ToolNames {
		tools = append(tools, genkit.DefineTool(g, name, loopserver.ToolDescription(name),
			func(_ *ai.ToolContext, in loopserver.ToolArgs) (string, error) {
				return loopserver.ToolResult(name+in.Path+in.Reason, loopserver.Words(150, 500)), nil
			}))
	}

	var cal history.Calibration
	trims := 0
	mw := hgenkit.Middleware(hgenkit.Config{Budget: loopserver.ExampleWindow, Calibration: &cal,
		Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(),
			history.WithOnTrim(func(history.Event) { trims++ })}})

	msgs := []*ai.Message{ai.NewSystemTextMessage(loopserver.SystemPrompt)}
	for turn := 1; turn <= loopserver.ExampleTurns; turn++ {
		resp, err := genkit.Generate(ctx, g, ai.WithModelName("googleai/gemini-2.5-flash"), ai.WithTools(tools...),
			ai.WithMaxTurns(10), ai.WithMessages(append(msgs, ai.NewUserTextMessage(loopserver.Task(turn)))...), ai.WithMiddleware(mw))
		if err != nil {
			log.Fatalf("turn %d: %v", turn, err)
		}
		msgs = resp.History()
	}
	if err := loopserver.Report(srv.Stats(), fmt.Sprintf("%d messages kept whole in the history", len(msgs)), trims, 0, &cal); err != nil {
		log.Fatal(err)
	}
}
