package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// The adapter driven by the real openai-go client (client.Responses.New)
// against an httptest server that enforces what the Responses API enforces
// on input items: the reasoning binding, the pairing of function calls and
// outputs, and the context window, each answered with the API's own 400
// body.

// The API's 400 bodies, each as users reported it (the ids aside):
//
//   - reasoningBody: continuedev/continue#8933, vercel/ai#7099,
//     openai/openai-agents-python#1611 ("Item 'rs_...' of type 'reasoning'
//     was provided without its required following item.");
//   - precedingBody: an item the model produced after a reasoning item,
//     sent without it. The full body names both items: continuedev/continue#10018
//     and cline/cline#12242 (type 'function_call'), continuedev/continue#9359
//     and #11466 (type 'message'). openai/openai-dotnet#1050 (tested in five
//     SDKs) quotes the message variant as "Item 'msg_...' of type 'message'
//     was provided without its required preceding item of type
//     'reasoning'"; the server answers with the form that names the
//     reasoning item, the one every full body shows;
//   - noOutputBody: a function call that no output answers,
//     tjardoo/openai-client#124;
//   - noCallBody: a function call output whose call is not in the input,
//     continuedev/continue#10092;
//   - overflowBody: the context window, anomalyco/opencode#6071.
const (
	reasoningBody = `{"error":{"message":"Item '%s' of type 'reasoning' was provided without its required following item.","type":"invalid_request_error","param":"input","code":null}}`
	precedingBody = `{"error":{"message":"Item '%s' of type '%s' was provided without its required 'reasoning' item: '%s'.","type":"invalid_request_error","param":"input","code":null}}`
	noOutputBody  = `{"error":{"message":"No tool output found for function call %s.","type":"invalid_request_error","param":"input","code":null}}`
	noCallBody    = `{"error":{"message":"No tool call found for function call output with call_id %s.","type":"invalid_request_error","param":"input","code":null}}`
	overflowBody  = `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`
)

// fakeAPI is a reasoning model behind a Responses endpoint. Each response
// is a reasoning item followed by two parallel function calls when the
// input ends with a user message, or by a message when it ends with
// function outputs. It remembers, like the API, which item followed each
// reasoning item it returned and which reasoning item preceded each item,
// and rejects an input that separates them: a reasoning item must be
// followed by the item that followed it, and an item it preceded must come
// right after it or after another item of the same response (the calls of
// one response are parallel). A function call must be answered by an output
// after it, an output must answer a call before it. An input larger than
// window (counted as one token per four bytes of its JSON) is rejected as
// too long. With a loop (newLoopAPI), the loop counts and checks each
// request instead, and a script of tool steps answers it (see respondLoop).
type fakeAPI struct {
	window int
	// loop, when set, counts and checks each request that passes the
	// binding and pairing checks, decides whether it fits, and is told of
	// each one that does not pass them.
	loop *adaptertest.Loop
	// plain makes it a model that does not reason: no reasoning item.
	plain bool
	// writes makes each call write a file, its content in the arguments.
	writes bool
	// allTurns makes it count the reasoning items of earlier turns, as
	// the API does with reasoning.context all_turns (see count).
	allTurns bool

	mu       sync.Mutex
	n        int               // ids issued so far
	follows  map[string]string // reasoning id -> id of the item right after it
	precedes map[string]string // item id -> id of the reasoning item of its response
	// What the requests met: accepted, and rejected for each reason.
	accepted, reasoning, preceding, unpaired, overflow int
	lastError                                          string
	// lastInput holds the input items of the last request, as received.
	lastInput []json.RawMessage
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
		Input  []json.RawMessage `json:"input"`
		Tools  json.RawMessage   `json:"tools"`
		Stream bool              `json:"stream"`
	}
	if r.URL.Path != "/responses" || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastInput = req.Input
	items := make([]wireItem, len(req.Input))
	size := 0
	for i, raw := range req.Input {
		_ = json.Unmarshal(raw, &items[i])
		if items[i].Type == "" {
			items[i].Type = "message"
		}
		size += len(raw) / 4
	}
	reject := f.check(items)
	switch {
	case reject != "" && f.loop != nil:
		f.loop.Unpaired(reject)
	case reject == "" && f.loop != nil:
		var fits bool
		if size, fits = f.count(req.Input, string(req.Tools)); !fits {
			f.overflow++
			reject = overflowBody
		}
	case reject == "" && size > f.window:
		f.overflow++
		reject = overflowBody
	}
	w.Header().Set("Content-Type", "application/json")
	if reject != "" {
		f.lastError = reject
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, reject)
		return
	}
	f.accepted++
	var resp []byte
	if f.loop != nil {
		resp = f.respondLoop(items, size)
	} else {
		resp = f.respond(items)
	}
	if req.Stream {
		streamResponse(w, resp)
		return
	}
	_, _ = w.Write(resp)
}

