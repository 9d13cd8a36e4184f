// Command agent runs a Genkit tool loop (genkit.Generate with function
// tools and the googlegenai plugin) with the histrim middleware through
// the door: hgenkit.Config names the Model and sets no Budget, so every
// model request of a generation, each step of the tool loop included, is
// trimmed to the window of that model (from the models table), an
// overflow is recovered from, usage feeds the calibration; the history
// stays whole. Copy it; the tools stand in for a coding agent's (each
// returns a long listing).
//
// Against Gemini, with a task per argument:
//
//	GEMINI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -model chooses the model (by a name the models table knows:
// docs/models.md); GOOGLE_GEMINI_BASE_URL points the genai client under
// the googlegenai plugin at another server speaking Gemini's API (the
// plugin has no option for it). Its test (standin_test.go) runs it for 30
// tasks against a local Gemini endpoint for gemini-2.5-flash that counts
// 1.3 times the library's estimate and answers an overflow with Gemini's
// 400. That endpoint enforces a window of 16,000 tokens, far below the
// model's 1,048,576 in the table (as a deployment with a smaller window
// would), so that 30 tasks outgrow it: the first request past it is
// refused and recovered from, and the middleware keeps what Gemini said
// for every later request, so no other is refused.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/firebase/genkit/go/plugins/googlegenai"
	"github.com/histrim/history"
	hgenkit "github.com/histrim/history/frameworks/genkit"
)

func main() {
	model := flag.String("model", "gemini-2.5-flash", "the model, by a name the models table knows")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	rep, err := run(context.Background(), config{APIKey: os.Getenv("GEMINI_API_KEY"), Model: *model, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	scale, overhead, _, _ := rep.Calibration.Model()
	fmt.Printf("%d tasks: %d requests trimmed, %d messages kept whole in the history\n", len(tasks), rep.Trims, rep.Messages)
	fmt.Printf("calibration learnt the provider's count: %.3fx%+.0f tokens\n", scale, overhead)
}

// config is what the loop runs against.
type config struct {
	APIKey string
	// Model names the model: its window and output room come from the
	// models table.
	Model string
	// Tasks are the user's requests, one turn each.
	Tasks []string
}

// report is what the loop did.
type report struct {
	Trims, Messages int
	Calibration     history.Calibration
}

// run runs one user turn per task: a generation with the tools, through
// the histrim middleware.
func run(ctx context.Context, cfg config) (*report, error) {
	g := genkit.Init(ctx, genkit.WithPlugins(&googlegenai.GoogleAI{APIKey: cfg.APIKey}))
	var tools []ai.ToolRef
	for _, name := range toolNames {
		tools = append(tools, genkit.DefineTool(g, name, "Use "+name+" in the repository workspace.",
			func(_ *ai.ToolContext, args toolArgs) (string, error) {
				return runTool(name, args.Path+args.Reason), nil
			}))
	}
	rep := &report{}
	// No Budget: the door takes the window of the model named; after an
	// overflow, what the provider said bounds every later request of mw.
	mw := hgenkit.Middleware(hgenkit.Config{Model: "googleai/" + cfg.Model, Calibration: &rep.Calibration,
		Options: []history.Option{history.WithOnTrim(func(history.Event) { rep.Trims++ })}})

	msgs := []*ai.Message{ai.NewSystemTextMessage("You are a coding agent. Use the tools to inspect the repository before you answer.")}
	for i, task := range cfg.Tasks {
		resp, err := genkit.Generate(ctx, g, ai.WithModelName("googleai/"+cfg.Model), ai.WithTools(tools...),
			ai.WithMaxTurns(10), ai.WithMessages(append(msgs, ai.NewUserTextMessage(task))...), ai.WithMiddleware(mw))
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", i+1, err)
		}
		msgs = resp.History() // the whole conversation, with this turn's steps
	}
	rep.Messages = len(msgs)
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
