// Command agentloop is the loop an agent runtime built on anthropic-sdk-go
// runs around every Messages API request, with the histrim Anthropic
// adapter; copy it. Before each request it trims the transcript to the
// model's window with
//
//   - a history.Calibration fed each response's usage, so that the trim
//     aims at the window as Anthropic counts it, not as the library
//     estimates it;
//   - the tool definitions counted with Overhead (history.WithOverhead);
//   - elision of old tool results (history.WithElision) and trimming of
//     the oldest steps of a long task (history.WithStepTrim);
//
// and when the API still answers "prompt is too long", it trims further
// with RecoverOverflow and retries, at most twice. The tools stand in for
// a coding agent's (each returns a long listing).
//
// Against Anthropic, with a task per argument:
//
//	ANTHROPIC_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url, -model and -window point it elsewhere. Its test
// (standin_test.go) runs it for 30 tasks against a local server speaking the
// Messages API that counts 1.3 times the library's estimate, and from task
// 20 on 1.7 times, as when the model behind a name changes.
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

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
)

// maxRetries bounds the RecoverOverflow attempts per request.
const maxRetries = 2

func main() {
	baseURL := flag.String("base-url", "https://api.anthropic.com", "the Messages API's base URL")
	model := flag.String("model", "claude-sonnet-4-5", "the model")
	window := flag.Int("window", 200_000-8_192, "the tokens a request may hold: the model's window less the reply's room")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	a, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("ANTHROPIC_API_KEY"),
		Model: *model, Window: *window, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	scale, overhead, margin, _ := a.cal.Model()
	fmt.Printf("%d tasks, %d requests (%d trimmed), transcript of %d messages\n", len(tasks), a.requests, a.trimmed, len(a.transcript))
	fmt.Printf("rejected for length: %d, all recovered by RecoverOverflow\n", a.overflows)
	fmt.Printf("calibration: provider = %.3f x estimate + %.0f tokens (margin %.0f)\n", scale, overhead, margin)
}

// config is what the loop runs against.
type config struct {
	BaseURL, APIKey, Model string
	// Window is the tokens a request may hold.
	Window int
	// Tasks are the user's requests, one turn each.
	Tasks []string
	// beforeTask, when set, is called before task n (from 1) is sent.
	beforeTask func(n int)
}

// run runs one user turn per task.
func run(ctx context.Context, cfg config) (*agent, error) {
	client := anthropic.NewClient(option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey))
	a := newAgent(client, anthropic.MessageNewParams{
		Model:     anthropic.Model(cfg.Model),
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are a coding agent. Use the tools to inspect and change the repository."}},
		Tools:     tools(),
	}, cfg.Window)
	for i, task := range cfg.Tasks {
		if cfg.beforeTask != nil {
			cfg.beforeTask(i + 1)
		}
		if err := a.runTurn(ctx, task); err != nil {
			return nil, fmt.Errorf("agentloop: task %d: %w", i+1, err)
		}
	}
	return a, nil
}

// agent keeps the whole transcript and sends a trimmed view of it with
// every request.
type agent struct {
	client     anthropic.Client
	window     int                        // the tokens a request may hold: the model's input window
	params     anthropic.MessageNewParams // model, system prompt, tools: the same on every request
	transcript []anthropic.MessageParam
	cal        history.Calibration // one per model; save it with json.Marshal(&cal) across restarts
	opts       []history.Option

	requests, trimmed, overflows, promptSum int
}

func newAgent(client anthropic.Client, params anthropic.MessageNewParams, window int) *agent {
	a := &agent{client: client, params: params, window: window}
	a.opts = []history.Option{
		history.WithCalibration(&a.cal),
		history.WithOverhead(hanthropic.Overhead(params, nil)), // the tools are sent with every request
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	return a
}

// runTurn sends the user's task and runs the tools the model calls until
// it answers.
func (a *agent) runTurn(ctx context.Context, task string) error {
	a.transcript = append(a.transcript, anthropic.NewUserMessage(anthropic.NewTextBlock(task)))
	for {
		reply, err := a.send(ctx)
		if err != nil {
			return err
		}
		a.transcript = append(a.transcript, reply.ToParam())
		if reply.StopReason != anthropic.StopReasonToolUse {
			return nil
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range reply.Content {
			if call, ok := b.AsAny().(anthropic.ToolUseBlock); ok {
				results = append(results, anthropic.NewToolResultBlock(call.ID, runTool(call.Name, string(call.Input)), false))
			}
		}
		a.transcript = append(a.transcript, anthropic.NewUserMessage(results...))
	}
}

// send trims the transcript to the window and sends it; when the API
// rejects it for its length, it trims further and retries, at most
// maxRetries times. The transcript itself is never cut: what was dropped
// from the request is still there for the next one to reconsider.
func (a *agent) send(ctx context.Context) (*anthropic.Message, error) {
	msgs, res, err := hanthropic.Trim(a.params.System, a.transcript, a.window, a.opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err // invalid messages or options
	}
	// ErrLatestTurnTooLarge: msgs is the smallest request possible; send
	// it, and let the API say whether it fits.
	for attempt := 1; ; attempt++ {
		params := a.params
		params.Messages = msgs
		a.requests++
		reply, err := a.client.Messages.New(ctx, params)
		if err == nil {
			u := reply.Usage
			a.cal.Observe(res.TokensAfter, int(u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens))
			if res.Trimmed {
				a.trimmed++
				a.promptSum += int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
			}
			return reply, nil
		}
		if attempt > maxRetries {
			return nil, err
		}
		var rerr error
		msgs, res, rerr = hanthropic.RecoverOverflow(a.params.System, msgs, err, attempt, a.opts...)
		switch {
		case errors.Is(rerr, history.ErrNotOverflow):
			return nil, err // a rate limit, an overload...: not ours to fix
		case rerr != nil:
			return nil, rerr // nothing left to drop; it wraps err
		}
		a.overflows++
	}
}

// toolNames are the agent's tools.
var toolNames = []string{
	"read_file", "write_file", "list_dir", "grep", "glob", "run_tests", "run_command", "git_status",
	"git_diff", "git_log", "git_blame", "open_pr", "fetch_url", "search_docs", "lint", "format",
	"build", "list_symbols", "find_references", "rename_symbol",
}

// tools returns the definitions of the agent's tools, sent with every
// request.
func tools() []anthropic.ToolUnionParam {
	var out []anthropic.ToolUnionParam
	for _, name := range toolNames {
		t := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{
				"path":  map[string]any{"type": "string", "description": "Path of the file or directory, relative to the repository root."},
				"query": map[string]any{"type": "string", "description": "What to look for or run; see the tool's description."},
			},
			Required: []string{"path"},
		}, name)
		t.OfTool.Description = anthropic.String("Use " + name + " in the repository workspace. Returns plain text.")
		out = append(out, t)
	}
	return out
}

// runTool stands in for a tool: it returns a listing of 20 to 80 lines, as
// a grep or a test run does, the same for the same call.
func runTool(name, input string) string {
	h := fnv.New32a()
	h.Write([]byte(name + input))
	n := 20 + int(h.Sum32()%61)
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s:%d: func handler%d(ctx context.Context, req *Request) error returns nil when the request is valid\n", name, i+1, i)
	}
	return b.String()
}
