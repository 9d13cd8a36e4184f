package beta

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicserver"
	"github.com/histrim/history/internal/loopserver"
)

func newClient(url string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(url), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

// toolResults answers the tool calls of reply, nil when it calls none.
func toolResults(reply *anthropic.BetaMessage) []anthropic.BetaContentBlockParamUnion {
	var results []anthropic.BetaContentBlockParamUnion
	for _, b := range reply.Content {
		if b.Type == "tool_use" {
			results = append(results, anthropic.NewBetaToolResultBlock(b.ID, loopserver.ToolResult(b.ID, loopserver.Words(250, 1150)), false))
		}
	}
	return results
}

// TestThreadExpiryReplayed: a conversation on a message thread, trimmed
// with TrimThread before every Send; the server forgets its threads twice
// (as it does after about five minutes), the SDK replays the client's
// copy on the 404 thread_not_found, and every turn completes, the copy
// always within the window.
func TestThreadExpiryReplayed(t *testing.T) {
	srv := &anthropicserver.Server{Backend: "anthropic", Window: loopWindow}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := newClient(ts.URL)
	system := []anthropic.BetaTextBlockParam{{Text: loopserver.SystemPrompt}}
	thread := client.Beta.Messages.NewThread(anthropic.BetaMessageThreadCreateParams{Model: loopModel, MaxTokens: 1024, System: system, Tools: loopTools()})
	opts := []history.Option{history.WithLowWater(0.7), history.WithElision(history.ElideOptions{}), history.WithStepTrim(),
		history.WithOverhead(Overhead(anthropic.BetaMessageNewParams{Tools: loopTools()}, nil))}
	requests, rewrites := 0, 0
	for turn := 1; turn <= 12; turn++ {
		if turn == 5 || turn == 9 {
			srv.ExpireThreads()
		}
		thread.Append(anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(loopserver.Task(turn))))
		for {
			_, changed, err := TrimThread(thread, loopWindow, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatal(err)
			}
			if changed {
				rewrites++
			}
			requests++
			reply, err := thread.Send(context.Background(), anthropic.BetaMessageThreadSendParams{})
			if err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
			results := toolResults(reply)
			if len(results) == 0 {
				break
			}
			thread.Append(anthropic.NewBetaUserMessage(results...))
		}
	}
	s := srv.Stats()
	t.Logf("%d sends, %d requests, %d accepted, rejected %v, %d trims of the client copy", requests, s.Requests, s.Accepted, s.Rejected, rewrites)
	if s.Rejected["thread_not_found"] != 2 || s.Requests-s.Accepted != 2 {
		t.Errorf("want the two expiries answered 404 thread_not_found and nothing else rejected: %v", s.Rejected)
	}
	if rewrites == 0 {
		t.Errorf("the client copy never needed a trim: the test does not reach the window")
	}
}

// TestTrimRequestRefusesContinuedThread: a request continuing a thread
// carries only the new messages; the server holds the rest.
func TestTrimRequestRefusesContinuedThread(t *testing.T) {
	params := anthropic.BetaMessageNewParams{Messages: []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("hi"))}}
	params.Thread = anthropic.BetaMessageThreadParamOfContinue("msg_1")
	_, _, err := TrimRequest(params, 1000)
	var te *ThreadError
	if !errors.As(err, &te) || !errors.Is(err, ErrThread) || te.PreviousMessageID != "msg_1" {
		t.Fatalf("got %v, want a *ThreadError for msg_1", err)
	}
	params.Thread = anthropic.BetaMessageThreadParamUnion{}
	out, _, err := TrimRequest(params, 1000)
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("a stateless request: %v, %d messages", err, len(out.Messages))
	}
}

