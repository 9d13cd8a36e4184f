package responses

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"github.com/histrim/history/internal/loopserver"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// compactAPI is a local Responses API with server-side compaction
// (context_management [{type: "compaction", compact_threshold}]): past
// the threshold it compacts, answering with a compaction item first whose
// encrypted_content only this backend can decode; it reads nothing before
// the latest compaction item of a stateless input, rejects a compaction
// item it did not issue ("Could not decode the compaction blob"), one with
// empty encrypted_content, unpaired calls and an input over its window
// (context_length_exceeded), and counts the prompt-cache prefix rewrites
// by cause, as anthropicserver does. The model is loopserver's script.
type compactAPI struct {
	backend string
	window  int
	burst   int // when positive, steps call 1 to burst tools (loopserver.Bursts)

	mu                                   sync.Mutex
	requests, accepted, compactions      int
	rejected                             map[string]int
	opaque, verbatim                     int
	clientRewrites, serverRewrites, both int
	issued                               map[string]string // encrypted_content -> the item as issued
	tasks                                map[string]string // encrypted_content -> the task it closed
	lastSent, lastOut                    []string
	lastCompaction                       string
}

func (f *compactAPI) fail(w http.ResponseWriter, code, msg string) {
	if f.rejected == nil {
		f.rejected = map[string]int{}
	}
	f.rejected[code]++
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": "input", "code": code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

func (f *compactAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Input             []json.RawMessage `json:"input"`
		Tools             json.RawMessage   `json:"tools"`
		ContextManagement []struct {
			Type             string `json:"type"`
			CompactThreshold int    `json:"compact_threshold"`
		} `json:"context_management"`
	}
	if json.Unmarshal(body, &req) != nil {
		f.fail(w, "invalid_json", "We could not parse the JSON body of your request.")
		return
	}
	from, why := f.checkCompactions(req.Input)
	if why != "" {
		code := "invalid_encrypted_content"
		if strings.Contains(why, "empty") {
			code = "empty_string"
		}
		f.fail(w, code, why)
		return
	}
	read := req.Input[from:]
	hist, why := compactHistory(read)
	if why != "" {
		f.fail(w, "invalid_request_error", why)
		return
	}
	count := history.Estimate(hist, nil) + history.EstimateText(string(req.Tools))
	if count > f.window {
		f.fail(w, "context_length_exceeded", "Your input exceeds the context window of this model. Please adjust your input and try again.")
		return
	}
	threshold := 0
	for _, cm := range req.ContextManagement {
		if cm.Type == "compaction" {
			threshold = cm.CompactThreshold
		}
	}
	f.accepted++
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(f.respond(req.Input, read, hist, count, threshold > 0 && count > threshold))
}

// checkCompactions finds the latest compaction item (what the server
// reads from) and checks every compaction item against the ones it
// issued; it returns the index to read from, or why the input is refused.
func (f *compactAPI) checkCompactions(input []json.RawMessage) (int, string) {
	from := 0
	for i, raw := range input {
		var it struct {
			Type      string  `json:"type"`
			Encrypted *string `json:"encrypted_content"`
		}
		_ = json.Unmarshal(raw, &it)
		if it.Type != "compaction" {
			continue
		}
		switch {
		case it.Encrypted == nil || *it.Encrypted == "":
			return 0, "Invalid 'input[" + strconv.Itoa(i) + "].encrypted_content': empty string."
		case !strings.HasPrefix(*it.Encrypted, f.backend+":") || f.issued[*it.Encrypted] == "":
			return 0, "Could not decode the compaction blob."
		}
		f.opaque++
		if f.issued[*it.Encrypted] == string(raw) {
			f.verbatim++
		}
		from = i
	}
	return from, ""
}

