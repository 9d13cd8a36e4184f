// Package fakeprovider is a local OpenAI Chat Completions endpoint, for the
// adapter's agent-loop test and its agentloop example: both drive the real
// openai-go client against it.
//
// The provider counts a request its own way, as a real one does: Factor
// times the library's Heuristic estimate of the messages (decoded into the
// SDK's param types and converted with the adapter's ToHistory), rounded
// up, plus EstimateText of the tools JSON exactly as received. Above Limit
// it answers as OpenAI does, HTTP 400 with a context_length_exceeded error
// stating both sizes; a broken tool pairing gets OpenAI's HTTP 400 for it.
// Otherwise it plays a scripted tool-using model (see [Task]) and reports
// its count as usage.prompt_tokens. A [Judge] may count and check the
// requests instead (the adapter's loop matrix).
//
// The package also holds the rest of the simulated world the loop needs:
// the tool definitions ([Tools]), the user tasks ([Task]) and the tool
// results ([RunTool]), all deterministic.
package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"sync"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/internal/loopserver"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Provider is the endpoint: an http.Handler serving POST
// /chat/completions (any path is accepted). Set Limit and Factor before
// serving; it is safe for concurrent requests.
type Provider struct {
	// Limit is the context window: the largest prompt, in the provider's
	// count, that it accepts.
	Limit int
	// Factor is how many provider tokens the provider counts for one token
	// of the library's Heuristic estimate of the messages.
	Factor float64
	// Judge, when set, counts and checks the requests in place of Factor
	// and decides which fit (Limit is then only the window the overflow
	// error states).
	Judge Judge

	mu    sync.Mutex
	stats Stats
}

// Judge counts and checks the requests of a loop in place of Limit and
// Factor: the loop servers' (loopserver.Judge; adaptertest.Loop is one).
// The provider answers a request that does not fit with OpenAI's
// context_length_exceeded error stating both sizes.
type Judge = loopserver.Judge

// Stats counts what the provider answered, as the loop servers do
// (loopserver.Stats): PairingErrors counts the requests rejected for a
// tool message that answers no call, or a call that no tool message
// answers.
type Stats = loopserver.Stats

// Stats returns the counts so far.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *Provider) count(f func(s *Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// request is what the provider reads of a chat completion request.
type request struct {
	Model    string                                   `json:"model"`
	Messages []openai.ChatCompletionMessageParamUnion `json:"messages"`
	Tools    json.RawMessage                          `json:"tools"`
}

// ServeHTTP answers one chat completion request.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.count(func(s *Stats) { s.Requests++ })
	var req request
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		p.count(func(s *Stats) { s.BadRequests++ })
		writeError(w, "We could not parse the JSON body of your request.", "", "")
		return
	}
	var wire struct {
		Messages []loopserver.OpenAIMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &wire) // a subset of req, which decoded
	if reject := loopserver.OpenAIPairing(len(wire.Messages), func(i int) *loopserver.OpenAIMessage { return &wire.Messages[i] }); reject != "" {
		p.count(func(s *Stats) { s.PairingErrors++ })
		if p.Judge != nil {
			p.Judge.Unpaired(reject)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, reject)
		return
	}
	hist, err := hopenai.ToHistory(req.Messages)
	if err != nil {
		p.count(func(s *Stats) { s.BadRequests++ })
		writeError(w, "Invalid 'messages': "+err.Error(), "messages", "")
		return
	}
	prompt, overflow := p.judge(req, hist)
	if overflow != "" {
		p.count(func(s *Stats) { s.Overflows++ })
		writeError(w, overflow, "messages", "context_length_exceeded")
		return
	}
	var id int
	p.count(func(s *Stats) { s.Accepted++; id = s.Accepted })
	reply := play(hist)
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	completionTokens := 12 + 20*len(reply.ToolCalls)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id":      "chatcmpl-" + strconv.Itoa(id),
		"object":  "chat.completion",
		"created": 1700000000 + id,
		"model":   req.Model,
		"choices": []any{map[string]any{"index": 0, "message": reply, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]int{"prompt_tokens": prompt, "completion_tokens": completionTokens, "total_tokens": prompt + completionTokens},
	})
}

// judge returns the provider's count of a request whose messages convert
// to hist, and the message of OpenAI's context_length_exceeded error when
// it exceeds the window ("" when it fits).
func (p *Provider) judge(req request, hist []history.Message) (prompt int, overflow string) {
	if p.Judge != nil {
		holds := func(text string) bool {
			for _, m := range req.Messages {
				if m.OfUser != nil && m.OfUser.Content.OfString.Value == text {
					return true
				}
			}
			return false
		}
		prompt, fits := p.Judge.Receive(hist, string(req.Tools), holds)
		if fits {
			return prompt, ""
		}
		// OpenAI's wording without functions (docs/overflow.md): the
		// judge counts the request as a whole.
		return prompt, fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.",
			p.Limit, prompt)
	}
	msgTokens := int(math.Ceil(p.Factor * float64(history.Estimate(hist, nil))))
	toolTokens := history.EstimateText(string(req.Tools))
	prompt = msgTokens + toolTokens
	if prompt <= p.Limit {
		return prompt, ""
	}
	// OpenAI's wording when functions are sent (docs/overflow.md).
	return prompt, fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens (%d in the messages, %d in the functions). Please reduce the length of the messages or functions.",
		p.Limit, prompt, msgTokens, toolTokens)
}