// switchRun runs the loop against backend a, then goes on against b,
// with or without Retarget; it returns b's stats.
func switchRun(t *testing.T, retarget bool) anthropicserver.Stats {
	a := &anthropicserver.Server{Backend: "anthropic", Window: loopWindow, Thinking: true}
	b := &anthropicserver.Server{Backend: "bedrock", Window: loopWindow, Thinking: true}
	ta, tb := httptest.NewServer(a), httptest.NewServer(b)
	defer ta.Close()
	defer tb.Close()
	system := []anthropic.BetaTextBlockParam{{Text: loopserver.SystemPrompt}}
	params := anthropic.BetaMessageNewParams{Model: loopModel, MaxTokens: 1024, System: system, Tools: loopTools()}
	params.ContextManagement.Edits = []anthropic.BetaContextManagementConfigEditUnionParam{{
		OfCompact20260112: &anthropic.BetaCompact20260112EditParam{Trigger: anthropic.BetaInputTokensTriggerParam{Value: loopTrigger}},
	}}
	opts, err := Guard(params, loopWindow)
	if err != nil {
		t.Fatal(err)
	}
	var origins Origins
	var transcript []anthropic.BetaMessageParam
	for turn := 1; turn <= 16; turn++ {
		client, backend := newClient(ta.URL), "anthropic"
		if turn > 8 {
			client, backend = newClient(tb.URL), "bedrock"
		}
		to := Origin{Provider: backend, Model: string(loopModel)}
		transcript = append(transcript, anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(loopserver.Task(turn))))
		for {
			send := transcript
			if retarget {
				send, _ = Retarget(transcript, &origins, to)
			}
			out, _, err := Trim(system, send, loopWindow, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatal(err)
			}
			params.Messages = out
			reply, err := client.Beta.Messages.New(context.Background(), params)
			if err != nil {
				if retarget {
					t.Fatalf("turn %d on %s: %v", turn, backend, err)
				}
				return b.Stats()
			}
			p := reply.ToParam()
			Record(&origins, to, p)
			transcript = append(transcript, p)
			results := toolResults(reply)
			if len(results) == 0 {
				break
			}
			transcript = append(transcript, anthropic.NewBetaUserMessage(results...))
		}
	}
	if a.Stats().Compactions == 0 {
		t.Fatalf("the first backend never compacted: the switch carries no compaction block")
	}
	return b.Stats()
}

// TestBackendSwitch: a conversation that compacted and thought on one
// backend goes on on another: with Retarget, the other backend never
// sees a blob it cannot decode, and every request succeeds; without it,
// the first request after the switch is rejected.
func TestBackendSwitch(t *testing.T) {
	s := switchRun(t, true)
	t.Logf("after the switch, with Retarget: %d requests, %d accepted, rejected %v, %d compactions", s.Requests, s.Accepted, s.Rejected, s.Compactions)
	if s.Requests == 0 || s.Requests != s.Accepted {
		t.Errorf("with Retarget: %d of %d requests rejected: %v", s.Requests-s.Accepted, s.Requests, s.Rejected)
	}
	naive := switchRun(t, false)
	if naive.Accepted != 0 || naive.Requests != 1 {
		t.Errorf("without Retarget: want the first request after the switch rejected, got %+v", naive)
	}
}

// TestRetarget: another backend's compaction becomes a user message
// holding its summary, its thinking goes, unknown blocks stay, and the
// input is not modified.
func TestRetarget(t *testing.T) {
	comp := param.Override[anthropic.BetaContentBlockParamUnion](json.RawMessage(`{"type":"compaction","content":"the summary","encrypted_content":"e","signature":"s","tool_changes":[]}`))
	think := anthropic.NewBetaThinkingBlock("sig-a", "hmm")
	msgs := []anthropic.BetaMessageParam{
		{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: []anthropic.BetaContentBlockParamUnion{comp, anthropic.NewBetaTextBlock("after")}}},
		anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("next")),
		{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: []anthropic.BetaContentBlockParamUnion{think, anthropic.NewBetaToolUseBlock("t1", map[string]any{}, "read")}}},
		anthropic.NewBetaUserMessage(anthropic.NewBetaToolResultBlock("t1", "out", false)),
		{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: []anthropic.BetaContentBlockParamUnion{anthropic.NewBetaThinkingBlock("sig-unknown", "x"), anthropic.NewBetaTextBlock("done")}}},
	}
	before, _ := json.Marshal(msgs)
	var o Origins
	a := Origin{Provider: "anthropic", Model: "m"}
	Record(&o, a, msgs[0], msgs[2])
	if same, n := Retarget(msgs, &o, a); n != 0 || &same[0] != &msgs[0] {
		t.Fatalf("to the same backend: %d changes", n)
	}
	out, n := Retarget(msgs, &o, Origin{Provider: "vertex", Model: "m"})
	raw, _ := json.Marshal(out)
	if after, _ := json.Marshal(msgs); string(after) != string(before) {
		t.Fatal("the input was modified")
	}
	want := `[{"content":[{"text":"[Summary of the earlier conversation]\nthe summary","type":"text"}],"role":"user"},` +
		`{"content":[{"text":"after","type":"text"}],"role":"assistant"},`
	if n != 2 || !strings.HasPrefix(string(raw), want) || strings.Contains(string(raw), "sig-a") || !strings.Contains(string(raw), "sig-unknown") {
		t.Fatalf("%d changes:\n%s", n, raw)
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
}

