// Command agent runs a fantasy agent (function tools, fantasy's
// OpenAI-compatible provider) whose language model is wrapped with
// hfantasy.NewModel with no budget (the door): every call is trimmed to
// the window of the model it names (from the models table), an overflow
// is recovered from, usage feeds the calibration; the agent's messages
// stay whole. Copy it; the tools stand in for a coding agent's
// (each returns a long listing).
//
// Against OpenAI, with a task per argument:
//
//	OPENAI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url and -model point it at another OpenAI-compatible server (the
// model's name must be in the models table: docs/models.md). Its test
// (standin_test.go) runs it for 30 tasks against a local OpenAI
// chat-completions endpoint with the window of the model it names
// (gpt-3.5-turbo, 16,385 tokens) that counts 1.3 times the library's
// estimate and answers an overflow with OpenAI's 400.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"strings"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openaicompat"
	"github.com/histrim/history"
	hfantasy "github.com/histrim/history/frameworks/fantasy"
)

func main() {
	baseURL := flag.String("base-url", "https://api.openai.com/v1", "the OpenAI-compatible API's base URL")
	model := flag.String("model", "gpt-4o", "the model, by a name the models table knows")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	rep, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"),
		Model: *model, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	scale, overhead, _, _ := rep.Calibration.Model()
	fmt.Printf("%d tasks: %d requests trimmed, %d messages kept whole by the agent\n", len(tasks), rep.Trims, rep.Messages)
	fmt.Printf("calibration learnt the provider's count: %.3fx%+.0f tokens\n", scale, overhead)
}

// config is what the agent runs against.
type config struct {
	BaseURL, APIKey string
	// Model names the model: its window comes from the models table.
	Model string
	// Tasks are the user's requests, one turn each.
	Tasks []string
}

// report is what the agent did.
type report struct {
	Trims, Messages int
	Calibration     history.Calibration
}

// run runs one user turn per task through a fantasy agent on the wrapped
// model.
func run(ctx context.Context, cfg config) (*report, error) {
	provider, err := openaicompat.New(openaicompat.WithBaseURL(cfg.BaseURL), openaicompat.WithAPIKey(cfg.APIKey))
	if err != nil {
		return nil, err
	}
	lm, err := provider.LanguageModel(ctx, cfg.Model)
	if err != nil {
		return nil, err
	}
	rep := &report{}
	// No Budget: the door takes the window of the model lm names.
	model := hfantasy.NewModel(lm, hfantasy.Config{Calibration: &rep.Calibration,
		Options: []history.Option{history.WithOnTrim(func(history.Event) { rep.Trims++ })}})
	var tools []fantasy.AgentTool
	for _, name := range toolNames {
		tools = append(tools, fantasy.NewAgentTool(name, "Use "+name+" in the repository workspace.",
			func(_ context.Context, args toolArgs, _ fantasy.ToolCall) (fantasy.ToolResponse, error) {
				return fantasy.NewTextResponse(runTool(name, args.Path+args.Reason)), nil
			}))
	}
	agent := fantasy.NewAgent(model, fantasy.WithTools(tools...),
		fantasy.WithSystemPrompt("You are a coding agent. Use the tools to inspect the repository before you answer."))

	var msgs []fantasy.Message // the whole conversation
	for i, task := range cfg.Tasks {
		res, err := agent.Generate(ctx, fantasy.AgentCall{Prompt: task, Messages: msgs})
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", i+1, err)
		}
		msgs = append(msgs, fantasy.NewUserMessage(task))
		for _, s := range res.Steps {
			msgs = append(msgs, s.Messages...)
		}
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