// replyMessage is an assistant message as the API returns it.
type replyMessage struct {
	Role      string      `json:"role"`
	Content   *string     `json:"content"`
	Refusal   *string     `json:"refusal"`
	ToolCalls []replyCall `json:"tool_calls,omitempty"`
}

type replyCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

var (
	taskRe = regexp.MustCompile(`^Task (\d+): .*\(steps=(\d+)\)$`)
	callRe = regexp.MustCompile(`^call_(\d+)_(\d+)_\d+$`)
)

// play is the scripted model. The latest task ("Task T: ... (steps=S)")
// asks for S tool steps: the model answers it with step 1, and each
// time the newest assistant message after the task called the tools of
// step s < S, with step s+1; after step S, with a final text. A step
// calls one or two tools (see [StepCalls]); call IDs are
// call_<task>_<step>_<k>, so the step is read back from them even when the
// trim dropped the earlier steps or elided their results.
func play(hist []history.Message) replyMessage {
	task, steps, at := 0, 0, -1
	for i := len(hist) - 1; i >= 0; i-- {
		if m := taskRe.FindStringSubmatch(hist[i].Content); hist[i].Role == history.RoleUser && m != nil {
			task, _ = strconv.Atoi(m[1])
			steps, _ = strconv.Atoi(m[2])
			at = i
			break
		}
	}
	done := 0
	for i := len(hist) - 1; i > at && at >= 0; i-- {
		if calls := hist[i].ToolCalls; hist[i].Role == history.RoleAssistant && len(calls) > 0 {
			if m := callRe.FindStringSubmatch(calls[0].ID); m != nil {
				done, _ = strconv.Atoi(m[2])
			}
			break
		}
	}
	if at < 0 || done >= steps {
		text := fmt.Sprintf("Task %d is done: %d tool steps.", task, done)
		return replyMessage{Role: "assistant", Content: &text}
	}
	step := done + 1
	out := replyMessage{Role: "assistant"}
	for k := range StepCalls(task, step) {
		tool := loopserver.ToolNames[(task*7+step*3+k)%len(loopserver.ToolNames)]
		c := replyCall{ID: fmt.Sprintf("call_%d_%d_%d", task, step, k), Type: "function"}
		c.Function.Name = tool
		c.Function.Arguments = fmt.Sprintf(`{"path":"pkg/mod%d/file%d.go","reason":"step %d of task %d"}`, task%9, step*10+k, step, task)
		out.ToolCalls = append(out.ToolCalls, c)
	}
	return out
}

// writeError answers HTTP 400 with OpenAI's error object.
func writeError(w http.ResponseWriter, msg, param, code string) {
	e := map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// Tools returns the 20 function tools the agent offers on every request,
// each with a description and a JSON schema of a few parameters.
func Tools() []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		out[i] = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        name,
			Description: openai.String(loopserver.ToolDescription(name)),
			Parameters: shared.FunctionParameters{
				"type": "object",
				"properties": map[string]any{
					"path":   map[string]any{"type": "string", "description": "Path relative to the repository root."},
					"reason": map[string]any{"type": "string", "description": "Why the tool is called, for the audit log."},
					"limit":  map[string]any{"type": "integer", "description": "Maximum number of lines or items to return.", "minimum": 1},
				},
				"required": []string{"path", "reason"},
			},
		})
	}
	return out
}

// Task returns the user message of turn n (from 1): a task asking for 1
// to 6 tool steps, written as "Task n: ... (steps=S)" (the loop servers'
// script, loopserver.Task).
func Task(n int) string { return loopserver.Task(n) }

// StepCalls returns how many tools step step of task task calls: 1 or 2.
func StepCalls(task, step int) int { return loopserver.StepCalls(task, step) }

// RunTool returns the result of the tool call with the given ID: 250 to
// 1,150 words of code-review output, a deterministic function of the ID.
func RunTool(id string) string {
	return loopserver.ToolResult(id, loopserver.Words(250, 1150))
}

// RunToolWords is RunTool with the length of the result, in words, given by
// words from a hash of the ID (loopserver.ToolResult).
func RunToolWords(id string, words func(h uint64) int) string {
	return loopserver.ToolResult(id, words)
}