// streamResponse writes the response whose JSON is resp as the API
// streams it, in its shortest form: response.created (no usage yet),
// then response.completed holding the whole response and its usage.
func streamResponse(w http.ResponseWriter, resp []byte) {
	var created map[string]any
	_ = json.Unmarshal(resp, &created)
	created["status"], created["output"], created["usage"] = "in_progress", []any{}, nil
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(typ string, seq int, response any) {
		b, _ := json.Marshal(map[string]any{"type": typ, "sequence_number": seq, "response": response})
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
	}
	ev("response.created", 0, created)
	ev("response.completed", 1, json.RawMessage(resp))
}

// check returns the 400 body the API would answer items with for their
// binding or pairing, or "".
func (f *fakeAPI) check(items []wireItem) string {
	for i, it := range items {
		if want, ok := f.follows[it.ID]; ok && (i+1 == len(items) || items[i+1].ID != want) {
			f.reasoning++
			return fmt.Sprintf(reasoningBody, it.ID)
		}
		if rs, ok := f.precedes[it.ID]; ok {
			prev := ""
			if i > 0 {
				prev = items[i-1].ID
			}
			if prev != rs && f.precedes[prev] != rs {
				f.preceding++
				return fmt.Sprintf(precedingBody, it.ID, it.Type, rs)
			}
		}
	}
	calls := map[string]bool{}
	for _, it := range items {
		switch it.Type {
		case "function_call":
			calls[it.CallID] = true
		case "function_call_output":
			if !calls[it.CallID] {
				f.unpaired++
				return fmt.Sprintf(noCallBody, it.CallID)
			}
		}
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
			name, args := "read_file", `{"path":"src/file`+strconv.Itoa(k)+`.go"}`
			if f.writes {
				name, args = "write_file", `{"path":"src/file`+strconv.Itoa(k)+`.go","content":`+
					strconv.Quote(strings.Repeat("func handler"+n+"(w http.ResponseWriter, r *http.Request) {}\n", 20+f.n%10))+`}`
			}
			output = append(output, map[string]any{"type": "function_call", "id": id, "call_id": "call_" + n + "_" + strconv.Itoa(k),
				"name": name, "arguments": args, "status": "completed"})
		}
	} else {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "Done with step " + n + ".", "annotations": []any{}}}})
	}
	return f.response(n, output, 0)
}

// response returns the JSON of response n whose output is output, a
// reasoning item first, and whose usage reports input tokens. It
// remembers, for the checks of later inputs, what follows the reasoning
// item and what it precedes; a plain model drops the reasoning item.
func (f *fakeAPI) response(n string, output []map[string]any, input int) []byte {
	if f.plain {
		output = output[1:]
	} else {
		rs := output[0]["id"].(string)
		f.follows[rs] = output[1]["id"].(string)
		for _, o := range output[1:] {
			f.precedes[o["id"].(string)] = rs
		}
	}
	b, _ := json.Marshal(map[string]any{"id": "resp_" + n, "object": "response", "created_at": 0, "model": "o4-mini",
		"status": "completed", "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": input, "output_tokens": 20, "total_tokens": input + 20,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}})
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
	transcript := append(record(t, c, 10), user("Now summarise."))
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

// record runs tasks untrimmed against the API behind c and returns the
// transcript: a developer message, then for each task a user message, the
// responses (reasoning, parallel calls) with their outputs, in call order
// for even tasks and reversed for odd ones, and the final message.
func record(t *testing.T, c openai.Client, tasks int) []Item {
	t.Helper()
	transcript := []Item{developer("You are a coding agent.")}
	for task := range tasks {
		transcript = append(transcript, user("Task "+strconv.Itoa(task)+": fix the failing test."))
		for {
			out, err := send(c, transcript)
			if err != nil {
				t.Fatal(err)
			}
			transcript = append(transcript, out...)
			tools := runTools(out, task%2)
			if len(tools) == 0 {
				break
			}
			transcript = append(transcript, tools...)
		}
	}
	return transcript
}

