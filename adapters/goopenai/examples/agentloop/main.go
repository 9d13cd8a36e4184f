// Command agentloop is an agent loop on go-openai with histrim: before
// every request the history is trimmed to the model's window
// (goopenai.Trim, calibrated, the tools counted, old tool results elided
// and old steps of a long task dropped), an overflow is recovered from
// with goopenai.RecoverOverflow, and each response's usage feeds the
// calibration. The history the loop keeps is what was sent plus the
// reply: it never grows past the window. Copy it; the tools stand in for
// a coding agent's (each returns a long listing).
//
// Against OpenAI, with a task per argument:
//
//	OPENAI_API_KEY=... go run . "Review module mod1 and summarise it"
//
// -base-url, -model and -window point it at another OpenAI-compatible
// server. Its test (standin_test.go) runs it for 30 tasks against a local
// endpoint with a 16k window that counts 1.3 times the library's estimate
// and answers an overflow with OpenAI's 400.
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
	model := flag.String("model", openai.GPT4o, "the model")
	window := flag.Int("window", 128_000-16_384, "the tokens a request may hold: the model's window less the reply's room")
	flag.Parse()
	tasks := flag.Args()
	if len(tasks) == 0 {
		tasks = []string{"Review module mod1, fix what the tests report and summarise the change."}
	}
	rep, err := run(context.Background(), config{BaseURL: *baseURL, APIKey: os.Getenv("OPENAI_API_KEY"),
		Model: *model, Window: *window, Tasks: tasks})
	if err != nil {
		log.Fatal(err)
	}
	scale, overhead, _, _ := rep.Calibration.Model()
	fmt.Printf("%d tasks: %d requests, %d trimmed, %d rejected for length (recovered), %d messages kept\n",
		len(tasks), rep.Requests, rep.Trimmed, rep.Overflows, rep.Messages)
	fmt.Printf("calibration learnt the provider's count: %.3fx%+.0f tokens\n", scale, overhead)
}

// config is what the loop runs against.
type config struct {
	BaseURL, APIKey, Model string
	// Window is the tokens a request may hold.
	Window int
	// Tasks are the user's requests, one turn each.
	Tasks []string
}

// report is what the loop did.
type report struct {
	Requests, Trimmed, Overflows, Messages int
	Calibration                            history.Calibration
}

// run runs one user turn per task: it sends the history (trimmed), runs
// the tools the model calls, and sends again until the model answers.
func run(ctx context.Context, cfg config) (*report, error) {
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	client := openai.NewClientWithConfig(oc)

	req := openai.ChatCompletionRequest{Model: cfg.Model}
	for _, name := range toolNames {
		req.Tools = append(req.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: "Use " + name + " in the repository workspace.", Parameters: toolParameters}})
	}
	rep := &report{}
	opts := []history.Option{
		history.WithCalibration(&rep.Calibration),         // aim at the provider's count, learnt from usage
		history.WithOverhead(goopenai.Overhead(req, nil)), // the tools count too
		history.WithElision(history.ElideOptions{}),       // old tool results go first
		history.WithStepTrim(),                            // then old steps of a long task
	}
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem,
		Content: "You are a coding agent. Use the tools to inspect the repository before you answer."}}
	for _, task := range cfg.Tasks {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: task})
		for {
			sent, res, err := goopenai.Trim(msgs, cfg.Window, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				return nil, err // invalid messages or options
			}
			// (With ErrLatestTurnTooLarge, sent is the smallest history: try it.)
			req.Messages = sent
			rep.Requests++
			resp, err := client.CreateChatCompletion(ctx, req)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				if req.Messages, res, rerr = goopenai.RecoverOverflow(req.Messages, err, attempt, opts...); rerr != nil {
					break // not an overflow, or nothing left to drop: err stands
				}
				rep.Overflows++
				rep.Requests++
				resp, err = client.CreateChatCompletion(ctx, req)
			}
			if err != nil {
				return nil, err
			}
			rep.Calibration.Observe(res.TokensAfter, resp.Usage.PromptTokens)
			if res.Trimmed {
				rep.Trimmed++
			}
			if len(resp.Choices) == 0 {
				return nil, errors.New("agentloop: no choice in the response")
			}
			reply := resp.Choices[0].Message
			msgs = append(req.Messages, reply)
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID,
					Content: runTool(c.Function.Name, c.Function.Arguments)})
			}
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
