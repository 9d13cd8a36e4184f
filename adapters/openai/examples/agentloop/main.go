// Command agentloop is the complete loop a runtime on openai-go runs to
// keep every chat completion request inside the model's window: trim before
// each request (hopenai.Trim with a history.Calibration, the request's
// hopenai.Overhead, elision and step trimming), send with the real client,
// teach the calibration the provider's usage.prompt_tokens, and recover
// from context_length_exceeded with hopenai.RecoverOverflow, at most twice.
// Copy agent.complete; run gives it a conversation, and the tools stand in
// for a coding agent's (each returns a long listing).
//
// Against OpenAI, with a task per argument:
//
//	OPENAI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url, -model and -window point it at another OpenAI-compatible
// server. Its test (standin_test.go) runs it for 30 tasks against a local
// endpoint that counts 1.3 times the library's estimate plus its 20 tool
// schemas, with a 12,000-token window, and prints a summary.
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

// agent holds what a runtime keeps per conversation (and per model).
type agent struct {
	client openai.Client
	window int                            // the tokens a request may hold: the model's window less the reply's room
	params openai.ChatCompletionNewParams // model and tools; Messages set per request
	msgs   []openai.ChatCompletionMessageParamUnion
	cal    history.Calibration // one per model: keep it (json.Marshal) across restarts

	requests, overflows, trimmed, promptTrimmed int
}

// complete trims a.msgs, sends them, recovers from a length rejection, and
// appends the reply to the history that was sent, which becomes a.msgs.
func (a *agent) complete(ctx context.Context) (*openai.ChatCompletion, error) {
	opts := []history.Option{
		history.WithCalibration(&a.cal),                       // aim at the provider's count
		history.WithOverhead(hopenai.Overhead(a.params, nil)), // the tools count too
		history.WithElision(history.ElideOptions{}),           // old tool results go first
		history.WithStepTrim(),                                // then old steps of a long task
		// history.WithOnTrim(history.LogTrims(logger)) logs every trim.
	}
	sent, res, err := hopenai.Trim(a.msgs, a.window, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err // invalid messages or options
	}
	// (With ErrLatestTurnTooLarge, sent is the smallest history: try it.)
	params := a.params
	params.Messages = sent
	a.requests++
	completion, err := a.client.Chat.Completions.New(ctx, params)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		var rerr error
		if params.Messages, res, rerr = hopenai.RecoverOverflow(params.Messages, err, attempt, opts...); rerr != nil {
			break // not an overflow, or nothing left to drop: err stands
		}
		a.overflows++
		a.requests++
		completion, err = a.client.Chat.Completions.New(ctx, params)
	}
	if err != nil {
		return nil, err
	}
	a.cal.Observe(res.TokensAfter, int(completion.Usage.PromptTokens))
	if res.Trimmed {
		a.trimmed++
		a.promptTrimmed += int(completion.Usage.PromptTokens)
	}
	if len(completion.Choices) == 0 {
		return nil, errors.New("agentloop: no choice in the completion")
	}
	a.msgs = append(params.Messages, completion.Choices[0].Message.ToParam())
	return completion, nil
}

func main() {
	baseURL := flag.String("base-url", "https://api.openai.com/v1", "the OpenAI-compatible API's base URL")
	model := flag.String("model", openai.ChatModelGPT4o, "the model")
	window := flag.Int("window", 128_000-16_384, "the tokens a request may hold: the model's window less the reply's room")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	a, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"),
		Model: *model, Window: *window, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	scale, overhead, margin, _ := a.cal.Model()
	fmt.Printf("%d tasks, %d requests (%d trimmed), %d overflows recovered\n", len(tasks), a.requests, a.trimmed, a.overflows)
	fmt.Printf("learnt: provider = %.3f x library + %.0f tokens (margin %.0f)\n", scale, overhead, margin)
}

// config is what the loop runs against.
type config struct {
	BaseURL, APIKey, Model string
	// Window is the tokens a request may hold.
	Window int
	// Tasks are the user's requests, one turn each.
	Tasks []string
}

// run runs one user turn per task: it sends the history (trimmed by
// complete), runs the tools the model calls, and sends again until the
// model answers.
func run(ctx context.Context, cfg config) (*agent, error) {
	a := &agent{
		client: openai.NewClient(option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey)),
		window: cfg.Window,
		params: openai.ChatCompletionNewParams{Model: cfg.Model, Tools: tools()},
		msgs:   []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools before you answer.")},
	}
	for i, task := range cfg.Tasks {
		a.msgs = append(a.msgs, openai.UserMessage(task))
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
				a.msgs = append(a.msgs, openai.ToolMessage(runTool(c.Function.Name, c.Function.Arguments), c.ID))
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