// TestSDKBudgetSweep sends a recorded transcript trimmed at budgets from 1%
// of its size to all of it, with every option set of the ladder, through the
// real client: the API rejects none of them, though every rule it enforces
// would reject a trim that separated what it binds.
func TestSDKBudgetSweep(t *testing.T) {
	api := newFakeAPI(1_000_000)
	c := api.client(t)
	transcript := append(record(t, c, 8), user("Now summarise what you changed."))
	recorded := api.accepted
	total := adapter.Tokens(t, transcript)
	var budgets []int
	for pct := 1; pct <= 100; pct += 3 {
		budgets = append(budgets, max(1, total*pct/100))
	}
	sent, trimmed, overBudget := 0, 0, 0
	for _, set := range adaptertest.LadderSets(true) {
		name, opts := set.Name, set.Opts
		for _, budget := range budgets {
			items, res, err := Trim(transcript, budget, opts...)
			switch {
			case errors.Is(err, history.ErrLatestTurnTooLarge):
				overBudget++
			case err != nil:
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			if res.Trimmed {
				trimmed++
			}
			checkBinding(t, transcript, items)
			sent++
			if _, err := send(c, items); err != nil {
				t.Fatalf("%s, budget %d (%d of %d items): rejected: %v\n%s", name, budget, len(items), len(transcript), err, api.lastError)
			}
		}
	}
	if rejected := api.reasoning + api.preceding + api.unpaired + api.overflow; rejected != 0 || api.accepted != recorded+sent || trimmed < sent/2 {
		t.Fatalf("%d trims sent, %d accepted, %d rejected, %d trimmed", sent, api.accepted-recorded, rejected, trimmed)
	}
	t.Logf("%d items (%d tokens): %d trims at %d budgets x %d option sets sent, 0 rejected (%d trimmed, %d left over budget with the latest turn alone)",
		len(transcript), total, sent, len(budgets), len(adaptertest.LadderSets(true)), trimmed, overBudget)
}

// TestSDKBrokenInputs: each way of breaking a recorded transcript that
// peers' filters and trims produce is rejected by the API with its body,
// which the real client returns as an *openai.Error; where the break is a
// separation Trim can see (a lost call, output or following item), Trim's
// repair of the broken input is accepted.
func TestSDKBrokenInputs(t *testing.T) {
	api := newFakeAPI(1_000_000)
	c := api.client(t)
	transcript := record(t, c, 2)
	// The transcript: developer, then per task user, rs, fc, fc, out,
	// out, rs, msg.
	if len(transcript) != 17 || transcript[2].OfReasoning == nil || transcript[7].OfReasoning == nil {
		t.Fatalf("unexpected transcript shape: %s", adaptertest.JSON(t, transcript))
	}
	keep := func(drop func(i int, v view) bool) []Item {
		var out []Item
		for i := range transcript {
			v, _ := read(&transcript[i])
			if !drop(i, v) {
				out = append(out, transcript[i])
			}
		}
		return out
	}
	firstCall, _ := read(&transcript[3])
	lastCall, _ := read(&transcript[4]) // the API reports the last unanswered call
	tests := []struct {
		name, source string
		items        []Item
		want         string // the message of the API's error
		repairable   bool   // Trim repairs it into an accepted input
	}{
		{
			name: "reasoning whose calls were lost", source: "continuedev/continue#8933, openai/openai-agents-python#3207",
			items: keep(func(i int, v view) bool { return i >= 3 }),
			want:  "Item 'rs_123' of type 'reasoning' was provided without its required following item.", repairable: true,
		},
		{
			name: "output items filtered to messages", source: "openai/openai-dotnet#1050, continuedev/continue#9359",
			items: keep(func(i int, v view) bool { return v.cls == clsReasoning || v.cls == clsCall || v.cls == clsResult }),
			want:  "Item 'msg_124' of type 'message' was provided without its required 'reasoning' item: 'rs_124'.",
		},
		{
			name: "reasoning items filtered out", source: "continuedev/continue#10018, cline/cline#12242",
			items: keep(func(i int, v view) bool { return v.cls == clsReasoning }),
			want:  "Item 'fc_123_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_123'.",
		},
		{
			name: "outputs whose calls were dropped", source: "continuedev/continue#10092",
			items: keep(func(i int, v view) bool { return i >= 2 && i <= 4 }),
			want:  "No tool call found for function call output with call_id " + firstCall.callID + ".", repairable: true,
		},
		{
			name: "calls whose outputs were dropped", source: "tjardoo/openai-client#124",
			items: keep(func(i int, v view) bool { return v.cls == clsResult && i < 8 }),
			want:  "No tool output found for function call " + lastCall.callID + ".", repairable: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := send(c, tc.items)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Message != tc.want {
				t.Fatalf("%s: got %v (%s), want a 400 saying %q", tc.source, err, api.lastError, tc.want)
			}
			fixed, res, err := Trim(tc.items, 1_000_000)
			if err != nil {
				t.Fatal(err)
			}
			_, err = send(c, fixed)
			switch {
			case tc.repairable && (err != nil || res.OrphansRemoved == 0 || Validate(fixed) != nil):
				t.Fatalf("the repair (%d orphans removed) was rejected: %v", res.OrphansRemoved, err)
			case !tc.repairable && err == nil:
				t.Fatal("Trim cannot see this break, yet the API took its output: the fake is too lenient")
			}
		})
	}
}

