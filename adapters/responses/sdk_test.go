package responses

// The adapter driven by the real openai-go client (client.Responses.New)
// against an httptest server that enforces what the Responses API enforces
// on input items: the reasoning binding, the pairing of function calls and
// outputs, and the context window, each answered with the API's own 400
// body.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// The API's 400 bodies. The overflow body is the Responses API's, as
// reported in anomalyco/opencode#6071.
const (
	reasoningBody = `{"error":{"message":"Item '%s' of type 'reasoning' was provided without its required following item.","type":"invalid_request_error","param":"input","code":null}}`
	precedingBody = `{"error":{"message":"Item '%s' of type '%s' was provided without its required preceding item of type 'reasoning'.","type":"invalid_request_error","param":"input","code":null}}`
	noOutputBody  = `{"error":{"message":"No tool output found for function call %s.","type":"invalid_request_error","param":"input","code":null}}`
	overflowBody  = `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`
)

// fakeAPI is a reasoning model behind a Responses endpoint. Each response
// is a reasoning item followed by two parallel function calls when the
// input ends with a user message, or by a message when it ends with
// function outputs. It remembers, like the API, which item followed each
// reasoning item it returned and which reasoning item preceded each item,
// and rejects an input that separates them. An input larger than window
// (counted as one token per four bytes of its JSON) is rejected as too
// long.
type fakeAPI struct {
	window int

	mu       sync.Mutex
	n        int               // ids issued so far
	follows  map[string]string // reasoning id -> id of the item right after it
	precedes map[string]string // item id -> id of the reasoning item of its response
	// What the requests met: accepted, and rejected for each reason.
	accepted, reasoning, preceding, unpaired, overflow int
	lastError                                          string
}

func newFakeAPI(window int) *fakeAPI {
	return &fakeAPI{window: window, n: 122, follows: map[string]string{}, precedes: map[string]string{}}
}

type wireItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	CallID string `json:"call_id"`
	Role   string `json:"role"`
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input []json.RawMessage `json:"input"`
	}
	if r.URL.Path != "/responses" || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	items := make([]wireItem, len(req.Input))
	size := 0
	for i, raw := range req.Input {
		_ = json.Unmarshal(raw, &items[i])
		if items[i].Type == "" {
			items[i].Type = "message"
		}
		size += len(raw) / 4
	}
	if reject := f.check(items, size); reject != "" {
		f.lastError = reject
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, reject)
		return
	}
	f.accepted++
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(f.respond(items))
}

// check returns the 400 body the API would answer items with, or "".
func (f *fakeAPI) check(items []wireItem, size int) string {
	seen := map[string]bool{}
	for i, it := range items {
		if want, ok := f.follows[it.ID]; ok && (i+1 == len(items) || items[i+1].ID != want) {
			f.reasoning++
			return fmt.Sprintf(reasoningBody, it.ID)
		}
		if rs, ok := f.precedes[it.ID]; ok && !seen[rs] {
			f.preceding++
			return fmt.Sprintf(precedingBody, it.ID, it.Type)
		}
		seen[it.ID] = true
	}
	outputs := map[string]bool{}
	for i := len(items) - 1; i >= 0; i-- {
		switch it := items[i]; it.Type {
		case "function_call_output":
			outputs[it.CallID] = true
		case "function_call":
			if !outputs[it.CallID] {
				f.unpaired++
				return fmt.Sprintf(noOutputBody, it.CallID)
			}
		}
	}
	if size > f.window {
		f.overflow++
		return overflowBody
	}
	return ""
}

// respond returns the JSON of the next response to items.
func (f *fakeAPI) respond(items []wireItem) []byte {
	f.n++
	n := strconv.Itoa(f.n)
	rs := "rs_" + n
	output := []map[string]any{{"type": "reasoning", "id": rs, "summary": []any{},
		"encrypted_content": "gAAAAB" + strings.Repeat("q8Zr", 60+f.n%40)}}
	last := items[len(items)-1]
	if last.Type == "message" && last.Role == "user" {
		for k := range 2 {
			id := "fc_" + n + "_" + strconv.Itoa(k)
			output = append(output, map[string]any{"type": "function_call", "id": id, "call_id": "call_" + n + "_" + strconv.Itoa(k),
				"name": "read_file", "arguments": `{"path":"src/file` + strconv.Itoa(k) + `.go"}`, "status": "completed"})
		}
	} else {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "Done with step " + n + ".", "annotations": []any{}}}})
	}
	f.follows[rs] = output[1]["id"].(string)
	for _, o := range output[1:] {
		f.precedes[o["id"].(string)] = rs
	}
	b, _ := json.Marshal(map[string]any{"id": "resp_" + n, "object": "response", "created_at": 0, "model": "o4-mini",
		"status": "completed", "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}})
	return b
}

// client returns an openai-go client that talks to f.
func (f *fakeAPI) client(t *testing.T) openai.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
}

