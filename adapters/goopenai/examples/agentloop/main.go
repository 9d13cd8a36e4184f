// Command agentloop is an agent loop on go-openai with histrim, through
// the door: one goopenai.Trimmer per conversation, Fit before every request
// (the model's window and output room from its name, the tools counted,
// the exact counter, a Calibration the Trimmer owns, old tool results
// elided and old steps of a long task dropped), an overflow recovered from
// with the Trimmer's RecoverOverflow on the same transcript, at most twice,
// and each response's usage given to Observe. The loop keeps the whole
// transcript; Fit sends a view of it that fits. Copy it; the tools stand in
// for a coding agent's (each returns a long listing).
//
// Against OpenAI, with a task per argument:
//
//	OPENAI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url and -model point it at another OpenAI-compatible server (the
// model's name must be in the models table: docs/models.md). Its test
// (standin_test.go) runs it for 30 tasks against a local endpoint that
// counts 1.3 times the library's estimate and answers an overflow with
// OpenAI's 400, for the model it names (gpt-3.5-turbo, 16,385 tokens in
// the table; the endpoint enforces 16,000, as a deployment with a smaller
// window does, and the Trimmer keeps below what its overflow says).
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
	"github.com/histrim/history/adapters/goopenai"
	openai "github.com/sashabaranov/go-openai"
)

func main() {
	baseURL := flag.String("base-url", "https://api.openai.com/v1", "the OpenAI-compatible API's base URL")
	model := flag.String("model", openai.GPT4o, "the model, by a name the models table knows")
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
	fmt.Printf("%d tasks: %d requests, %d trimmed, %d rejected for length (recovered), %d messages kept, %d usages observed\n",
		len(tasks), rep.Requests, rep.Trimmed, rep.Overflows, rep.Messages, rep.Observed)
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

// report is what the loop did.
type report struct {
	Requests, Trimmed, Overflows, Messages int
	// Observed counts the responses whose usage the Trimmer's Calibration
	// took (Observe's verdict was not history.VerdictInvalid).
	Observed int
}

// run runs one user turn per task: it sends the history (through the
// door), runs the tools the model calls, and sends again until the model
// answers.
func run(ctx context.Context, cfg config) (*report, error) {
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	client := openai.NewClientWithConfig(oc)

	// The request as the runtime keeps it: the model, the tools, and the
	// whole transcript as Messages.
	req := openai.ChatCompletionRequest{Model: cfg.Model, Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem,
		Content: "You are a coding agent. Use the tools to inspect the repository before you answer."}}}
	for _, name := range toolNames {
		req.Tools = append(req.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: "Use " + name + " in the repository workspace.", Parameters: toolParameters}})
	}
	tr := goopenai.NewTrimmer() // one per conversation
	rep := &report{}
	for _, task := range cfg.Tasks {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: task})
		for {
			send, res, err := tr.Fit(ctx, req)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				return nil, err // an unknown model (models.ErrUnknownModel), invalid messages
			}
			// (With ErrLatestTurnTooLarge, send holds the smallest history: try it.)
			rep.Requests++
			resp, err := client.CreateChatCompletion(ctx, send)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				if send.Messages, res, rerr = tr.RecoverOverflow(req.Messages, err, attempt); rerr != nil {
					break // not an overflow, or nothing left to drop: err stands
				}
				rep.Overflows++
				rep.Requests++
				resp, err = client.CreateChatCompletion(ctx, send)
			}
			if err != nil {
				return nil, err
			}
			if tr.Observe(resp.Usage) != history.VerdictInvalid {
				rep.Observed++
			}
			if res.Trimmed {
				rep.Trimmed++
			}
			if len(resp.Choices) == 0 {
				return nil, errors.New("agentloop: no choice in the response")
			}
			reply := resp.Choices[0].Message
			req.Messages = append(req.Messages, reply)
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID,
					Content: runTool(c.Function.Name, c.Function.Arguments)})
			}
		}
	}
	rep.Messages = len(req.Messages)
	return rep, nil
}

// toolNames are the agent's tools.
var toolNames = []string{
	"read_file", "write_file", "list_dir", "grep", "run_tests", "run_command", "git_diff", "git_log",
	"search_docs", "fetch_url", "open_issue", "comment_issue", "build", "lint", "format_code",
	"query_db", "describe_table", "read_logs", "deploy_preview", "ask_user",
}

// toolParameters is the JSON schema of every tool's arguments.
var toolParameters = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"path":   map[string]any{"type": "string", "description": "Path relative to the repository root."},
		"reason": map[string]any{"type": "string", "description": "Why the tool is called, for the audit log."},
	},
	"required": []any{"path", "reason"},
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
