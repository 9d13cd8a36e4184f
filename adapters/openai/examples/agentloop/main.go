// Command agentloop is the complete loop a runtime on openai-go runs to
// keep every chat completion request inside the model's window, through
// the door: one hopenai.Trimmer per conversation, Fit before each request
// (the model's window and output room from its name, the tools counted,
// the exact counter, a Calibration the Trimmer owns), send with the real
// client, recover from context_length_exceeded with RecoverOverflow on the
// same transcript, at most twice, and Observe the response's usage. Copy
// agent.complete; run gives it a conversation, and the tools stand in for
// a coding agent's (each returns a long listing).
//
// Against OpenAI, with a task per argument:
//
//	OPENAI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url and -model point it at another OpenAI-compatible server (the
// model's name must be in the models table: docs/models.md). Its test
// (standin_test.go) runs it for 30 tasks against a local endpoint that
// counts 1.3 times the library's estimate plus its 20 tool schemas, with
// the window of the model it names (gpt-3.5-turbo: 16,385 tokens), and
// prints a summary.
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

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// agent holds what a runtime keeps per conversation.
type agent struct {
	client openai.Client
	params openai.ChatCompletionNewParams // model, tools, and the whole transcript as Messages
	tr     *hopenai.Trimmer               // one per conversation

	requests, overflows, trimmed, promptTrimmed int
}

// complete sends the transcript through the door, recovers from a length
// rejection, learns the provider's count, and appends the reply to the
// transcript.
func (a *agent) complete(ctx context.Context) (*openai.ChatCompletion, error) {
	send, res, err := a.tr.Fit(ctx, a.params)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err // an unknown model (models.ErrUnknownModel), invalid messages
	}
	// (With ErrLatestTurnTooLarge, send holds the smallest history: try it.)
	a.requests++
	completion, err := a.client.Chat.Completions.New(ctx, send)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		var rerr error
		if send.Messages, res, rerr = a.tr.RecoverOverflow(a.params.Messages, err, attempt); rerr != nil {
			break // not an overflow, or nothing left to drop: err stands
		}
		a.overflows++
		a.requests++
		completion, err = a.client.Chat.Completions.New(ctx, send)
	}
	if err != nil {
		return nil, err
	}
	a.tr.Observe(completion.Usage)
	if res.Trimmed {
		a.trimmed++
		a.promptTrimmed += int(completion.Usage.PromptTokens)
	}
	if len(completion.Choices) == 0 {
		return nil, errors.New("agentloop: no choice in the completion")
	}
	a.params.Messages = append(a.params.Messages, completion.Choices[0].Message.ToParam())
	return completion, nil
}

func main() {
	baseURL := flag.String("base-url", "https://api.openai.com/v1", "the OpenAI-compatible API's base URL")
	model := flag.String("model", openai.ChatModelGPT4o, "the model, by a name the models table knows")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	a, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"),
		Model: *model, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tasks, %d requests (%d trimmed), %d overflows recovered\n", len(tasks), a.requests, a.trimmed, a.overflows)
}

// config is what the loop runs against.
type config struct {
	BaseURL, APIKey string
	// Model names the model: its window and output room come from the
	// models table.
	Model string
	// Tasks are the user's requests, one turn each.
	Tasks []string
}

// run runs one user turn per task: it sends the history (trimmed by
// complete), runs the tools the model calls, and sends again until the
// model answers.
func run(ctx context.Context, cfg config) (*agent, error) {
	a := &agent{
		client: openai.NewClient(option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey)),
		params: openai.ChatCompletionNewParams{Model: cfg.Model, Tools: tools(),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools before you answer.")}},
		tr: hopenai.NewTrimmer(),
	}
	for i, task := range cfg.Tasks {
		a.params.Messages = append(a.params.Messages, openai.UserMessage(task))
		for {
			completion, err := a.complete(ctx)
			if err != nil {
				return nil, fmt.Errorf("agentloop: task %d: %w", i+1, err)
			}
			calls := completion.Choices[0].Message.ToolCalls
			if len(calls) == 0 {
				break
			}
			for _, c := range calls {
				a.params.Messages = append(a.params.Messages, openai.ToolMessage(runTool(c.Function.Name, c.Function.Arguments), c.ID))
			}
		}
	}
	return a, nil
}

// toolNames are the agent's tools.
var toolNames = []string{
	"read_file", "write_file", "list_dir", "grep", "run_tests", "run_command", "git_diff", "git_log",
	"search_docs", "fetch_url", "open_issue", "comment_issue", "build", "lint", "format_code",
	"query_db", "describe_table", "read_logs", "deploy_preview", "ask_user",
}

// tools returns the definitions of the agent's tools, sent with every
// request.
func tools() []openai.ChatCompletionToolUnionParam {
	var out []openai.ChatCompletionToolUnionParam
	for _, name := range toolNames {
		out = append(out, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        name,
			Description: openai.String("Use " + name + " in the repository workspace. Returns plain text."),
			Parameters: shared.FunctionParameters{
				"type": "object",
				"properties": map[string]any{
					"path":   map[string]any{"type": "string", "description": "Path relative to the repository root."},
					"reason": map[string]any{"type": "string", "description": "Why the tool is called, for the audit log."},
				},
				"required": []string{"path", "reason"},
			},
		}))
	}
	return out
}

// runTool stands in for a tool: it returns a listing of 20 to 80 lines, as
// a grep or a test run does, the same for the same call.
func runTool(name, arguments string) string {
	h := fnv.New32a()
	h.Write([]byte(name + arguments))
	n := 20 + int(h.Sum32()%61)
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s:%d: func handler%d(ctx context.Context, req *Request) error returns nil when the request is valid\n", name, i+1, i)
	}
	return b.String()
}
