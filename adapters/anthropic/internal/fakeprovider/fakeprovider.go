// Package fakeprovider is a local stand-in for the Anthropic Messages API,
// shared by the adapter's agent-loop test and its agentloop example: an
// http.Handler that speaks the API's wire format to the real
// anthropic-sdk-go client, counts each request's prompt as a provider with
// its own tokenizer would, rejects a prompt over its window with the API's
// own "prompt is too long" error, and otherwise answers from a fixed
// script of tool calls and final texts. The script (the tasks, the tool
// definitions and the tools' outputs) is here too, so that the test and
// the example run the same conversation.
//
// Everything is deterministic: the same requests get the same answers.
package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
	"github.com/histrim/history/internal/loopserver"
)

// Model is the model name the provider answers as.
const Model = anthropic.ModelClaudeSonnet4_6

// Provider is the simulated Messages API. It counts a request's prompt as
//
//	ceil(F × history.Estimate(ToHistory(system, messages), nil)) + history.EstimateText(tools)
//
// where tools is the request's "tools" JSON as received: a tokenizer that
// counts F times the library's estimate, plus the tool definitions. Over
// Limit it answers HTTP 400 with the API's invalid_request_error "prompt is
// too long: N tokens > Limit maximum"; otherwise the next step of the
// script, with usage reporting the count split over input_tokens,
// cache_creation_input_tokens and cache_read_input_tokens, as with prompt
// caching. It checks the tool pairing of every request by the API's rule,
// independently of the adapter, and rejects a broken one with the API's
// HTTP 400. A [Judge] may count and check the requests instead (the
// adapter's loop matrix). Use New; a Provider is safe for concurrent use.
type Provider struct {
	// Judge, when set before serving, counts and checks the requests in
	// place of the factor, and decides which fit (the limit is then only
	// the window the overflow error states).
	Judge Judge

	f     float64
	limit int

	mu    sync.Mutex
	stats Stats
}

// Judge counts and checks the requests of a loop: the loop servers'
// (loopserver.Judge; adaptertest.Loop is one). The provider passes it
// the system prompt with the messages, and a test of whether the request
// holds a user text block with exactly a given text.
type Judge = loopserver.Judge

// Stats counts what the provider received.
type Stats struct {
	// Requests counts every request; Accepted those answered with 200.
	Requests, Accepted int
	// Overflows counts the requests rejected as too long.
	Overflows int
	// PairingViolations counts the requests rejected for their tool
	// pairing; Malformed those rejected for anything else (a body or
	// message that does not decode, a script step that cannot be read).
	PairingViolations, Malformed int
	// SchemaTokens is the count of the tool definitions of the latest
	// request.
	SchemaTokens int
	// LastPrompt is the provider's count of the latest request's prompt.
	LastPrompt int
}

// New returns a provider that counts f times the library's estimate of
// the messages, plus the tools, against a window of limit tokens.
func New(f float64, limit int) *Provider { return &Provider{f: f, limit: limit} }

// Stats returns the counts so far.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// SetFactor makes the provider count f times the library's estimate from
// now on, as when a model is replaced by one with another tokenizer.
func (p *Provider) SetFactor(f float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.f = f
}

// Prompt returns the provider's count of a prompt whose messages the
// library estimates at messages tokens, with tool definitions of schema
// tokens.
func (p *Provider) Prompt(messages, schema int) int {
	p.mu.Lock()
	f := p.f
	p.mu.Unlock()
	return int(math.Ceil(f*float64(messages))) + schema
}