// compactHistory reads the items as history messages, for counting and
// for the script, and checks their pairing.
func compactHistory(input []json.RawMessage) ([]history.Message, string) {
	var hist []history.Message
	calls := map[string]bool{}
	for _, raw := range input {
		var it struct {
			Type, Role, CallID, Name, Arguments, Output, ID string
			Content                                         json.RawMessage
			Encrypted                                       string `json:"encrypted_content"`
		}
		_ = json.Unmarshal(raw, &it)
		var cid struct {
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(raw, &cid)
		switch it.Type {
		case "function_call":
			calls[cid.CallID] = true
			hist = append(hist, history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: cid.CallID, Name: it.Name, Arguments: it.Arguments}}})
		case "function_call_output":
			if !calls[cid.CallID] {
				return nil, "No tool call found for function call output with call_id " + cid.CallID + "."
			}
			hist = append(hist, history.Message{Role: history.RoleTool, ToolCallID: cid.CallID, Content: it.Output})
		case "compaction":
			hist = append(hist, history.Message{Role: history.RoleAssistant, Parts: []history.Part{{Type: history.PartReasoning, Text: it.Encrypted}}})
		default:
			var text string
			if json.Unmarshal(it.Content, &text) != nil {
				var parts []struct{ Text string }
				_ = json.Unmarshal(it.Content, &parts)
				for _, p := range parts {
					text += p.Text
				}
			}
			hist = append(hist, history.Message{Role: history.Role(it.Role), Content: text})
		}
	}
	return hist, ""
}

