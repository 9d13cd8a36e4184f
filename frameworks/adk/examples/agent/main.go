// Command agent runs an ADK agent (llmagent, runner, ADK's Gemini model,
// 20 function tools, an in-memory session) for 30 user turns against a
// local Gemini endpoint with a 16k window that counts 1.3 times the
// library's estimate and answers an overflow with Gemini's 400, with the
// histrim plugin: every request is trimmed, overflows are recovered from,
// usage feeds the calibration. It prints what Gemini saw and what the
// session kept.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/histrim/history"
	hadk "github.com/histrim/history/frameworks/adk"
	"github.com/histrim/history/internal/loopserver"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model/gemini"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/adk/tool/functiontool"
	"google.golang.org/genai"
)

type output struct {
	Output string `json:"output"`
}

func main() {
	srv, ts := loopserver.ExampleGemini()
	defer ts.Close()
	ctx := context.Background()

	m, err := gemini.NewModel(ctx, "gemini-local", &genai.ClientConfig{APIKey: "local", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}})
	if err != nil {
		log.Fatal(err)
	}
	trims := 0
	cb, err := hadk.New(hadk.Config{Budget: loopserver.ExampleWindow, Model: m,
		Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim(),
			history.WithOnTrim(func(history.Event) { trims++ })}})
	if err != nil {
		log.Fatal(err)
	}
	p, err := cb.Plugin()
	if err != nil {
		log.Fatal(err)
	}

	var tools []tool.Tool
	for _, name := range loopserver.ToolNames {
		t, err := functiontool.New(functiontool.Config{Name: name, Description: loopserver.ToolDescription(name)},
			func(ctx agent.ToolContext, _ loopserver.ToolArgs) (output, error) {
				return output{loopserver.ToolResult(ctx.FunctionCallID(), loopserver.Words(150, 500))}, nil
			})
		if err != nil {
			log.Fatal(err)
		}
		tools = append(tools, t)
	}
	ag, err := llmagent.New(llmagent.Config{Name: "coder", Model: m, Instruction: loopserver.SystemPrompt, Tools: tools})
	if err != nil {
		log.Fatal(err)
	}
	sessions := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "example", Agent: ag, SessionService: sessions, AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
	if err != nil {
		log.Fatal(err)
	}
	for turn := 1; turn <= loopserver.ExampleTurns; turn++ {
		for _, err := range r.Run(ctx, "user", "session", genai.NewContentFromText(loopserver.Task(turn), genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				log.Fatalf("turn %d: %v", turn, err)
			}
		}
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "example", UserID: "user", SessionID: "session"})
	if err != nil {
		log.Fatal(err)
	}
	if err := loopserver.Report(srv.Stats(), fmt.Sprintf("%d events kept whole in the session", got.Session.Events().Len()), trims, 0, cb.Calibration()); err != nil {
		log.Fatal(err)
	}
}
