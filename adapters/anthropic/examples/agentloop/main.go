// Command agentloop is the loop an agent runtime built on anthropic-sdk-go
// runs around every Messages API request, with the histrim Anthropic
// adapter, through the door; copy it. One hanthropic.Trimmer per
// conversation; before each request its Fit trims the transcript the
// request carries for the model the request names, with
//
//   - the model's window and output room from the models table
//     (docs/models.md), the request's max_tokens as the reply's room;
//   - the system prompt and the tool definitions counted (Overhead);
//   - a Calibration the Trimmer owns, fed each response's usage by
//     Observe, so that the trim aims at the window as Anthropic counts it,
//     not as the library estimates it;
//   - elision of old tool results and trimming of the oldest steps of a
//     long task (the task preset of the fit package);
//   - a cache breakpoint on the kept prefix while the request has room
//     for one;
//
// and when the API still answers "prompt is too long", the Trimmer's
// RecoverOverflow trims below what the API said, for this request and the
// later ones, and the loop retries, at most twice. The tools stand in for
// a coding agent's (each returns a long listing).
//
// Against Anthropic, with a task per argument:
//
//	ANTHROPIC_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url and -model point it elsewhere (the model's name must be in the
// models table). Its test (standin_test.go) runs it for 30 tasks against a
// local server speaking the Messages API for claude-sonnet-4-6 that counts
// 1.3 times the library's estimate, and from task 20 on 1.7 times, as when
// the model behind a name changes; the server enforces a window of 10,000
// tokens, far below the model's, so that 30 tasks outgrow it: the
// Trimmer learns it from the server's first "prompt is too long" and keeps
// below it, as it does for a deployment whose window is smaller than the
// table's.
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
	model := flag.String("model", "claude-sonnet-4-5", "the model, by a name the models table knows")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	a, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("ANTHROPIC_API_KEY"),
		Model: *model, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tasks, %d requests (%d trimmed), transcript of %d messages\n", len(tasks), a.requests, a.trimmed, len(a.params.Messages))
	fmt.Printf("rejected for length: %d, all recovered by RecoverOverflow; %d usages observed\n", a.overflows, a.observed)
}

// config is what the loop runs against.
type config struct {
	BaseURL, APIKey string
	// Model names the model: its window and output room come from the
	// models table.
	Model string
	// Tasks are the user's requests, one turn each.
	Tasks []string
	// beforeTask, when set, is called before task n (from 1) is sent.
	beforeTask func(n int)
}

// run runs one user turn per task.
func run(ctx context.Context, cfg config) (*agent, error) {
	a := &agent{
		client: anthropic.NewClient(option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey)),
		params: anthropic.MessageNewParams{
			Model:     anthropic.Model(cfg.Model),
			MaxTokens: 1024,
			System:    []anthropic.TextBlockParam{{Text: "You are a coding agent. Use the tools to inspect and change the repository."}},
			Tools:     tools(),
		},
		tr: hanthropic.NewTrimmer(nil), // one per conversation; Fit reads the system prompt from the request
	}
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

// agent keeps the whole transcript and sends what the door fits of it
// with every request.
type agent struct {
	client anthropic.Client
	params anthropic.MessageNewParams // model, system prompt, tools, and the whole transcript as Messages
	tr     *hanthropic.Trimmer        // one per conversation

	requests, trimmed, overflows, observed int
}

// runTurn sends the user's task and runs the tools the model calls until
// it answers.
func (a *agent) runTurn(ctx context.Context, task string) error {
	a.params.Messages = append(a.params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(task)))
	for {
		reply, err := a.send(ctx)
		if err != nil {
			return err
		}
		a.params.Messages = append(a.params.Messages, reply.ToParam())
		if reply.StopReason != anthropic.StopReasonToolUse {
			return nil
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range reply.Content {
			if call, ok := b.AsAny().(anthropic.ToolUseBlock); ok {
				results = append(results, anthropic.NewToolResultBlock(call.ID, runTool(call.Name, string(call.Input)), false))
			}
		}
		a.params.Messages = append(a.params.Messages, anthropic.NewUserMessage(results...))
	}
}

// send fits the transcript to the model's window and sends it; when the
// API rejects it for its length, it trims further and retries, at most
// maxRetries times. The transcript itself is never cut: what was dropped
// from the request is still there for the next one to reconsider.
func (a *agent) send(ctx context.Context) (*anthropic.Message, error) {
	send, res, err := a.tr.Fit(ctx, a.params)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err // an unknown model (models.ErrUnknownModel), invalid messages
	}
	// ErrLatestTurnTooLarge: send holds the smallest request possible;
	// send it, and let the API say whether it fits.
	a.requests++
	reply, err := a.client.Messages.New(ctx, send)
	for attempt := 1; err != nil && attempt <= maxRetries; attempt++ {
		var rerr error
		send.Messages, res, rerr = a.tr.RecoverOverflow(a.params.Messages, err, attempt)
		switch {
		case errors.Is(rerr, history.ErrNotOverflow):
			return nil, err // a rate limit, an overload...: not ours to fix
		case rerr != nil:
			return nil, rerr // nothing left to drop; it wraps err
		}
		a.overflows++
		a.requests++
		reply, err = a.client.Messages.New(ctx, send)
	}
	if err != nil {
		return nil, err
	}
	if a.tr.Observe(reply.Usage) != history.VerdictInvalid {
		a.observed++
	}
	if res.Trimmed {
		a.trimmed++
	}
	return reply, nil
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
