// Command agent runs a trpc-agent-go agent (llmagent, runner, its OpenAI
// model, function tools) whose model is wrapped with htrpc.Wrap and
// tailors every request with an htrpc.Strategy given nothing but the
// model's name (the door): every request is trimmed to the window of the
// model it names (from the models table) less its output room, counted
// with the model's tokenizer; whole turns go, old tool results are elided
// first, a tool call never leaves its result, an overflow is recovered
// from, usage feeds the Strategy's calibration. The runner's session keeps
// every event. Copy it; the tools stand in for a coding agent's (each
// returns a long listing).
//
// Against OpenAI, with a task per argument:
//
//	OPENAI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url and -model point it at another OpenAI-compatible server (the
// model's name must be in the models table: docs/models.md). Its test
// (standin_test.go) runs it for 30 tasks against a local OpenAI
// chat-completions endpoint naming gpt-3.5-turbo (16,385 tokens in the
// table), whose window is 16,000 tokens and which counts 1.3 times the library's
// estimate and answers an overflow with OpenAI's 400.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"strings"
	"sync/atomic"

	"github.com/histrim/history"
	htrpc "github.com/histrim/history/frameworks/trpc"
	"trpc.group/trpc-go/trpc-agent-go/agent/llmagent"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/model/openai"
	"trpc.group/trpc-go/trpc-agent-go/runner"
	"trpc.group/trpc-go/trpc-agent-go/tool"
	"trpc.group/trpc-go/trpc-agent-go/tool/function"
)

func main() {
	baseURL := flag.String("base-url", "https://api.openai.com/v1", "the OpenAI-compatible API's base URL")
	name := flag.String("model", "gpt-4o", "the model, by a name the models table knows")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	rep, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"),
		Model: *name, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tasks: %d requests trimmed\n", len(tasks), rep.Trims.Load())
	if sent, reported := rep.Sent.Load(), rep.Reported.Load(); sent > 0 {
		fmt.Printf("the provider counted %.2fx the Strategy's count (its calibration learns it)\n",
			float64(reported)/float64(sent))
	}
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
	// Trims counts the requests trimmed.
	Trims atomic.Int64
	// Sent and Reported add up, over the responses observed, the
	// library's count of what was sent and the provider's.
	Sent, Reported atomic.Int64
}

// run runs one user turn per task through a trpc-agent-go runner.
func run(ctx context.Context, cfg config) (*report, error) {
	rep := &report{}
	// The door: no window, counter nor calibration. Wrap reads the wrapped
	// model's name; the callbacks only count what happened, for the report.
	s := htrpc.NewStrategy(htrpc.Config{
		OnTrim: func(history.Event) { rep.Trims.Add(1) },
		OnObserve: func(sent, reported int, _ history.Verdict) {
			rep.Sent.Add(int64(sent))
			rep.Reported.Add(int64(reported))
		},
	})
	m := htrpc.Wrap(openai.New(cfg.Model,
		openai.WithBaseURL(cfg.BaseURL), openai.WithAPIKey(cfg.APIKey),
		openai.WithEnableTokenTailoring(true),
		openai.WithTailoringStrategy(s), openai.WithTokenCounter(s.Counter())), s)

	var tools []tool.Tool
	for _, name := range toolNames {
		tools = append(tools, function.NewFunctionTool(func(_ context.Context, args toolArgs) (string, error) {
			return runTool(name, args.Path+args.Reason), nil
		}, function.WithName(name), function.WithDescription("Use "+name+" in the repository workspace.")))
	}
	ag := llmagent.New("coder", llmagent.WithModel(m), llmagent.WithTools(tools),
		llmagent.WithInstruction("You are a coding agent. Use the tools to inspect the repository before you answer."),
		llmagent.WithGenerationConfig(model.GenerationConfig{Stream: false}))
	r := runner.NewRunner("example", ag)
	defer r.Close()

	for i, task := range cfg.Tasks {
		events, err := r.Run(ctx, "user", "session", model.NewUserMessage(task))
		if err != nil {
			return nil, err
		}
		var failed error
		for ev := range events {
			if ev.Response != nil && ev.Response.Error != nil && failed == nil {
				failed = fmt.Errorf("task %d: %w", i+1, errors.New(ev.Response.Error.Message))
			}
		}
		if failed != nil {
			return nil, failed
		}
	}
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