// send sends items with the client and returns the response's output as
// input items, converted as an application does: typed ToParam values for
// reasoning items and messages (overrides of the variant), the raw JSON as
// an override for anything else.
func send(c openai.Client, items []Item) ([]Item, error) {
	resp, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "o4-mini",
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items},
	})
	if err != nil {
		return nil, err
	}
	var out []Item
	for _, o := range resp.Output {
		switch o.Type {
		case "reasoning":
			r := o.AsReasoning().ToParam()
			out = append(out, Item{OfReasoning: &r})
		case "message":
			m := o.AsMessage().ToParam()
			out = append(out, Item{OfOutputMessage: &m})
		default:
			out = append(out, param.Override[Item](json.RawMessage(o.RawJSON())))
		}
	}
	return out, nil
}

// runTools returns the outputs of the calls among out, in the order order
// picks: 0 in call order, 1 reversed.
func runTools(out []Item, order int) []Item {
	var res []Item
	for _, u := range out {
		v, _ := read(&u)
		if v.cls == clsCall {
			res = append(res, functionOutput(v.callID, strings.Repeat("package main // "+v.callID+"\n", 40)))
		}
	}
	if order == 1 {
		for i, j := 0, len(res)-1; i < j; i, j = i+1, j-1 {
			res[i], res[j] = res[j], res[i]
		}
	}
	return res
}

// TestSDKTrimLoop runs an agent loop against the fake API: before every
// request the full transcript is trimmed to a budget under the window, and
// no request is ever rejected, while turns, steps and outputs are dropped
// or elided all along. A naive trim (the newest items that fit) run on the
// same transcript is rejected for the reasoning binding.
func TestSDKTrimLoop(t *testing.T) {
	for name, opts := range map[string][]history.Option{
		"turns":  nil,
		"ladder": {history.WithStepTrim(), history.WithElision(history.ElideOptions{MinTokens: 50})},
	} {
		t.Run(name, func(t *testing.T) {
			api := newFakeAPI(6_000)
			c := api.client(t)
			transcript := []Item{developer("You are a coding agent.")}
			trims, elided, turns := 0, 0, 0
			for task := range 12 {
				transcript = append(transcript, user("Task "+strconv.Itoa(task)+": fix the failing test."))
				for step := 0; ; step++ {
					items, res, err := Trim(transcript, 3_000, opts...)
					if err != nil {
						t.Fatal(err)
					}
					if res.Trimmed {
						trims++
					}
					elided, turns = max(elided, res.ElidedResults), max(turns, res.DroppedTurns)
					out, err := send(c, items)
					if err != nil {
						t.Fatalf("task %d step %d: %v", task, step, err)
					}
					transcript = append(transcript, out...)
					tools := runTools(out, task%2)
					if len(tools) == 0 {
						break
					}
					transcript = append(transcript, tools...)
				}
			}
			if api.reasoning+api.preceding+api.unpaired+api.overflow != 0 || trims < 5 {
				t.Fatalf("%d requests accepted, rejected: %d reasoning, %d preceding, %d unpaired, %d overflow; %d trims",
					api.accepted, api.reasoning, api.preceding, api.unpaired, api.overflow, trims)
			}
			t.Logf("%d requests accepted, %d trimmed (up to %d turns dropped, %d outputs elided), transcript of %d items",
				api.accepted, trims, turns, elided, len(transcript))

			// The same transcript cut naively breaks the binding the API
			// enforces: to its newest items that fit (a call loses the
			// reasoning before it), or by dropping old calls with their
			// outputs, as a trimmer of chat histories does (a reasoning
			// item loses the call after it).
			for cut := 1; cut < len(transcript); cut++ {
				naive(t, c, append([]Item{transcript[0]}, transcript[cut:]...))
			}
			for drop := 1; drop < 6; drop++ {
				naive(t, c, dropOldCalls(transcript, drop))
			}
			if api.reasoning == 0 || api.preceding == 0 {
				t.Fatalf("the naive trims met %d reasoning and %d preceding rejections", api.reasoning, api.preceding)
			}
			t.Logf("naive trims: %d rejected for a reasoning item without its following item, %d for an item without its reasoning, %d unpaired",
				api.reasoning, api.preceding, api.unpaired)
		})
	}
}

// naive sends items, which a naive trim produced, and checks that a
// rejection comes back as the client's *openai.Error with status 400.
func naive(t *testing.T, c openai.Client, items []Item) {
	t.Helper()
	if _, err := send(c, items); err != nil {
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
			t.Fatalf("naive trim: %v", err)
		}
	}
}