// TestSDKClearedArguments sends a recorded transcript trimmed at budgets
// from 1% of its size to all of it, clearing the arguments of the calls
// whose outputs are elided, through the real client: for a model that
// does not reason, every request is accepted, and the input the endpoint
// receives converts to exactly the calls and the size the core counted,
// with calls cleared; for a reasoning model whose calls carry the same
// files, every request is accepted (the reasoning binding holds) and no
// call arrives with arguments other than the ones it returned.
func TestSDKClearedArguments(t *testing.T) {
	opts := []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 64}), history.WithStepTrim()}
	for _, plain := range []bool{true, false} {
		t.Run("plain="+strconv.FormatBool(plain), func(t *testing.T) {
			api := newFakeAPI(1_000_000)
			api.plain, api.writes = plain, true
			c := api.client(t)
			transcript := append(record(t, c, 6), user("Now summarise what you changed."))
			recorded := api.accepted
			args := map[string]string{} // the arguments of each call, as returned
			for i := range transcript {
				if v, _ := read(&transcript[i]); v.cls == clsCall {
					args[v.callID] = v.args
				}
			}
			total := adapter.Tokens(t, transcript)
			sent, cleared, elided := 0, 0, 0
			for pct := 1; pct <= 100; pct += 3 {
				budget := max(1, total*pct/100)
				items, res, err := Trim(transcript, budget, opts...)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					t.Fatalf("budget %d: %v", budget, err)
				}
				if _, err := send(c, items); err != nil {
					t.Fatalf("budget %d: rejected: %v\n%s", budget, err, api.lastError)
				}
				sent++
				elided += res.ElidedResults
				received := make([]Item, len(api.lastInput))
				for i, raw := range api.lastInput {
					received[i] = overrideItem(string(raw))
				}
				back := mustHistory(t, received)
				sameMessages(t, budget, back, res.Messages)
				if n := history.Estimate(back, nil); n != res.TokensAfter {
					t.Fatalf("budget %d: the endpoint received %d tokens, the core counted %d", budget, n, res.TokensAfter)
				}
				for i := range received {
					v, _ := read(&received[i])
					switch {
					case v.cls != clsCall || v.args == args[v.callID]:
					case plain && strings.HasPrefix(v.args, adaptertest.ClearedPrefix):
						cleared++
					default:
						t.Fatalf("budget %d: call %s arrived with %.60q", budget, v.callID, v.args)
					}
				}
			}
			if api.reasoning+api.preceding+api.unpaired+api.overflow != 0 || api.accepted != recorded+sent || plain != (cleared > 0) || elided == 0 {
				t.Fatalf("%d trims sent, %d accepted, %d outputs elided, %d calls arrived cleared", sent, api.accepted-recorded, elided, cleared)
			}
			t.Logf("%d trims sent and accepted, %d outputs elided, %d calls arrived cleared", sent, elided, cleared)
		})
	}
}