// ServeHTTP answers POST /v1/messages.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.stats.Requests++
	n := p.stats.Requests
	p.mu.Unlock()
	reqID := "req_fake" + strconv.Itoa(n)
	w.Header().Set("Request-Id", reqID)
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		p.reject(w, http.StatusNotFound, "not_found_error", "Not found", reqID, &p.stats.Malformed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.reject(w, http.StatusBadRequest, "invalid_request_error", "cannot read the body", reqID, &p.stats.Malformed)
		return
	}
	// The fields read, in the SDK's param types; the tools as received.
	var params struct {
		System   []anthropic.TextBlockParam `json:"system"`
		Messages []anthropic.MessageParam   `json:"messages"`
		Tools    json.RawMessage            `json:"tools"`
	}
	if err := json.Unmarshal(body, &params); err != nil {
		p.reject(w, http.StatusBadRequest, "invalid_request_error", "malformed request body", reqID, &p.stats.Malformed)
		return
	}
	if msg := checkPairing(params.Messages); msg != "" {
		if p.Judge != nil {
			p.Judge.Unpaired(msg)
		}
		p.reject(w, http.StatusBadRequest, "invalid_request_error", msg, reqID, &p.stats.PairingViolations)
		return
	}
	hist, err := hanthropic.ToHistory(params.System, params.Messages)
	if err != nil {
		p.reject(w, http.StatusBadRequest, "invalid_request_error", err.Error(), reqID, &p.stats.Malformed)
		return
	}
	schema := 0
	if len(params.Tools) > 0 {
		schema = history.EstimateText(string(params.Tools))
	}
	var prompt int
	fits := true
	if p.Judge != nil {
		prompt, fits = p.Judge.Receive(hist, string(params.Tools), func(text string) bool { return holds(params.Messages, text) })
	} else {
		prompt = p.Prompt(history.Estimate(hist, nil), schema)
		fits = prompt <= p.limit
	}
	p.mu.Lock()
	p.stats.SchemaTokens, p.stats.LastPrompt = schema, prompt
	p.mu.Unlock()
	if !fits {
		msg := "prompt is too long: " + strconv.Itoa(prompt) + " tokens > " + strconv.Itoa(p.limit) + " maximum"
		p.reject(w, http.StatusBadRequest, "invalid_request_error", msg, reqID, &p.stats.Overflows)
		return
	}
	content, stop, err := next(params.Messages)
	if err != nil {
		p.reject(w, http.StatusBadRequest, "invalid_request_error", err.Error(), reqID, &p.stats.Malformed)
		return
	}
	read, created := prompt*6/10, prompt/10
	out, _ := json.Marshal(map[string]any{
		"id": "msg_fake" + strconv.Itoa(n), "type": "message", "role": "assistant", "model": Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": prompt - read - created, "cache_creation_input_tokens": created,
			"cache_read_input_tokens": read, "output_tokens": 20 + 10*len(content),
		},
	})
	p.mu.Lock()
	p.stats.Accepted++
	p.mu.Unlock()
	_, _ = w.Write(out)
}

// checkPairing applies the API's rule on tool use to msgs, by their blocks
// alone (independently of the adapter), and returns the API's message for
// the first violation, or "": the tool_use blocks of an assistant message
// are answered by tool_result blocks in the next message, and every
// tool_result block answers a tool_use block of the message before.
func checkPairing(msgs []anthropic.MessageParam) string {
	for i, m := range msgs {
		var prev []string // the tool_use ids of the message before
		if i > 0 && msgs[i-1].Role == anthropic.MessageParamRoleAssistant {
			for _, b := range msgs[i-1].Content {
				if b.OfToolUse != nil {
					prev = append(prev, b.OfToolUse.ID)
				}
			}
		}
		answered := map[string]bool{}
		for j, b := range m.Content {
			if r := b.OfToolResult; r != nil {
				if m.Role != anthropic.MessageParamRoleUser || !slices.Contains(prev, r.ToolUseID) {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
						"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, r.ToolUseID)
				}
				answered[r.ToolUseID] = true
			}
		}
		if m.Role != anthropic.MessageParamRoleAssistant {
			continue
		}
		var open []string
		for _, b := range m.Content {
			if b.OfToolUse == nil {
				continue
			}
			if i+1 == len(msgs) || !answers(msgs[i+1], b.OfToolUse.ID) {
				open = append(open, b.OfToolUse.ID)
			}
		}
		if len(open) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(open, ", "))
		}
	}
	return ""
}

// answers reports whether m holds a tool_result block for the tool_use id.
func answers(m anthropic.MessageParam, id string) bool {
	for _, b := range m.Content {
		if b.OfToolResult != nil && b.OfToolResult.ToolUseID == id {
			return true
		}
	}
	return false
}

// holds reports whether a user message of msgs holds a text block with
// exactly text.
func holds(msgs []anthropic.MessageParam, text string) bool {
	for _, m := range msgs {
		if m.Role != anthropic.MessageParamRoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.OfText != nil && b.OfText.Text == text {
				return true
			}
		}
	}
	return false
}