// respond builds the response, compacting first when asked, and counts
// the cache rewrites.
func (f *compactAPI) respond(input, read []json.RawMessage, hist []history.Message, count int, compact bool) []byte {
	var output []json.RawMessage
	n := strconv.Itoa(f.requests)
	compacted := ""
	if compact {
		task := ""
		for i := len(hist) - 1; i >= 0 && task == ""; i-- {
			if hist[i].Role == history.RoleUser && strings.HasPrefix(hist[i].Content, "Task ") {
				task = hist[i].Content
			}
		}
		h := sha256.Sum256([]byte(n + task))
		enc := f.backend + ":" + hex.EncodeToString(h[:]) + strings.Repeat("Q", 400)
		raw, _ := json.Marshal(map[string]any{"type": "compaction", "id": "cmp_" + n, "encrypted_content": enc})
		if f.issued == nil {
			f.issued, f.tasks = map[string]string{}, map[string]string{}
		}
		f.issued[enc], f.tasks[enc], compacted = string(raw), task, string(raw)
		f.compactions++
		output = append(output, raw)
	}
	if len(read) > 0 {
		var it struct {
			Type      string `json:"type"`
			Encrypted string `json:"encrypted_content"`
		}
		_ = json.Unmarshal(read[0], &it)
		if t := f.tasks[it.Encrypted]; it.Type == "compaction" && t != "" {
			hist = append([]history.Message{{Role: history.RoleUser, Content: t}}, hist...)
		}
	}
	reply := loopserver.Play(hist)
	if f.burst > 0 {
		reply = loopserver.PlayWith(hist, loopserver.Bursts(f.burst))
	}
	for k, c := range reply.Calls {
		raw, _ := json.Marshal(map[string]any{"type": "function_call", "id": "fc_" + n + "_" + strconv.Itoa(k), "call_id": c.ID,
			"name": c.Name, "arguments": c.Arguments, "status": "completed"})
		output = append(output, raw)
	}
	if len(reply.Calls) == 0 {
		raw, _ := json.Marshal(map[string]any{"type": "message", "id": "msg_" + n, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}})
		output = append(output, raw)
	}
	f.account(input, output, compacted)
	b, _ := json.Marshal(map[string]any{"id": "resp_" + n, "object": "response", "created_at": 0, "model": "gpt-5.5",
		"status": "completed", "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		"usage": map[string]any{"input_tokens": count, "output_tokens": 20, "total_tokens": count + 20,
			"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}})
	return b
}

// account counts a request's cache prefix rewrite, by cause: the
// client's when its input does not extend the previous input and output
// (but for a front the server compacted), the server's when it compacts.
func (f *compactAPI) account(input, output []json.RawMessage, compacted string) {
	sent := make([]string, len(input))
	for i, raw := range input {
		sent[i] = canonicalJSON(raw)
	}
	client := false
	if f.lastSent != nil {
		prev := append(slices.Clip(f.lastSent), f.lastOut...)
		extends := len(prev) <= len(sent) && slices.Equal(sent[:len(prev)], prev)
		follows := f.lastCompaction != "" && slices.Contains(sent, canonicalJSON(json.RawMessage(f.lastCompaction)))
		client = !extends && !follows
	}
	server := compacted != ""
	if client {
		f.clientRewrites++
	}
	if server {
		f.serverRewrites++
	}
	if client && server {
		f.both++
	}
	f.lastSent, f.lastOut, f.lastCompaction = sent, nil, compacted
	for _, raw := range output {
		f.lastOut = append(f.lastOut, canonicalJSON(raw))
	}
}

func canonicalJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// toItems converts a response's output to input items as an application
// does: messages through ToParam, everything else (calls, compaction
// items) as its raw JSON, so it goes back byte for byte.
func toItems(resp *responses.Response) []Item {
	var out []Item
	for _, o := range resp.Output {
		if o.Type == "message" {
			m := o.AsMessage().ToParam()
			out = append(out, Item{OfOutputMessage: &m})
			continue
		}
		out = append(out, param.Override[Item](json.RawMessage(o.RawJSON())))
	}
	return out
}

const (
	compactWindow    = 12_000
	compactThreshold = 8_000
)

// compactRun is what a loop run counted.
type compactRun struct {
	api        *compactAPI
	userErrors int
	// stepTrims counts the requests whose trim dropped steps of the
	// latest turn, cuts the tool results it cut.
	stepTrims, cuts int
}

// compactSetup is a loop's server: its window, its compaction threshold,
// and the most tools a step calls (0: the script's 1 or 2).
type compactSetup struct {
	window, threshold, burst int
}

// runCompactLoop runs the script's agent loop for n requests through the
// real openai-go client against compactAPI set up as su: with server
// compaction on and the library as the hard guard above its threshold
// (server), or with the library's own maintenance alone.
func runCompactLoop(t *testing.T, su compactSetup, server bool, n int) compactRun {
	api := &compactAPI{backend: "openai", window: su.window, burst: su.burst}
	ts := httptest.NewServer(api)
	defer ts.Close()
	client := openai.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	params := responses.ResponseNewParams{Model: "gpt-5.5", Tools: loopTools()}
	var cal history.Calibration
	opts := []history.Option{history.WithCalibration(&cal), history.WithLowWater(0.7), history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(), history.WithOverhead(Overhead(params, nil))}
	if server {
		params.ContextManagement = []responses.ResponseNewParamsContextManagement{{Type: "compaction", CompactThreshold: openai.Int(int64(su.threshold))}}
		var err error
		if opts, err = Guard(params, su.window, history.WithCalibration(&cal)); err != nil {
			t.Fatal(err)
		}
	}
	tr := NewTrimmer(opts...)
	var transcript []Item
	run := compactRun{api: api}
	requests := 0
	for turn := 1; requests < n; turn++ {
		transcript = append(transcript, responses.ResponseInputItemParamOfMessage(loopserver.Task(turn), responses.EasyInputMessageRoleUser))
		for requests < n {
			send := transcript
			if server {
				send = Compacted(transcript)
			}
			out, res, err := tr.Trim(send, su.window)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatal(err)
			}
			if res.DroppedSteps > 0 {
				run.stepTrims++
			}
			run.cuts += res.CutResults
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: out}
			requests++
			resp, err := client.Responses.New(context.Background(), params)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				if out, res, rerr = tr.RecoverOverflow(send, err, attempt); rerr != nil {
					break
				}
				params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: out}
				requests++
				resp, err = client.Responses.New(context.Background(), params)
			}
			if err != nil {
				run.userErrors++
				t.Logf("request %d: %v", requests, err)
				break
			}
			Observe(&cal, res, resp)
			items := toItems(resp)
			transcript = append(transcript, items...)
			var outputs []Item
			for _, o := range resp.Output {
				if o.Type == "function_call" {
					outputs = append(outputs, functionOutput(o.CallID, loopserver.ToolResult(o.CallID, loopserver.Words(250, 1150))))
				}
			}
			if len(outputs) == 0 {
				break
			}
			transcript = append(transcript, outputs...)
		}
	}
	return run
}