// The loop a runtime runs with the Responses API, through the real
// openai-go client (client.Responses.New) against the fake API of
// sdk_test.go in its loop mode: Trim with a Calibration, the request's
// Overhead, elision and step trimming; usage.input_tokens observed; an
// overflow, whose body states no sizes, recovered with RecoverOverflow.
// The fake API still enforces the reasoning binding and the pairing of
// calls and outputs, now counted as the loop's violations.

// loopWindow is the window of TestAgentLoop.
const loopWindow = 12_000

// newLoopAPI returns a fake reasoning model whose requests l counts and
// checks.
func newLoopAPI(l *adaptertest.Loop) *fakeAPI {
	f := newFakeAPI(l.Window)
	f.loop = l
	return f
}

// count returns l's count of a request of input items and tools JSON, and
// whether it fits: the items it reads are converted as the adapter
// converts them, and the latest task must be the text of a user message
// among them.
// Reasoning items before the latest user message are not counted: "In
// turn 2, reasoning items from turn 1 are ignored and stripped, since the
// model doesn't reuse reasoning items from previous turns"
// (https://cookbook.openai.com/examples/responses_api/reasoning_items;
// reasoning.context current_turn), unless the API keeps them (allTurns:
// reasoning.context all_turns).
func (f *fakeAPI) count(input []json.RawMessage, tools string) (int, bool) {
	latest := -1
	for i, raw := range input {
		var m struct{ Role string }
		if json.Unmarshal(raw, &m) == nil && m.Role == "user" {
			latest = i
		}
	}
	items := make([]Item, 0, len(input))
	for i, raw := range input {
		var m struct{ Type string }
		if !f.allTurns && i < latest && json.Unmarshal(raw, &m) == nil && m.Type == "reasoning" {
			continue
		}
		items = append(items, param.Override[Item](raw))
	}
	// The items it reads, it counts whole: as the adapter converts them
	// with every reasoning item counted.
	var hist []history.Message
	c, err := convert(items, nil, reasoningContext{allTurns: true}, nil)
	if err != nil {
		f.loop.Note("the server cannot read a request: %v", err)
	} else {
		hist = c.hist
	}
	holds := func(text string) bool {
		for _, raw := range input {
			var m struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			}
			if json.Unmarshal(raw, &m) != nil || m.Role != "user" {
				continue
			}
			var s string
			if json.Unmarshal(m.Content, &s) == nil && s == text {
				return true
			}
			var parts []struct {
				Type, Text string
			}
			_ = json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				if p.Type == "input_text" && p.Text == text {
					return true
				}
			}
		}
		return false
	}
	return f.loop.Receive(hist, tools, holds)
}

// loopSteps is how many tool steps the script takes on task t: 1 to 6.
func loopSteps(task int) int { return 1 + int(loopMix(uint64(task)*7919)%6) }

// loopMix is splitmix64's finaliser.
func loopMix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// respondLoop returns the JSON of the script's response to items, whose
// count is input: reasoning, then the calls of the next step of the
// latest task ("Task T: ..."), one or two, with call ids call_T_S_K; after
// the task's last step, a final message. Where the input is, the script
// reads from its last item: the task, or the output of a call of step S.
func (f *fakeAPI) respondLoop(items []wireItem, input int) []byte {
	f.n++
	n := strconv.Itoa(f.n)
	output := []map[string]any{{"type": "reasoning", "id": "rs_" + n, "summary": []any{},
		"encrypted_content": "gAAAAB" + strings.Repeat("q8Zr", 60+f.n%40)}}
	task, step := 0, 0
	last := items[len(items)-1]
	if last.Type == "function_call_output" {
		fmt.Sscanf(last.CallID, "call_%d_%d_", &task, &step)
	} else if raw := f.lastInput[len(f.lastInput)-1]; last.Role == "user" {
		var m struct {
			Content string `json:"content"`
		}
		_ = json.Unmarshal(raw, &m)
		fmt.Sscanf(m.Content, "Task %d:", &task)
	}
	if task == 0 || step >= loopSteps(task) {
		output = append(output, map[string]any{"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "Task " + strconv.Itoa(task) + " is done.", "annotations": []any{}}}})
		return f.response(n, output, input)
	}
	step++
	for k := range 1 + int(loopMix(uint64(task*31+step))%4/3) { // a quarter of the steps make two calls
		output = append(output, map[string]any{"type": "function_call", "id": "fc_" + n + "_" + strconv.Itoa(k),
			"call_id": fmt.Sprintf("call_%d_%d_%d", task, step, k), "name": loopToolName(int(loopMix(uint64(task*131+step*17+k)) % 20)),
			"arguments": fmt.Sprintf(`{"path":"src/module%d/file%d.go","limit":400}`, task, step), "status": "completed"})
	}
	return f.response(n, output, input)
}

func loopToolName(i int) string { return fmt.Sprintf("tool_%02d", i) }

// loopTools are the 20 function tools every request offers.
func loopTools() []responses.ToolUnionParam {
	tools := make([]responses.ToolUnionParam, 20)
	for i := range tools {
		tools[i] = responses.ToolParamOfFunction(loopToolName(i), map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":   map[string]any{"type": "string", "description": "Path of the file, relative to the workspace root."},
				"offset": map[string]any{"type": "integer", "description": "First line to read, from 1."},
				"limit":  map[string]any{"type": "integer", "description": "Number of lines to read at most."},
			},
			"required": []string{"path"},
		}, false)
		tools[i].OfFunction.Description = openai.String("Tool " + strconv.Itoa(i) + " reads a file of the workspace, or a part of it, and returns its lines " +
			"with their numbers; use it before editing, and again after an edit to check the result.")
	}
	return tools
}