// TestServerOf reads the server's rewrites from the request params.
func TestServerOf(t *testing.T) {
	var p anthropic.BetaMessageNewParams
	if s := ServerOf(p); s.Rewrites() || s.Trigger() != 0 {
		t.Fatalf("no edits: %+v", s)
	}
	p.ContextManagement.Edits = []anthropic.BetaContextManagementConfigEditUnionParam{
		{OfCompact20260112: &anthropic.BetaCompact20260112EditParam{}},
		{OfClearToolUses20250919: &anthropic.BetaClearToolUses20250919EditParam{}},
	}
	s := ServerOf(p)
	if !s.Compaction || s.CompactTrigger != DefaultCompactTrigger || !s.ClearToolUses || s.ClearTrigger != DefaultClearTrigger || s.Trigger() != DefaultClearTrigger {
		t.Fatalf("defaults: %+v", s)
	}
	if _, err := Guard(p, 90_000); !errors.Is(err, ErrGuard) {
		t.Fatalf("a budget under the trigger: %v", err)
	}
	if opts, err := Guard(p, 200_000); err != nil || len(opts) == 0 {
		t.Fatalf("a budget above the trigger: %v, %d options", err, len(opts))
	}
}

// TestGuardRungs: what Guard's options do to a request, by the Trimmer
// and by Trim. Under budget, nothing: no result elided, whatever its size
// (the server owns every rewrite below its trigger). Over budget with the
// latest turn alone too large (a burst of results the server has not
// compacted), the oldest steps go, and a result larger than the window is
// cut to a digest, so that the request fits (issue 33: with whole-turn
// drops alone, both were sent over the window).
func TestGuardRungs(t *testing.T) {
	params := anthropic.BetaMessageNewParams{Model: loopModel, MaxTokens: 1024, System: []anthropic.BetaTextBlockParam{{Text: "You review code."}}}
	params.ContextManagement.Edits = []anthropic.BetaContextManagementConfigEditUnionParam{{
		OfCompact20260112: &anthropic.BetaCompact20260112EditParam{Trigger: anthropic.BetaInputTokensTriggerParam{Value: 4_000}},
	}}
	const window = 6_000
	opts, err := Guard(params, window)
	if err != nil {
		t.Fatal(err)
	}
	file := func(lines int) string { return strings.Repeat("func handler() error { return nil }\n", lines) }
	// task builds a turn of steps, each reading len(step) files of so many lines.
	task := func(steps ...[]int) []anthropic.BetaMessageParam {
		msgs := []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Review the handlers."))}
		for s, sizes := range steps {
			var calls, results []anthropic.BetaContentBlockParamUnion
			for k, n := range sizes {
				id := "toolu_" + strconv.Itoa(s) + "_" + strconv.Itoa(k)
				calls = append(calls, anthropic.NewBetaToolUseBlock(id, map[string]any{"path": id + ".go"}, "read_file"))
				results = append(results, anthropic.NewBetaToolResultBlock(id, file(n), false))
			}
			msgs = append(msgs, anthropic.BetaMessageParam{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: calls}}, anthropic.NewBetaUserMessage(results...))
		}
		return msgs
	}
	for _, tc := range []struct {
		name        string
		msgs        []anthropic.BetaMessageParam
		steps, cuts int
		reason      string
	}{
		{"under budget", task([]int{100, 100}, []int{100}), 0, 0,
			"results of 900 tokens, over elision's default size, are sent as they are: the server owns the rewrites below its trigger"},
		{"a burst over the window", task([]int{100, 100}, []int{100, 100}, []int{100, 100, 100}), 1, 0,
			"the oldest steps of the latest turn go"},
		{"one result over the window", task([]int{100}, []int{800}), 1, 1,
			"the last rung cuts the result the latest step cannot do without"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTrimmer(params.System, opts...)
			for _, trim := range []func() ([]anthropic.BetaMessageParam, history.Result, error){
				func() ([]anthropic.BetaMessageParam, history.Result, error) { return tr.Trim(tc.msgs, window) },
				func() ([]anthropic.BetaMessageParam, history.Result, error) {
					return Trim(params.System, tc.msgs, window, opts...)
				},
			} {
				out, res, err := trim()
				if err != nil || res.TokensAfter > window || res.DroppedSteps != tc.steps || res.CutResults != tc.cuts || res.ElidedResults != tc.cuts {
					t.Fatalf("%v, %d tokens, %d steps dropped, %d results cut, %d elided; want it within %d, %d steps dropped, %d cut (%s)",
						err, res.TokensAfter, res.DroppedSteps, res.CutResults, res.ElidedResults, window, tc.steps, tc.cuts, tc.reason)
				}
				if tc.steps == 0 && tc.cuts == 0 && (res.Trimmed || len(out) != len(tc.msgs)) {
					t.Fatalf("a request under budget was changed (%s)", tc.reason)
				}
				if err := Validate(out); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestInputTokens: the pre-edit count adds the cleared tokens; a
// request in which a compaction ran is not observed.
func TestInputTokens(t *testing.T) {
	var m anthropic.BetaMessage
	if err := json.Unmarshal([]byte(`{"id":"m","type":"message","role":"assistant","content":[],"model":"x",
		"usage":{"input_tokens":100,"cache_read_input_tokens":50,"cache_creation_input_tokens":25,"output_tokens":1,"iterations":[]},
		"context_management":{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":2,"cleared_input_tokens":1000}]}}`), &m); err != nil {
		t.Fatal(err)
	}
	if n, ok := InputTokens(&m); !ok || n != 1175 {
		t.Fatalf("got %d, %v; want 1175", n, ok)
	}
	var cal history.Calibration
	if err := json.Unmarshal([]byte(`{"id":"m","type":"message","role":"assistant","content":[],"model":"x",
		"usage":{"input_tokens":100,"output_tokens":1,"iterations":[{"type":"compaction","input_tokens":9000,"output_tokens":300}]},
		"context_management":{"applied_edits":[]}}`), &m); err != nil {
		t.Fatal(err)
	}
	if Observe(&cal, history.Result{TokensAfter: 9000}, &m) {
		t.Fatal("a request in which a compaction ran was observed")
	}
}

// TestCompactionErrorCodes: the local server answers what the API
// answers, and the v2 client reads its error codes: a compaction block
// out of place, tampered with, from another backend; a trim of the same
// messages is accepted.
func TestCompactionErrorCodes(t *testing.T) {
	srv := &anthropicserver.Server{Backend: "anthropic", Window: loopWindow}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := newClient(ts.URL)
	params := anthropic.BetaMessageNewParams{Model: loopModel, MaxTokens: 64}
	params.ContextManagement.Edits = []anthropic.BetaContextManagementConfigEditUnionParam{{
		OfCompact20260112: &anthropic.BetaCompact20260112EditParam{Trigger: anthropic.BetaInputTokensTriggerParam{Value: 200}},
	}}
	task := anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(loopserver.Task(1) + strings.Repeat(" context", 400)))
	params.Messages = []anthropic.BetaMessageParam{task}
	reply, err := client.Beta.Messages.New(context.Background(), params)
	if err != nil || reply.Content[0].Type != "compaction" {
		t.Fatalf("no compaction: %v", err)
	}
	compacted := reply.ToParam()
	next := toolResults(reply)
	if len(next) == 0 {
		next = []anthropic.BetaContentBlockParamUnion{anthropic.NewBetaTextBlock("Go on.")} // the API refuses a message with no content
	}
	good := []anthropic.BetaMessageParam{task, compacted, anthropic.NewBetaUserMessage(next...)}
	tampered := reply.ToParam()
	tampered.OfAssistant.Content[0].OfCompaction.Content = param.NewOpt("a better summary")
	tests := []struct {
		name, code string
		msgs       []anthropic.BetaMessageParam
	}{
		{"misplaced", "compaction_block_misplaced", good},
		{"content changed", "compaction_content_mismatch", []anthropic.BetaMessageParam{tampered, good[2]}},
	}
	for _, tc := range tests {
		params.Messages = tc.msgs
		_, err := client.Beta.Messages.New(context.Background(), params)
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || string(apiErr.ErrorCode()) != tc.code {
			t.Errorf("%s: got %v, want error_code %s", tc.name, err, tc.code)
		}
	}
	if err := Validate(good); !errors.Is(err, ErrCompaction) {
		t.Errorf("Validate of a misplaced compaction block: %v", err)
	}
	out, _, err := Trim(nil, good, loopWindow)
	if err != nil {
		t.Fatal(err)
	}
	params.Messages = out
	if _, err := client.Beta.Messages.New(context.Background(), params); err != nil {
		t.Errorf("the trimmed messages: %v", err)
	}
	other := &anthropicserver.Server{Backend: "vertex", Window: loopWindow}
	to := httptest.NewServer(other)
	defer to.Close()
	otherClient := newClient(to.URL)
	_, err = otherClient.Beta.Messages.New(context.Background(), params)
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != anthropic.ErrorCodeCompactionSignatureInvalid || !strings.Contains(apiErr.RawJSON(), "Could not decode the compaction blob") {
		t.Errorf("another backend: %v", err)
	}
}