// TestServerCompactionLoop: 200 requests of the agent loop with the
// Responses API's server-side compaction on, the library the hard guard
// above its threshold, against a run with the library's own maintenance
// alone: no request rejected, no error to the user, every compaction item
// sent back byte for byte, no prompt rewritten by both sides.
func TestServerCompactionLoop(t *testing.T) {
	n := 200
	if testing.Short() || race.Enabled {
		n = 60 // the race detector slows the JSON reads tenfold; CI's plain go test ./... runs all 200
	}
	su := compactSetup{window: compactWindow, threshold: compactThreshold}
	serverRun, libRun := runCompactLoop(t, su, true, n), runCompactLoop(t, su, false, n)
	for _, c := range []struct {
		name string
		r    compactRun
	}{{"server compaction, library as guard", serverRun}, {"library maintenance alone", libRun}} {
		a := c.r.api
		t.Logf("%-36s requests %d, rejected %d %v, user errors %d, compactions %d, compaction items sent back %d (byte-identical %d), "+
			"cache prefix rewrites: client %d, server %d, both %d", c.name, a.requests, a.requests-a.accepted, a.rejected,
			c.r.userErrors, a.compactions, a.opaque, a.verbatim, a.clientRewrites, a.serverRewrites, a.both)
		if a.requests != a.accepted || c.r.userErrors != 0 || a.opaque != a.verbatim || a.both != 0 {
			t.Errorf("%s: rejected %v, %d user errors, %d of %d compaction items byte for byte, %d rewritten by both",
				c.name, a.rejected, c.r.userErrors, a.verbatim, a.opaque, a.both)
		}
	}
	if serverRun.api.compactions == 0 || serverRun.api.opaque == 0 || serverRun.api.clientRewrites != 0 {
		t.Errorf("server run: %d compactions, %d items back, %d client rewrites", serverRun.api.compactions, serverRun.api.opaque, serverRun.api.clientRewrites)
	}
	if libRun.api.clientRewrites == 0 {
		t.Errorf("the library's own maintenance never ran")
	}
}

// TestGuardBursts: the library as guard keeps the window whatever the
// server does. Steps call 1 to 4 tools, so that a burst of results lands
// in the latest turn between two requests, past the window before the
// server can compact: Guard's step trimming (and its cut rung) fit the
// request, at windows of 12,000 and 16,000 (compaction at two thirds of
// them), 200 requests each, none rejected (issue 33).
func TestGuardBursts(t *testing.T) {
	n := 200
	if testing.Short() || race.Enabled {
		n = 60
	}
	for _, window := range []int{12_000, 16_000} {
		t.Run(strconv.Itoa(window), func(t *testing.T) {
			r := runCompactLoop(t, compactSetup{window: window, threshold: window * 2 / 3, burst: 4}, true, n)
			a := r.api
			t.Logf("window %d, bursts of 1-4: requests %d, rejected %d %v, user errors %d, compactions %d, requests with steps dropped %d, "+
				"results cut %d, compaction items sent back %d (byte-identical %d), cache prefix rewrites: client %d, server %d, both %d",
				window, a.requests, a.requests-a.accepted, a.rejected, r.userErrors, a.compactions, r.stepTrims, r.cuts, a.opaque, a.verbatim,
				a.clientRewrites, a.serverRewrites, a.both)
			if a.requests != a.accepted || r.userErrors != 0 || a.opaque != a.verbatim {
				t.Errorf("%d of %d requests rejected (%v), %d errors to the user, %d of %d compaction items byte for byte",
					a.requests-a.accepted, a.requests, a.rejected, r.userErrors, a.verbatim, a.opaque)
			}
			if a.compactions == 0 {
				t.Errorf("the server never compacted")
			}
		})
	}
}