var loopVocabulary = strings.Fields(`func return if err != nil { } package import the value of a
	slice map string int error context handler request response buffer index length
	count token budget message content part call result => := ( ) [ ] // TODO fix
	check test assert want got t.Fatalf 0 1 42 1024 "ok" "failed" nil`)

// loopOutput is the output of call id: l.Words words of code and prose.
func loopOutput(l *adaptertest.Loop, id string) string {
	h := uint64(14695981039346656037)
	for i := range len(id) {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	n := l.Words(loopMix(h))
	var b strings.Builder
	for i := range n {
		h = loopMix(h)
		b.WriteString(loopVocabulary[h%uint64(len(loopVocabulary))])
		if i%12 == 11 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// runLoop runs l.Turns user turns of 1 to 6 tool steps through the real
// client against the fake API in loop mode (l.Window its window),
// trimming the transcript to l.Budget before each request as the loop of
// this file's comment does. Errors that would reach the caller are
// recorded in l, and the loop goes on with the next turn. kind "trim"
// trims with Trim and the Calibration; "request all_turns" with
// TrimRequest and the Calibration, the request's reasoning.context
// all_turns and the API reading the reasoning of every turn; "trimmer"
// with one Trimmer (low-water mark 0.7 on top of the options) and no
// Calibration, "trimmer+cal" with one. It returns the rejections after
// the first recovery.
func runLoop(t *testing.T, l *adaptertest.Loop, kind string) (afterFirst int) {
	t.Helper()
	api := newLoopAPI(l)
	c := api.client(t)
	ctx := context.Background()
	params := responses.ResponseNewParams{Model: "o4-mini", Tools: loopTools()}
	var cal history.Calibration
	opts := []history.Option{
		history.WithCalibration(&cal),
		history.WithOverhead(Overhead(params, nil)),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	trim := func(transcript []Item) ([]Item, history.Result, error) { return Trim(transcript, l.Budget, opts...) }
	recover := func(_, sent []Item, err error, attempt int) ([]Item, history.Result, error) {
		return RecoverOverflow(sent, err, attempt, opts...)
	}
	if kind != "trim" {
		topts := append(slices.Clip(opts[1:]), history.WithLowWater(0.7))
		if kind == "trimmer+cal" {
			topts = append(topts, history.WithCalibration(&cal))
		}
		tr := NewTrimmer(topts...)
		trim = func(transcript []Item) ([]Item, history.Result, error) { return tr.Trim(transcript, l.Budget) }
		recover = func(transcript, _ []Item, err error, attempt int) ([]Item, history.Result, error) {
			return tr.RecoverOverflow(transcript, err, attempt)
		}
	}
	if kind == "request all_turns" {
		// The API reads the reasoning of every turn, and TrimRequest
		// counts it, from the request's reasoning.context.
		api.allTurns = true
		params.Reasoning.Context = shared.ReasoningContextAllTurns
		trim = func(transcript []Item) ([]Item, history.Result, error) {
			p := params
			p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: transcript}
			p, res, err := TrimRequest(p, l.Budget, opts...)
			return p.Input.OfInputItemList, res, err
		}
	}
	recovered := false
	send := func(items []Item) (*responses.Response, error) {
		p := params
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
		return c.Responses.New(ctx, p)
	}
	transcript := []Item{developer("You are a coding agent. Use the tools to read files before you answer.")}
	for turn := 1; turn <= l.Turns; turn++ {
		task := "Task " + strconv.Itoa(turn) + ": look into module " + strconv.Itoa(turn*13%97) + " and fix what you find."
		l.Turn(turn, task)
		transcript = append(transcript, user(task))
	steps:
		for step := 0; ; step++ {
			if step > 7 {
				t.Fatalf("turn %d does not end", turn)
			}
			items, res, err := trim(transcript)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			resp, err := send(items)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				if !history.IsContextOverflow(err) {
					break
				}
				l.Rejected(attempt-1, res, &cal)
				if recovered {
					afterFirst++
				}
				recovered = true
				var rerr error
				if items, res, rerr = recover(transcript, items, err, attempt); rerr != nil {
					l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
					break steps
				}
				resp, err = send(items)
			}
			if err != nil {
				l.Error(err)
				break
			}
			input := int(resp.Usage.InputTokens)
			cal.Observe(res.TokensAfter, input)
			l.Accepted(res.Trimmed, input)
			var calls []string
			for _, o := range resp.Output {
				switch o.Type {
				case "reasoning":
					r := o.AsReasoning().ToParam()
					transcript = append(transcript, Item{OfReasoning: &r})
				case "message":
					m := o.AsMessage().ToParam()
					transcript = append(transcript, Item{OfOutputMessage: &m})
				default:
					transcript = append(transcript, param.Override[Item](json.RawMessage(o.RawJSON())))
					if o.Type == "function_call" {
						calls = append(calls, o.CallID)
					}
				}
			}
			if len(calls) == 0 {
				break
			}
			for _, id := range calls {
				transcript = append(transcript, functionOutput(id, loopOutput(l, id)))
			}
		}
	}
	return afterFirst
}

// TestAgentLoop runs the loop against a provider that counts 1.3 and 0.8
// times the library's estimate, at a window of 12,000 tokens that is also
// the budget: the calibration, taught by input_tokens and by overflows
// that state no sizes, keeps every request under the window after at most
// one overflow while filling it, and the binding and pairing hold.
func TestAgentLoop(t *testing.T) {
	for _, f := range []float64{1.3, 0.8} {
		t.Run("F="+strconv.FormatFloat(f, 'g', -1, 64), func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("responses", adaptertest.Skew(f), loopWindow).RaceShort()
			runLoop(t, l, "trim")
			t.Log(l.Stats().Row())
			l.Check(t)
		})
	}
}

// TestStatefulLoop runs the loop with the Trimmer against a provider
// counting 1.3 times the library's estimate, with and without a
// Calibration, at a budget of the window and of 1.25 times it (issues 23
// and 33: at most 1 rejection after the first recovery; the refusal
// states no sizes).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "responses", loopWindow, func(t *testing.T, l *adaptertest.Loop, calibrate bool) {
		runLoop(t, l, map[bool]string{false: "trimmer", true: "trimmer+cal"}[calibrate])
	})
}

// TestReasoningContextLoop: the loop of the matrix's mixed mode (tool
// results counted 1.6 times, text 0.9 times) at 8,000 tokens, with the
// Calibration, against an API that reads the reasoning of the current
// turn only (the documented default; Trim) and one that reads every
// turn's (reasoning.context all_turns; TrimRequest): counting what the API
// reads, the calibrated trims fill at least 85% of the window with at
// most one overflow either way (issue 33: counting the reasoning of
// earlier turns, which the API ignores, the Calibration met a ratio that
// varies with their share: 79.9% and 2 overflows).
func TestReasoningContextLoop(t *testing.T) {
	for _, kind := range []string{"trim", "request all_turns"} {
		t.Run(kind, func(t *testing.T) {
			l := adaptertest.NewLoop("responses ("+kind+")", adaptertest.Modes()[3], 8_000)
			if race.Enabled {
				l.Turns = 20
			}
			runLoop(t, l, kind)
			t.Log(l.Stats().Row())
			if !race.Enabled {
				l.Check(t)
			}
		})
	}
}