// dropOldCalls returns items without the function calls of the first n
// exchanges that have any, and without their outputs.
func dropOldCalls(items []Item, n int) []Item {
	gone := map[string]bool{}
	for i := range items {
		v, _ := read(&items[i])
		if v.cls == clsCall && !gone[v.callID] {
			if len(gone) >= 2*n {
				break
			}
			gone[v.callID] = true
		}
	}
	var out []Item
	for i := range items {
		if v, _ := read(&items[i]); !gone[v.callID] {
			out = append(out, items[i])
		}
	}
	return out
}

// TestSDKReasoningErrorBody: the server answers a reasoning item without
// its following item with the API's body, which the real client returns
// as an *openai.Error; Trim's repair of the same input is accepted.
func TestSDKReasoningErrorBody(t *testing.T) {
	api := newFakeAPI(100_000)
	c := api.client(t)
	first, err := send(c, []Item{user("Read the files.")})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := read(&first[0]); v.cls != clsReasoning || v.id != "rs_123" {
		t.Fatalf("first output: %s", jsonOf(t, first[0]))
	}
	broken := []Item{user("Read the files."), first[0]} // the calls were lost
	_, err = send(c, broken)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("got %v, want an *openai.Error", err)
	}
	want := `{"error":{"message":"Item 'rs_123' of type 'reasoning' was provided without its required following item.","type":"invalid_request_error","param":"input","code":null}}`
	if api.lastError != want || !strings.Contains(apiErr.Message, "Item 'rs_123' of type 'reasoning' was provided without its required following item.") {
		t.Fatalf("server said %s, client %q", api.lastError, apiErr.Message)
	}
	if history.IsContextOverflow(err) {
		t.Fatal("a reasoning error classified as an overflow")
	}
	if verr := Validate(broken); !errors.Is(verr, ErrUnboundReasoning) {
		t.Fatalf("Validate = %v, want ErrUnboundReasoning", verr)
	}
	fixed, res, err := Trim(broken, 100_000)
	if err != nil || res.OrphansRemoved != 1 || len(fixed) != 1 {
		t.Fatalf("Trim = %d items, %d orphans, %v", len(fixed), res.OrphansRemoved, err)
	}
	if _, err := send(c, fixed); err != nil {
		t.Fatalf("the repaired input was rejected: %v", err)
	}
}

// TestSDKRecoverOverflow: a transcript sent untrimmed overflows the
// window; RecoverOverflow, fed the client's error, trims it until the API
// accepts it, and the reasoning binding holds at every attempt.
func TestSDKRecoverOverflow(t *testing.T) {
	api := newFakeAPI(1_000_000)
	c := api.client(t)
	transcript := []Item{developer("You are a coding agent.")}
	for task := range 10 {
		transcript = append(transcript, user("Task "+strconv.Itoa(task)))
		for {
			out, err := send(c, transcript)
			if err != nil {
				t.Fatal(err)
			}
			transcript = append(transcript, out...)
			tools := runTools(out, 0)
			if len(tools) == 0 {
				break
			}
			transcript = append(transcript, tools...)
		}
	}
	transcript = append(transcript, user("Now summarise."))
	api.window = 4_000

	items := transcript
	var attempts int
	for attempt := 1; ; attempt++ {
		_, err := send(c, items)
		if err == nil {
			attempts = attempt
			break
		}
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.Code != "context_length_exceeded" {
			t.Fatalf("attempt %d: %v (%s)", attempt, err, api.lastError)
		}
		if attempt > 6 {
			t.Fatalf("still too long after %d attempts", attempt)
		}
		var res history.Result
		items, res, err = RecoverOverflow(items, fmt.Errorf("agent step: %w", err), attempt)
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		if !res.Trimmed || Validate(items) != nil {
			t.Fatalf("attempt %d: trimmed %v, valid %v", attempt, res.Trimmed, Validate(items))
		}
		checkBinding(t, transcript, items)
	}
	if api.overflow == 0 || api.reasoning+api.preceding+api.unpaired != 0 {
		t.Fatalf("overflows %d, other rejections %d", api.overflow, api.reasoning+api.preceding+api.unpaired)
	}
	t.Logf("accepted after %d attempts: %d of %d items kept", attempts, len(items), len(transcript))

	// Not an overflow: the items come back untouched.
	_, err := send(c, []Item{user("x"), transcript[len(transcript)-3]})
	same, _, rerr := RecoverOverflow(transcript, err, 1)
	if !errors.Is(rerr, history.ErrNotOverflow) || len(same) != len(transcript) || &same[0] != &transcript[0] {
		t.Fatalf("RecoverOverflow on a reasoning error = %d items, %v", len(same), rerr)
	}
}