// reject answers with the API's error body and counts the rejection.
func (p *Provider) reject(w http.ResponseWriter, status int, typ, msg, reqID string, counter *int) {
	p.mu.Lock()
	*counter++
	p.mu.Unlock()
	body, _ := json.Marshal(map[string]any{
		"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": reqID,
	})
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// next returns the script's answer to a request whose last message is
// last: the first tool step of a task, the next step after a step's
// results, or the final text after the last step.
func next(msgs []anthropic.MessageParam) ([]map[string]any, string, error) {
	if len(msgs) == 0 {
		return nil, "", fmt.Errorf("messages: at least one message is required")
	}
	last := msgs[len(msgs)-1]
	if last.Role != anthropic.MessageParamRoleUser || len(last.Content) == 0 {
		return nil, "", fmt.Errorf("messages: the last message must be a user message")
	}
	turn, step := 0, 0
	switch b := last.Content[0]; {
	case b.OfToolResult != nil:
		if _, err := fmt.Sscanf(b.OfToolResult.ToolUseID, "toolu_%d_%d_", &turn, &step); err != nil {
			return nil, "", fmt.Errorf("messages: tool_use_id %q is not the script's", b.OfToolResult.ToolUseID)
		}
	case b.OfText != nil:
		if _, err := fmt.Sscanf(b.OfText.Text, "Task %d:", &turn); err != nil {
			return nil, "", fmt.Errorf("messages: the last message is not a task of the script")
		}
	default:
		return nil, "", fmt.Errorf("messages: the last message is not a task or tool results")
	}
	if step >= Steps(turn) {
		return []map[string]any{{"type": "text", "text": "Task " + strconv.Itoa(turn) + " is done: " + words(uint64(turn)*7919, 80+int(mix(uint64(turn)+7)%120))}}, "end_turn", nil
	}
	step++
	var content []map[string]any
	if step == 1 {
		content = append(content, map[string]any{"type": "text", "text": "Looking into task " + strconv.Itoa(turn) + "."})
	}
	for k := range calls(turn, step) {
		h := mix(uint64(turn)<<20 | uint64(step)<<8 | uint64(k))
		content = append(content, map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d_%d", turn, step, k),
			"name": toolNames[h%uint64(len(toolNames))], "input": map[string]any{"path": fmt.Sprintf("src/pkg%d/file%d.go", h%7, h%31)},
		})
	}
	return content, "tool_use", nil
}

// Steps returns how many tool steps the model takes on task turn: 1 to 6.
func Steps(turn int) int { return 1 + int(mix(uint64(turn))%6) }

// calls returns how many tools the model calls in step step of task turn:
// usually one, two in parallel on every fourth step.
func calls(turn, step int) int {
	if (turn+step)%4 == 0 {
		return 2
	}
	return 1
}

// Task returns the user's request that opens turn turn (numbered from 1):
// "Task N: " and 60 to 160 words.
func Task(turn int) string {
	return "Task " + strconv.Itoa(turn) + ": " + words(uint64(turn), 60+int(mix(uint64(turn)+99)%101))
}

// RunTool returns the output of the tool call id (as the script names its
// calls): 250 to 1,150 words, the same for the same id.
func RunTool(id string) string {
	return RunToolWords(id, func(h uint64) int { return 250 + int(h%901) })
}

// RunToolWords is RunTool with the length of the output, in words, given
// by n from a hash of the id.
func RunToolWords(id string, n func(h uint64) int) string {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	return words(h, n(mix(h)))
}

// toolNames are the script's tools.
var toolNames = [...]string{
	"read_file", "write_file", "list_dir", "grep", "glob", "run_tests", "run_command", "git_status",
	"git_diff", "git_log", "git_blame", "open_pr", "fetch_url", "search_docs", "lint", "format",
	"build", "list_symbols", "find_references", "rename_symbol",
}

// properties are the parameters every tool of the script takes.
var properties = json.RawMessage(`{` +
	`"path":{"type":"string","description":"Path of the file or directory, relative to the repository root."},` +
	`"query":{"type":"string","description":"What to look for or run; see the tool's description."},` +
	`"limit":{"type":"integer","description":"Maximum number of lines or entries to return."}}`)

// Tools returns the script's twenty tool definitions, as a runtime sends
// them on every request.
func Tools() []anthropic.ToolUnionParam {
	tools := make([]anthropic.ToolUnionParam, len(toolNames))
	for i, name := range toolNames {
		t := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: properties, // JSON written once, sent as it is
			Required:   []string{"path"},
		}, name)
		t.OfTool.Description = anthropic.String("The " + strings.ReplaceAll(name, "_", " ") + " tool: " + words(uint64(i)+1000, 20))
		tools[i] = t
	}
	return tools
}

// vocabulary is what the script's texts are made of: code, logs and
// prose.
var vocabulary = strings.Fields(`the a of to in for on with is are was be this that it file
function return error nil if else range struct type interface package import go test build
handler request response client server context timeout retry cache token budget message
history trim turn step tool result call id json field value string int slice map pointer
func main() err != nil { } ( ) := // TODO FIXME INFO WARN ERROR 2025-01-01T12:00:00Z
/src/pkg/file.go:42 passed failed ok coverage 87.5% benchmark ns/op allocs/op`)

// words returns n words of the vocabulary chosen by seed, in lines of
// twelve.
func words(seed uint64, n int) string {
	var b strings.Builder
	h := seed
	for i := range n {
		h = mix(h + uint64(i))
		if i > 0 {
			if i%12 == 0 {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(vocabulary[h%uint64(len(vocabulary))])
	}
	return b.String()
}

// mix is splitmix64's finalizer: a well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
