// Package loopserver holds the local providers that the framework modules'
// agent loops and examples run against (frameworks/adk, frameworks/genkit,
// frameworks/fantasy, frameworks/trpc and adapters/goopenai): an OpenAI
// chat-completions endpoint ([OpenAI]) and a Gemini generateContent
// endpoint ([Gemini]) that read the request as it travels, apply the
// provider's tool-pairing rule, count it through a [Judge] and answer an
// overflow with the provider's real HTTP 400 body; and the scripted world
// of the loops: the tasks, the 20 tools and their results, and the model
// that calls them ([Play]).
//
// Each framework drives its own agent loop against these servers, with
// its own client, tools and conversion; what the server reads of a
// request depends only on the wire format, never on the module under
// test.
package loopserver

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/histrim/history"
)

// SystemPrompt is the loops' system prompt.
const SystemPrompt = "You are a coding agent. Use the tools to inspect the repository before you answer."

// Judge counts and checks the requests of a loop (adaptertest.Loop is
// one, [Skew] another). The server passes it every well-paired request
// (Receive): its messages as history messages, the tools JSON as received,
// and a test of whether the request holds a user message with exactly a
// given text; Receive returns the provider's count and whether it fits
// the window. The server tells it of every request it rejects for its
// pairing (Unpaired, with the provider's message).
type Judge interface {
	Receive(msgs []history.Message, tools string, holds func(text string) bool) (prompt int, fits bool)
	Unpaired(why string)
}

// Skew is a Judge that counts Factor times the Heuristic's count of the
// messages, plus the Heuristic's count of the tools JSON, and accepts up
// to Window tokens. It records nothing: the servers' Stats count the
// answers. It is what the examples run against.
type Skew struct {
	// Window is the largest count accepted.
	Window int
	// Factor multiplies the Heuristic's count of the messages.
	Factor float64
}

// Receive returns the count and whether it fits Window.
func (s Skew) Receive(msgs []history.Message, tools string, _ func(string) bool) (int, bool) {
	n := int(math.Ceil(s.Factor*float64(history.Estimate(msgs, nil)))) + history.EstimateText(tools)
	return n, n <= s.Window
}

// Unpaired does nothing: the server counts pairing errors in its Stats.
func (Skew) Unpaired(string) {}

// Stats counts what a server answered.
type Stats struct {
	// Requests counts every request received; Accepted those answered
	// with a reply.
	Requests, Accepted int
	// Overflows counts the requests rejected for their length,
	// PairingErrors those rejected for their tool pairing, BadRequests
	// those that could not be read.
	Overflows, PairingErrors, BadRequests int
}

// counter is the part of a server that counts its answers and records
// what it found wrong besides them.
type counter struct {
	mu       sync.Mutex
	stats    Stats
	problems []string
}

func (c *counter) count(f func(s *Stats)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.stats)
}

func (c *counter) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// judge takes the steps every server takes on a decoded request: one
// that breaks the provider's pairing rule (pairing, its 400 body; "" when
// it pairs) is answered with that body; otherwise j counts msgs with
// tools (JSON, "null" for none) and a request over the window is answered
// with overflow(prompt). ok reports that the request was accepted, the
// id-th: the server then answers it with the reply of Play.
func (c *counter) judge(w http.ResponseWriter, j Judge, pairing string, msgs []history.Message, tools json.RawMessage,
	holds func(string) bool, overflow func(prompt int) string) (prompt, id int, ok bool) {
	if pairing != "" {
		c.count(func(st *Stats) { st.PairingErrors++ })
		j.Unpaired(pairing)
		writeJSON(w, http.StatusBadRequest, pairing)
		return 0, 0, false
	}
	text := string(tools)
	if text == "null" {
		text = ""
	}
	prompt, fits := j.Receive(msgs, text, holds)
	if !fits {
		c.count(func(st *Stats) { st.Overflows++ })
		writeJSON(w, http.StatusBadRequest, overflow(prompt))
		return prompt, 0, false
	}
	c.count(func(st *Stats) { st.Accepted++; id = st.Accepted })
	return prompt, id, true
}

// Stats returns the counts so far.
func (c *counter) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Problems returns what the server found wrong besides overflows and
// pairing: unreadable requests, unexpected paths. A loop test fails on
// any.
func (c *counter) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.problems...)
}

// ToolNames are the names of the 20 tools every loop offers.
var ToolNames = []string{
	"read_file", "write_file", "list_dir", "grep", "run_tests", "run_command", "git_diff", "git_log",
	"search_docs", "fetch_url", "open_issue", "comment_issue", "build", "lint", "format_code",
	"query_db", "describe_table", "read_logs", "deploy_preview", "ask_user",
}

// ToolDescription returns the description of the tool name.
func ToolDescription(name string) string {
	return fmt.Sprintf("Use %s to %s in the repository workspace. Returns plain text; large outputs are truncated to the first 2,000 lines.",
		name, strings.ReplaceAll(name, "_", " "))
}

// ToolArgs are the arguments every tool takes; frameworks that derive a
// schema from a Go type declare their tools with it (no schema tags: the
// frameworks' schema generators read them each their own way).
type ToolArgs struct {
	// Path is the file or directory the tool works on.
	Path string `json:"path"`
	// Reason says why the tool is called; the script writes the step and
	// the task there.
	Reason string `json:"reason"`
	// Limit bounds the lines or items returned; the script leaves it out.
	Limit int `json:"limit,omitempty"`
}