// TestTrimRequestRefusesChained: a request chained onto a stored response
// carries only its new items; the server holds the rest.
func TestTrimRequestRefusesChained(t *testing.T) {
	params := responses.ResponseNewParams{Model: "gpt-5.5", PreviousResponseID: openai.String("resp_1"),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: []Item{user("hi")}}}
	_, _, err := TrimRequest(params, 1000)
	var ce *ChainedError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChained) || ce.PreviousResponseID != "resp_1" {
		t.Fatalf("got %v, want a *ChainedError for resp_1", err)
	}
	params.PreviousResponseID = param.Opt[string]{}
	params.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String("conv_1")}
	if _, _, err := TrimRequest(params, 1000); !errors.Is(err, ErrChained) {
		t.Fatalf("a conversation: %v", err)
	}
	params.Conversation = responses.ResponseNewParamsConversationUnion{}
	if out, _, err := TrimRequest(params, 1000); err != nil || len(out.Input.OfInputItemList) != 1 {
		t.Fatalf("stateless: %v", err)
	}
}

// TestCompactedAndRetarget: Compacted keeps the leading developer
// message and everything from the latest compaction item on, leaving out
// an empty one; Retarget replaces another backend's compaction item by a
// stand-in and drops its reasoning, byte for byte elsewhere.
func TestCompactedAndRetarget(t *testing.T) {
	comp := func(enc string) Item {
		return param.Override[Item](json.RawMessage(`{"type":"compaction","id":"cmp","encrypted_content":` + strconv.Quote(enc) + `}`))
	}
	rs := param.Override[Item](json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA-r"}`))
	dev := responses.ResponseInputItemParamOfMessage("be brief", responses.EasyInputMessageRoleDeveloper)
	items := []Item{dev, user("old"), comp("a:1"), user("mid"), comp(""), comp("a:2"), user("new"), rs, functionCall("c1", "read", "{}"), functionOutput("c1", "out")}
	got := Compacted(items)
	if len(got) != 6 || canonicalJSON(mustJSON(t, got[1])) != canonicalJSON(mustJSON(t, items[5])) {
		t.Fatalf("Compacted: %s", mustJSON(t, got))
	}
	var o Origins
	a := Origin{Provider: "openai", Model: "gpt-5.5"}
	Record(&o, a, items[5], rs)
	if same, n := Retarget(got, &o, a); n != 0 || &same[0] != &got[0] {
		t.Fatal("to the writer itself, nothing changes")
	}
	out, n := Retarget(got, &o, Origin{Provider: "azure", Model: "gpt-5.5"})
	raw := string(mustJSON(t, out))
	if n != 2 || strings.Contains(raw, "a:2") || strings.Contains(raw, "gAAA-r") || !strings.Contains(raw, StandIn) {
		t.Fatalf("%d changes: %s", n, raw)
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestOpaquePayloadTyped: opaquePayload reads a typed item from its
// fields as its JSON reads: on every item of the generated conversations
// (compaction items, reasoning items with and without encrypted content,
// and the SDK's own param.Override values), and on the edge cases.
func TestOpaquePayloadTyped(t *testing.T) {
	nullEnc := reasoning("rs_null", "", "")
	nullEnc.OfReasoning.EncryptedContent = param.Null[string]()
	items := []Item{compaction("cmp_1", "C"), compaction("cmp_2", ""), reasoning("rs_1", "", "gAAA"), reasoning("rs_2", "", ""), nullEnc,
		param.Override[Item](json.RawMessage(`{"type":"compaction","encrypted_content":"raw"}`)), user("hi"), functionCall("c1", "read", `{}`)}
	for _, gen := range append([]func([]byte) []Item{genAgent}, adapter.More...) {
		for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 6) {
			items = append(items, gen(seed)...)
		}
	}
	opaque := 0
	for i := range items {
		typ, payload, has := opaquePayload(&items[i])
		jt, jp, jh := opaqueJSON(&items[i])
		if has != jh || payload != jp || (has || jt == "compaction") && typ != jt {
			t.Fatalf("item %d %s: typed read (%q, %q, %v), JSON read (%q, %q, %v)", i, adaptertest.JSON(t, items[i]), typ, payload, has, jt, jp, jh)
		}
		if has {
			opaque++
		}
	}
	if opaque < 5 {
		t.Fatalf("only %d opaque items among %d: the test reads too few", opaque, len(items))
	}
}
