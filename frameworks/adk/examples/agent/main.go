// Command agent runs an ADK agent (llmagent, runner, ADK's Gemini model,
// function tools, an in-memory session) with the histrim plugin through
// the door: hadk.Config names the Model and sets no Budget, so every model
// request is trimmed to the window of the model it names (from the models
// table), an overflow is recovered from, usage feeds the calibration. The
// session keeps every event. Copy it; the tools stand in for a coding
// agent's (each returns a long listing).
//
// Against Gemini, with a task per argument:
//
//	GEMINI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url and -model point it at another server speaking Gemini's API
// (the model's name must be in the models table: docs/models.md). Its
// test (standin_test.go) runs it for 30 tasks against a local Gemini
// endpoint for gemini-2.5-flash that counts 1.3 times the library's
// estimate and answers an overflow with Gemini's 400. That endpoint
// enforces a window of 16,000 tokens, far below the model's 1,048,576 in
// the table (as a deployment with a smaller window would), so that 30
// tasks outgrow it: the first request past it is refused and recovered
// from, and the callbacks keep what Gemini said for every later request,
// so no other is refused.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"strings"

	"github.com/histrim/history"
	hadk "github.com/histrim/history/frameworks/adk"
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

func main() {
	baseURL := flag.String("base-url", "", "the Gemini API's base URL (empty: Google's)")
	model := flag.String("model", "gemini-2.5-flash", "the model, by a name the models table knows")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	rep, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("GEMINI_API_KEY"),
		Model: *model, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	scale, overhead, _, _ := rep.Calibration.Model()
	fmt.Printf("%d tasks: %d requests trimmed, %d events kept whole in the session\n", len(tasks), rep.Trims, rep.Events)
	fmt.Printf("calibration learnt the provider's count: %.3fx%+.0f tokens\n", scale, overhead)
}

// config is what the agent runs against.
type config struct {
	BaseURL, APIKey string
	// Model names the model: its window and output room come from the
	// models table.
	Model string
	// Tasks are the user's requests, one turn each.
	Tasks []string
}

// report is what the agent did.
type report struct {
	Trims, Events int
	Calibration   *history.Calibration
}

// run runs one user turn per task through an ADK runner with the histrim
// plugin.
func run(ctx context.Context, cfg config) (*report, error) {
	m, err := gemini.NewModel(ctx, cfg.Model, &genai.ClientConfig{APIKey: cfg.APIKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: cfg.BaseURL}})
	if err != nil {
		return nil, err
	}
	rep := &report{}
	// No Budget: the door takes the window of the model each request
	// names. Model resends a request after an overflow, and what Gemini
	// said then bounds every later request.
	cb, err := hadk.New(hadk.Config{Model: m,
		Options: []history.Option{history.WithOnTrim(func(history.Event) { rep.Trims++ })}})
	if err != nil {
		return nil, err
	}
	p, err := cb.Plugin() // or cb.Install(&llmagentConfig) for one agent
	if err != nil {
		return nil, err
	}
	var tools []tool.Tool
	for _, name := range toolNames {
		t, err := functiontool.New(functiontool.Config{Name: name, Description: "Use " + name + " in the repository workspace."},
			func(_ agent.ToolContext, args toolArgs) (toolOutput, error) {
				return toolOutput{runTool(name, args.Path+args.Reason)}, nil
			})
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	ag, err := llmagent.New(llmagent.Config{Name: "coder", Model: m, Tools: tools,
		Instruction: "You are a coding agent. Use the tools to inspect the repository before you answer."})
	if err != nil {
		return nil, err
	}
	sessions := session.InMemoryService()
	r, err := runner.New(runner.Config{AppName: "example", Agent: ag, SessionService: sessions, AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
	if err != nil {
		return nil, err
	}
	for i, task := range cfg.Tasks {
		for _, err := range r.Run(ctx, "user", "session", genai.NewContentFromText(task, genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				return nil, fmt.Errorf("task %d: %w", i+1, err)
			}
		}
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "example", UserID: "user", SessionID: "session"})
	if err != nil {
		return nil, err
	}
	rep.Events, rep.Calibration = got.Session.Events().Len(), cb.Calibration()
	return rep, nil
}

// toolNames are the agent's tools.
var toolNames = []string{
	"read_file", "write_file", "list_dir", "grep", "run_tests", "run_command", "git_diff", "git_log",
	"search_docs", "fetch_url", "open_issue", "comment_issue", "build", "lint", "format_code",
	"query_db", "describe_table", "read_logs", "deploy_preview", "ask_user",
}

// toolArgs are the arguments every tool takes.
type toolArgs struct {
	// Path is the file or directory the tool works on.
	Path string `json:"path"`
	// Reason says why the tool is called.
	Reason string `json:"reason"`
}

// toolOutput is what every tool returns.
type toolOutput struct {
	Output string `json:"output"`
}

// runTool stands in for a tool: it returns a listing of 15 to 50 lines, as
// a grep or a test run does, the same for the same call.
func runTool(name, arguments string) string {
	h := fnv.New32a()
	h.Write([]byte(name + arguments))
	n := 15 + int(h.Sum32()%36)
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s:%d: func handler%d(ctx context.Context, req *Request) error returns nil when the request is valid\n", name, i+1, i)
	}
	return b.String()
}