// ToolParameters returns the JSON schema of every tool's arguments
// (ToolArgs), as a fresh map.
func ToolParameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":   map[string]any{"type": "string", "description": "Path relative to the repository root."},
			"reason": map[string]any{"type": "string", "description": "Why the tool is called, for the audit log."},
			"limit":  map[string]any{"type": "integer", "description": "Maximum number of lines or items to return."},
		},
		"required": []any{"path", "reason"},
	}
}

// Task returns the user message of turn n (from 1): a task asking for
// Steps(n) tool steps, written as "Task n: ... (steps=S)".
func Task(n int) string {
	return fmt.Sprintf("Task %d: review module mod%d, fix what the tests report and summarise the change (steps=%d)", n, n%9, Steps(n))
}

// Steps returns how many tool steps task n asks for: 1 to 6.
func Steps(n int) int { return 1 + int(mix(uint32(n)*2654435761)%6) }

// StepCalls returns how many tools step step of task task calls: 1 or 2.
func StepCalls(task, step int) int {
	if (task+step)%3 == 0 {
		return 2
	}
	return 1
}

// Bursts returns a StepCalls for PlayWith under which step step of task
// task calls from 1 to n tools, a deterministic function of both: the
// bursts of tool results an agent meets when a step fans out.
func Bursts(n int) func(task, step int) int {
	return func(task, step int) int {
		return 1 + int(mix(uint32(task)*2654435761+uint32(step)*40503)%uint32(max(n, 1)))
	}
}

// Words returns a function giving a tool result's length, in words, from a
// hash: from lo to hi.
func Words(lo, hi int) func(h uint64) int {
	return func(h uint64) int { return lo + int(h%uint64(max(hi-lo+1, 1))) }
}

// ToolResult returns the result of the tool call with the given ID:
// words(h) words of code-review output for a hash h of the ID, a
// deterministic function of it.
func ToolResult(id string, words func(h uint64) int) string {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	n := words(uint64(mix(h)))
	var b strings.Builder
	for i := range n {
		h = mix(h + uint32(i))
		if i > 0 {
			if i%12 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		switch h % 5 {
		case 0:
			b.WriteString("line")
			b.WriteString(strconv.Itoa(int(h % 997)))
			b.WriteByte(':')
		case 1:
			b.WriteString(vocabulary[h%uint32(len(vocabulary))])
			b.WriteString("()")
		default:
			b.WriteString(vocabulary[h%uint32(len(vocabulary))])
		}
	}
	return b.String()
}

var vocabulary = []string{
	"func", "return", "error", "nil", "handler", "request", "response", "context", "buffer", "value",
	"the", "test", "passed", "failed", "expected", "got", "config", "module", "index", "cache",
	"update", "delete", "insert", "select", "string", "int", "struct", "interface", "package", "import",
}

// mix scrambles the bits of x (a 32-bit finaliser).
func mix(x uint32) uint32 {
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return x
}

// Call is a tool call of the scripted model.
type Call struct {
	// ID and Name are the call's id and the tool it calls.
	ID, Name string
	// Arguments is the JSON of the call's arguments.
	Arguments string
}

// Reply is the scripted model's answer: tool calls, or a final text.
type Reply struct {
	// Text is the final answer, when Calls is empty.
	Text string
	// Calls are the tool calls of a step.
	Calls []Call
}

var (
	taskRe = regexp.MustCompile(`^Task (\d+): .*\(steps=(\d+)\)$`)
	stepRe = regexp.MustCompile(`step (\d+) of task (\d+)`)
)

// Play is the scripted model. The latest task of msgs ("Task T: ...
// (steps=S)") asks for S tool steps: the model answers it with step 1, and
// each time the newest assistant message after the task called the tools
// of step s < S, with step s+1; after step S, with a final text. A step
// calls one or two tools (StepCalls); the step is read back from the
// calls' arguments ("step s of task T"), so it is found even when a trim
// dropped the earlier steps or elided their results, and whatever ids a
// framework gives the calls. The IDs it gives are call_<task>_<step>_<k>.
func Play(msgs []history.Message) Reply { return PlayWith(msgs, StepCalls) }

// PlayWith is Play with calls(task, step) tools called at each step
// (Play's StepCalls; Bursts for more).
func PlayWith(msgs []history.Message, calls func(task, step int) int) Reply {
	task, steps, at := 0, 0, -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := taskRe.FindStringSubmatch(msgs[i].Content); msgs[i].Role == history.RoleUser && m != nil {
			task, _ = strconv.Atoi(m[1])
			steps, _ = strconv.Atoi(m[2])
			at = i
			break
		}
	}
	done := 0
	for i := len(msgs) - 1; i > at && at >= 0; i-- {
		if calls := msgs[i].ToolCalls; msgs[i].Role == history.RoleAssistant && len(calls) > 0 {
			if m := stepRe.FindStringSubmatch(calls[0].Arguments); m != nil && m[2] == strconv.Itoa(task) {
				done, _ = strconv.Atoi(m[1])
			}
			break
		}
	}
	if at < 0 || done >= steps {
		return Reply{Text: fmt.Sprintf("Task %d is done: %d tool steps.", task, done)}
	}
	step := done + 1
	var r Reply
	for k := range calls(task, step) {
		r.Calls = append(r.Calls, Call{
			ID:        fmt.Sprintf("call_%d_%d_%d", task, step, k),
			Name:      ToolNames[(task*7+step*3+k)%len(ToolNames)],
			Arguments: fmt.Sprintf(`{"path":"pkg/mod%d/file%d.go","reason":"step %d of task %d"}`, task%9, step*10+k, step, task),
		})
	}
	return r
}
