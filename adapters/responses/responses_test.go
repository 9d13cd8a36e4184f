package responses

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// describe renders a converted message compactly for the tables: role
// (kind), tool-call id, content, parts as type:text (images as
// image:WxH, files as file:size), calls as id:name.
func describe(m history.Message) string {
	var b strings.Builder
	b.WriteString(string(m.Role))
	if m.Kind != "" {
		b.WriteString("(" + string(m.Kind) + ")")
	}
	if m.ToolCallID != "" {
		b.WriteString(" [" + m.ToolCallID + "]")
	}
	if m.Content != "" {
		b.WriteString(" " + quote(m.Content))
	}
	for _, p := range m.Parts {
		switch p.Type {
		case history.PartImage:
			b.WriteString(" image:" + strconv.Itoa(p.Width) + "x" + strconv.Itoa(p.Height))
		case history.PartFile:
			b.WriteString(" file:" + strconv.Itoa(int(p.Size)))
		default:
			text := p.Text
			if len(text) > 24 {
				text = text[:24] + "…"
			}
			b.WriteString(" " + string(p.Type) + ":" + text)
		}
	}
	for _, c := range m.ToolCalls {
		b.WriteString(" call:" + c.ID + ":" + c.Name)
	}
	return b.String()
}

func pngURL(t *testing.T, w, h int) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(adaptertest.PNG(t, w, h))
}

func TestToHistoryMapping(t *testing.T) {
	img := pngURL(t, 40, 20)
	tests := []struct {
		name  string
		items []Item
		want  []string
	}{
		{
			name:  "messages by role",
			items: []Item{developer("rules"), user("hi"), assistant("hello"), {OfMessage: &responses.EasyInputMessageParam{Role: "system", Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt("sys")}}}},
			want:  []string{`system "rules"`, `user "hi"`, `assistant "hello"`, `system "sys"`},
		},
		{
			name: "input message with media",
			items: []Item{responses.ResponseInputItemParamOfInputMessage(responses.ResponseInputMessageContentListParam{
				{OfInputText: &responses.ResponseInputTextParam{Text: "look"}},
				{OfInputImage: &responses.ResponseInputImageParam{ImageURL: param.NewOpt(img), Detail: "high"}},
				{OfInputFile: &responses.ResponseInputFileParam{FileData: param.NewOpt("data:application/pdf;base64,AAAAAAAA")}},
			}, "user")},
			want: []string{`user text:look image:40x20 file:6`},
		},
		{
			name:  "reasoning folds into the output it precedes",
			items: []Item{user("q"), reasoning("rs_1", "thinking", "ENC"), output("msg_1", "answer")},
			want:  []string{`user "q"`, `assistant reasoning:thinking reasoning:ENC text:answer`},
		},
		{
			name: "parallel calls, outputs in any order",
			items: []Item{user("q"), reasoning("rs_1", "", "E"), functionCall("c1", "read", "{}"), functionCall("c2", "grep", "{}"),
				functionOutput("c2", "two"), functionOutput("c1", "one"), output("msg_1", "done")},
			// The message after the outputs, with no reasoning of its own,
			// stays in the reasoning's group.
			want: []string{`user "q"`, `assistant reasoning:E text:done call:c1:read call:c2:grep`, `tool [c2] "two"`, `tool [c1] "one"`},
		},
		{
			name: "reasoning binds a response answered call by call",
			items: []Item{user("q"), reasoning("rs_1", "", "E"), functionCall("c1", "read", "{}"), functionOutput("c1", "one"),
				functionCall("c2", "read", "{}"), functionOutput("c2", "two"), reasoning("rs_2", "", "F"), output("msg_2", "done")},
			want: []string{`user "q"`, `assistant reasoning:E call:c1:read call:c2:read`, `tool [c1] "one"`, `tool [c2] "two"`, `assistant reasoning:F text:done`},
		},
		{
			name: "without reasoning each call is a step",
			items: []Item{user("q"), functionCall("c1", "read", "{}"), functionOutput("c1", "one"),
				functionCall("c2", "read", "{}"), functionOutput("c2", "two"), assistant("done")},
			want: []string{`user "q"`, `assistant call:c1:read`, `tool [c1] "one"`, `assistant call:c2:read`, `tool [c2] "two"`, `assistant "done"`},
		},
		{
			name: "client-side tool types",
			items: []Item{user("q"), customCall("k1", "patch", "diff"), shellCall("s1", "ls"), localShellCall("lsh_1", "l1"), applyPatchCall("a1"),
				program("p1", "code"), toolSearchCall("t1"), computerCall("u1"), approvalRequest("mcpr_1"),
				customOutput("k1", "ok"), shellOutput("s1", "out", "err"), localShellOutput("l1", "done"), applyPatchOutput("a1", "applied"),
				programOutput("p1", "42"), toolSearchOutput("t1"), computerOutput("u1", img), approvalResponse("mcpr_1", true)},
			want: []string{`user "q"`,
				// Calls whose arguments Trim cannot rewrite: an empty
				// reasoning part keeps the core from clearing them.
				`assistant reasoning: call:k1:patch call:s1:shell call:l1:local_shell call:a1:apply_patch call:p1:program call:t1:tool_search call:u1:computer call:mcpr_1:deploy`,
				`tool [k1] "ok"`, `tool [s1] "out\nerr"`, `tool [l1] "done"`, `tool [a1] "applied"`, `tool [p1] "42"`,
				`tool(elided) [t1] text:[]`, `tool(elided) [u1] image:40x20`, `tool(elided) [mcpr_1]`},
		},
		{
			name: "what binds calls is marked with an empty reasoning part",
			items: []Item{user("q"), reasoning("rs_1", "", ""), functionCall("c1", "read", "{}"), functionOutput("c1", "one"), user("r"),
				{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: "c2", Name: "read", Arguments: "{}",
					Caller: responses.ResponseFunctionToolCallCallerUnionParam{OfProgram: &responses.ResponseFunctionToolCallCallerProgramParam{CallerID: "p1"}}}},
				functionOutput("c2", "two"), user("s"),
				{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: "c3", Name: "read", Arguments: "{}",
					Caller: responses.ResponseFunctionToolCallCallerUnionParam{OfDirect: &responses.ResponseFunctionToolCallCallerDirectParam{}}}},
				functionOutput("c3", "three")},
			// A bare reasoning item (its text stored server-side), a call a
			// program made; a call the model made directly is not marked.
			want: []string{`user "q"`, `assistant reasoning: call:c1:read`, `tool [c1] "one"`, `user "r"`, `assistant reasoning: call:c2:read`, `tool [c2] "two"`,
				`user "s"`, `assistant call:c3:read`, `tool [c3] "three"`},
		},
		{
			name:  "local shell output by the call's item id",
			items: []Item{user("q"), localShellCall("lsh_1", "call_1"), localShellOutput("lsh_1", "done")},
			want:  []string{`user "q"`, `assistant reasoning: call:call_1:local_shell`, `tool [call_1] "done"`},
		},
		{
			name:  "hosted tools are model output",
			items: []Item{user("q"), reasoning("rs_1", "", "E"), webSearch("ws_1"), mcpCall("mcp_1", "found"), output("msg_1", "here")},
			want:  []string{`user "q"`, `assistant reasoning:E text:{"id":"ws_1","action":{"… text:{"id":"mcp_1","arguments… text:here`},
		},
		{
			name:  "compaction is a summary, the trigger a nudge",
			items: []Item{user("a"), user("b"), compaction("cmp_1", "SECRET"), user("c"), trigger()},
			want:  []string{`user "a"`, `user "b"`, `assistant(summary) reasoning:SECRET`, `user "c"`, `user(nudge)`},
		},
		{
			name:  "unbound reasoning becomes an orphan result",
			items: []Item{user("q"), reasoning("rs_1", "", "E"), user("again"), reasoning("rs_2", "", "F")},
			// rs_1 is of an earlier turn, which the API does not read: it
			// counts nothing.
			want: []string{`user "q"`, `tool(elided) [histrim:unbound-reasoning:rs_1] reasoning:`, `user "again"`, `tool(elided) [histrim:unbound-reasoning:rs_2] reasoning:F`},
		},
		{
			name: "reasoning before an unanswered call goes with it",
			items: []Item{user("q"), reasoning("rs_1", "", "E"), functionCall("c1", "read", "{}"), reasoning("rs_2", "", "F"), functionCall("c2", "read", "{}"),
				functionOutput("c1", "one")},
			want: []string{`user "q"`, `assistant reasoning:E call:c1:read call:c2:read`, `tool(elided) [histrim:unbound-reasoning:rs_2] reasoning:F`, `tool [c1] "one"`},
		},
		{
			name:  "reasoning before an output is unbound, and the exchange ends",
			items: []Item{user("q"), functionCall("c1", "read", "{}"), functionOutput("c1", "one"), reasoning("rs_1", "", "E"), functionOutput("c1", "again")},
			want:  []string{`user "q"`, `assistant call:c1:read`, `tool [c1] "one"`, `assistant`, `tool(elided) [histrim:unbound-reasoning:rs_1] reasoning:E`, `tool [histrim:unpaired:c1] "again"`},
		},
		{
			name:  "a second call with a call id answers nothing",
			items: []Item{user("q"), functionCall("c1", "read", "{}"), customCall("c1", "patch", ""), functionOutput("c1", "one"), customOutput("c1", "two")},
			want:  []string{`user "q"`, `assistant call:c1:read call:histrim:duplicate:2:c1:patch`, `tool [c1] "one"`, `tool [histrim:unpaired:c1] "two"`},
		},
		{
			name: "an output answers no call after it",
			items: []Item{user("q"), reasoning("rs_1", "", "E"), functionCall("c1", "read", "{}"), functionOutput("c1", "one"),
				functionOutput("c2", "early"), functionCall("c2", "read", "{}"), functionOutput("c2", "two"), functionOutput("c1", "twice")},
			want: []string{`user "q"`, `assistant reasoning:E call:c1:read call:c2:read`, `tool [c1] "one"`, `tool [histrim:unpaired:c2] "early"`,
				`tool [c2] "two"`, `tool [histrim:unpaired:c1] "twice"`},
		},
		{
			name:  "an output after a reference answers a referenced call",
			items: []Item{user("q"), reference("rs_9"), reference("fc_9"), functionOutput("call_9", "out")},
			want:  []string{`user "q"`, `assistant text:{"id":"rs_9"} text:{"id":"fc_9"} reasoning: call:call_9:referenced`, `tool [call_9] "out"`},
		},
		{
			name: "overrides are read through their JSON",
			items: []Item{
				overrideItem(`{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"hi","annotations":[]}]}`),
				overrideItem(`{"role":"user","content":"plain"}`),
				overrideItem(`{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"XYZ"}`),
				overrideItem(`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`),
				overrideItem(`{"type":"function_call_output","call_id":"c1","output":"r","x_trace":1}`),
				overrideItem(`{"type":"brand_new_item","id":"bn_1"}`),
			},
			want: []string{`assistant text:hi`, `user "plain"`, `assistant reasoning:XYZ call:c1:f`, `tool [c1] "r"`, `assistant text:{"type":"brand_new_item"… reasoning:`},
		},
		{
			name:  "a reasoning item built with ToParam",
			items: []Item{user("q"), {OfReasoning: ptr(param.Override[responses.ResponseReasoningItemParam](json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC"}`)))}, output("msg_1", "a")},
			want:  []string{`user "q"`, `assistant reasoning:ENC text:a`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hist := mustHistory(t, tc.items)
			got := make([]string, len(hist))
			for i, m := range hist {
				got[i] = describe(m)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestToHistoryErrors(t *testing.T) {
	tests := []struct {
		name  string
		items []Item
		at    int
		why   string
	}{
		{"no variant", []Item{user("q"), {}}, 1, "no item variant"},
		{"call without call_id", []Item{user("q"), functionCall("", "f", "{}")}, 1, "without a call_id"},
		{"output without call_id", []Item{user("q"), functionOutput("", "x")}, 1, "without the id of its call"},
		{"unknown role", []Item{responses.ResponseInputItemParamOfMessage("x", "robot")}, 0, "unknown role"},
		{"reference without id", []Item{reference("")}, 0, "without an id"},
		{"override that is no object", []Item{overrideItem(`"text"`)}, 0, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for name, err := range map[string]error{
				"ToHistory": func() error { _, err := ToHistory(tc.items); return err }(),
				"Trim":      func() error { _, _, err := Trim(tc.items, 100); return err }(),
				"Validate":  Validate(tc.items),
			} {
				var me *MessageError
				if !errors.As(err, &me) || !errors.Is(err, history.ErrInvalidMessage) || me.Index != tc.at || !strings.Contains(me.Reason, tc.why) {
					t.Errorf("%s: %v, want a *MessageError at %d saying %q", name, err, tc.at, tc.why)
				}
			}
		})
	}
}

// TestWireMatchesTyped: an item read through its JSON form (as an
// override of the whole item, or of its variant where ToParam builds one)
// reads exactly as the typed item does, for every item type.
func TestWireMatchesTyped(t *testing.T) {
	img := pngURL(t, 12, 34)
	items := []Item{
		user("hi"), developer("rules"), assistant("hello"), output("msg_1", "answer"),
		responses.ResponseInputItemParamOfInputMessage(responses.ResponseInputMessageContentListParam{
			{OfInputText: &responses.ResponseInputTextParam{Text: "look"}},
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: param.NewOpt(img), Detail: "low"}},
			{OfInputFile: &responses.ResponseInputFileParam{FileData: param.NewOpt("data:application/pdf;base64,AAAA")}},
		}, "user"),
		reasoning("rs_1", "thinking", "ENC"),
		{OfReasoning: &responses.ResponseReasoningItemParam{ID: "rs_2", Summary: []responses.ResponseReasoningItemSummaryParam{},
			Content: []responses.ResponseReasoningItemContentParam{{Text: "raw thought"}}}},
		functionCall("c1", "read", `{"p":1}`), functionOutput("c1", "out"),
		responses.ResponseInputItemParamOfFunctionCallOutput("c2", responses.ResponseFunctionCallOutputItemListParam{
			{OfInputText: &responses.ResponseInputTextContentParam{Text: "see"}},
			{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: param.NewOpt(img)}},
		}),
		customCall("k1", "patch", "diff"), customOutput("k1", "ok"),
		{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: "c3", Name: "read", Arguments: "{}",
			Caller: responses.ResponseFunctionToolCallCallerUnionParam{OfProgram: &responses.ResponseFunctionToolCallCallerProgramParam{CallerID: "p1"}}}},
		{OfFunctionCall: &responses.ResponseFunctionToolCallParam{CallID: "c4", Name: "read", Arguments: "{}",
			Caller: responses.ResponseFunctionToolCallCallerUnionParam{OfDirect: &responses.ResponseFunctionToolCallCallerDirectParam{}}}},
		{OfCustomToolCall: &responses.ResponseCustomToolCallParam{CallID: "k2", Name: "patch", Input: "diff",
			Caller: responses.ResponseCustomToolCallCallerUnionParam{OfProgram: &responses.ResponseCustomToolCallCallerProgramParam{CallerID: "p1"}}}},
		computerCall("u1"), computerOutput("u1", img),
		localShellCall("lsh_1", "l1"), localShellOutput("l1", "done"),
		shellCall("s1", "ls", "pwd"), shellOutput("s1", "out", "err"),
		applyPatchCall("a1"), applyPatchOutput("a1", "applied"),
		program("p1", "code"), programOutput("p1", "42"),
		toolSearchCall("t1"), toolSearchOutput("t1"),
		{OfToolSearchCall: &responses.ResponseInputItemToolSearchCallParam{Arguments: map[string]any{"q": "x"}, Execution: "server"}},
		approvalRequest("mcpr_1"), approvalResponse("mcpr_1", false),
		webSearch("ws_1"), mcpCall("mcp_1", "found"),
		{OfFileSearchCall: &responses.ResponseFileSearchToolCallParam{ID: "fs_1", Queries: []string{"q"}, Status: "completed"}},
		{OfImageGenerationCall: &responses.ResponseInputItemImageGenerationCallParam{ID: "ig_1", Status: "completed",
			Result: param.NewOpt(strings.TrimPrefix(img, "data:image/png;base64,"))}},
		{OfAdditionalTools: &responses.ResponseInputItemAdditionalToolsParam{Tools: []responses.ToolUnionParam{}}},
		compaction("cmp_1", "SECRET"), trigger(), reference("rs_9"),
	}
	for i := range items {
		typed, err := read(&items[i])
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		over := overrideItem(jsonOf(t, items[i]))
		wired, err := read(&over)
		if err != nil {
			t.Fatalf("item %d as an override: %v", i, err)
		}
		if typed.typ == "message" && wired.typ == "message" {
			wired.id = typed.id // an easy message has no id field of its own
		}
		if describeView(typed) != describeView(wired) {
			t.Errorf("item %d (%s) reads\n%s\nthrough its JSON, and\n%s\ntyped", i, typed.typ, describeView(wired), describeView(typed))
		}
	}
}

func describeView(v view) string {
	m := history.Message{Role: history.Role(strconv.Itoa(int(v.cls))), Content: v.content, Parts: v.parts, ToolCallID: v.callID,
		Name: v.typ + "/" + v.id + "/" + v.name + "/" + v.args + "/" + strconv.FormatBool(v.fixed) + strconv.FormatBool(v.plain) + strconv.FormatBool(v.keepArgs)}
	return describe(m) + " " + m.Name
}

// Builders of input items, in the shapes a runtime stores them.

func user(text string) Item {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

func developer(text string) Item {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleDeveloper)
}

func assistant(text string) Item {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant)
}

// output is an output message of the model, as it comes back from the API.
func output(id, text string) Item {
	return responses.ResponseInputItemParamOfOutputMessage([]responses.ResponseOutputMessageContentUnionParam{{
		OfOutputText: &responses.ResponseOutputTextParam{Text: text, Annotations: []responses.ResponseOutputTextAnnotationUnionParam{}},
	}}, id, responses.ResponseOutputMessageStatusCompleted)
}

// reasoning is a reasoning item with a summary and encrypted content.
func reasoning(id, summary, encrypted string) Item {
	r := &responses.ResponseReasoningItemParam{ID: id, Summary: []responses.ResponseReasoningItemSummaryParam{}}
	if summary != "" {
		r.Summary = append(r.Summary, responses.ResponseReasoningItemSummaryParam{Text: summary})
	}
	if encrypted != "" {
		r.EncryptedContent = param.NewOpt(encrypted)
	}
	return Item{OfReasoning: r}
}

func functionCall(callID, name, args string) Item {
	u := responses.ResponseInputItemParamOfFunctionCall(args, callID, name)
	u.OfFunctionCall.ID = param.NewOpt("fc_" + callID)
	return u
}

func functionOutput(callID, out string) Item {
	return responses.ResponseInputItemParamOfFunctionCallOutput(callID, out)
}

func customCall(callID, name, input string) Item {
	return Item{OfCustomToolCall: &responses.ResponseCustomToolCallParam{CallID: callID, Name: name, Input: input}}
}

func customOutput(callID, out string) Item {
	return Item{OfCustomToolCallOutput: &responses.ResponseCustomToolCallOutputParam{
		CallID: callID, Output: responses.ResponseCustomToolCallOutputOutputUnionParam{OfString: param.NewOpt(out)}}}
}

func shellCall(callID string, cmds ...string) Item {
	return Item{OfShellCall: &responses.ResponseInputItemShellCallParam{CallID: callID,
		Action: responses.ResponseInputItemShellCallActionParam{Commands: cmds}}}
}

func shellOutput(callID, stdout, stderr string) Item {
	return Item{OfShellCallOutput: &responses.ResponseInputItemShellCallOutputParam{CallID: callID,
		Output: []responses.ResponseFunctionShellCallOutputContentParam{{Stdout: stdout, Stderr: stderr,
			Outcome: responses.ResponseFunctionShellCallOutputContentOutcomeUnionParam{
				OfExit: &responses.ResponseFunctionShellCallOutputContentOutcomeExitParam{ExitCode: 1}}}}}}
}

func localShellCall(id, callID string) Item {
	return Item{OfLocalShellCall: &responses.ResponseInputItemLocalShellCallParam{ID: id, CallID: callID, Status: "completed",
		Action: responses.ResponseInputItemLocalShellCallActionParam{Command: []string{"ls"}, Env: map[string]string{}}}}
}

func localShellOutput(id, out string) Item {
	return Item{OfLocalShellCallOutput: &responses.ResponseInputItemLocalShellCallOutputParam{ID: id, Output: out}}
}

func computerCall(callID string) Item {
	return Item{OfComputerCall: &responses.ResponseComputerToolCallParam{ID: "cu_" + callID, CallID: callID,
		PendingSafetyChecks: []responses.ResponseComputerToolCallPendingSafetyCheckParam{},
		Status:              responses.ResponseComputerToolCallStatusCompleted, Type: responses.ResponseComputerToolCallTypeComputerCall,
		Action: responses.ResponseComputerToolCallActionUnionParam{OfScreenshot: &responses.ResponseComputerToolCallActionScreenshotParam{}}}}
}

func computerOutput(callID, url string) Item {
	return responses.ResponseInputItemParamOfComputerCallOutput(callID, responses.ResponseComputerToolCallOutputScreenshotParam{ImageURL: param.NewOpt(url)})
}

func applyPatchCall(callID string) Item {
	return Item{OfApplyPatchCall: &responses.ResponseInputItemApplyPatchCallParam{CallID: callID, Status: "completed",
		Operation: responses.ResponseInputItemApplyPatchCallOperationUnionParam{OfUpdateFile: &responses.ResponseInputItemApplyPatchCallOperationUpdateFileParam{Path: "a.go", Diff: "@@ -1 +1 @@\n-a\n+b"}}}}
}

func applyPatchOutput(callID, out string) Item {
	return Item{OfApplyPatchCallOutput: &responses.ResponseInputItemApplyPatchCallOutputParam{CallID: callID, Status: "completed", Output: param.NewOpt(out)}}
}

func program(callID, code string) Item {
	return Item{OfProgram: &responses.ResponseInputItemProgramParam{ID: "pg_" + callID, CallID: callID, Code: code, Fingerprint: "fp"}}
}

func programOutput(callID, result string) Item {
	return Item{OfProgramOutput: &responses.ResponseInputItemProgramOutputParam{ID: "po_" + callID, CallID: callID, Result: result, Status: "completed"}}
}

func approvalRequest(id string) Item {
	return Item{OfMcpApprovalRequest: &responses.ResponseInputItemMcpApprovalRequestParam{ID: id, Name: "deploy", ServerLabel: "ops", Arguments: `{"env":"prod"}`}}
}

func approvalResponse(id string, ok bool) Item {
	return Item{OfMcpApprovalResponse: &responses.ResponseInputItemMcpApprovalResponseParam{ApprovalRequestID: id, Approve: ok}}
}

func toolSearchCall(callID string) Item {
	return Item{OfToolSearchCall: &responses.ResponseInputItemToolSearchCallParam{CallID: param.NewOpt(callID), Arguments: map[string]any{"query": "calendar"}, Execution: "client"}}
}

func toolSearchOutput(callID string) Item {
	return Item{OfToolSearchOutput: &responses.ResponseToolSearchOutputItemParam{CallID: param.NewOpt(callID), Tools: []responses.ToolUnionParam{}}}
}

func webSearch(id string) Item {
	return responses.ResponseInputItemParamOfWebSearchCall(responses.ResponseFunctionWebSearchActionSearchParam{Queries: []string{"weather oslo"}}, id, responses.ResponseFunctionWebSearchStatusCompleted)
}

func mcpCall(id, out string) Item {
	return Item{OfMcpCall: &responses.ResponseInputItemMcpCallParam{ID: id, Name: "lookup", ServerLabel: "kb", Arguments: "{}", Output: param.NewOpt(out)}}
}

func compaction(id, encrypted string) Item {
	return Item{OfCompaction: &responses.ResponseCompactionItemParam{ID: param.NewOpt(id), EncryptedContent: encrypted}}
}

func trigger() Item {
	t := responses.NewResponseInputItemCompactionTriggerParam()
	return Item{OfCompactionTrigger: &t}
}

func reference(id string) Item {
	return Item{OfItemReference: &responses.ResponseInputItemItemReferenceParam{ID: id}}
}

func overrideItem(js string) Item {
	return param.Override[Item](json.RawMessage(js))
}

// mustHistory converts items, failing t on error.
func mustHistory(t testing.TB, items []Item) []history.Message {
	t.Helper()
	hist, err := ToHistory(items)
	if err != nil {
		t.Fatal(err)
	}
	return hist
}

// jsonOf returns the JSON of an item, failing t if it does not encode.
func jsonOf(t testing.TB, u Item) string {
	t.Helper()
	b, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// itemID returns the identity of an item for tests: its type and the id
// or call id that names it, or its JSON for items with neither.
func itemKey(t testing.TB, u Item) string {
	t.Helper()
	v, err := read(&u)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case v.id != "":
		return v.typ + ":" + v.id
	case v.callID != "":
		return v.typ + ":" + v.callID
	}
	return jsonOf(t, u)
}

// identity returns what identifies the item u a trim hands back: the
// pointer to its variant, which Trim copies and never replaces for a kept
// item, or the JSON of an override (which has no variant set).
func identity(t testing.TB, u Item) any {
	v := reflect.ValueOf(u)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return f.Pointer()
		}
	}
	return jsonOf(t, u)
}

// checkBinding checks out, a trim of in, against the binding rule: a
// reasoning item of in that precedes an item it can precede (see
// Validate) and the item right after it are both in out or both not, and when both are, adjacent and in order; an item of out that
// followed a reasoning item in in follows it in out. Items are matched by
// their JSON, so the caller's values must come back as they were (an
// elided output, which no reasoning precedes, excepted).
func checkBinding(t testing.TB, in, out []Item) {
	t.Helper()
	pos := map[any]int{}
	for j, u := range out {
		pos[identity(t, u)] = j
	}
	views := make([]view, len(in))
	for i := range in {
		v, err := read(&in[i])
		if err != nil {
			t.Fatal(err)
		}
		views[i] = v
	}
	for i := 0; i+1 < len(in); i++ {
		if in[i].OfReasoning == nil || !precedes(views, i) {
			continue // not bound in the input: Validate sees that it is gone
		}
		j, rsKept := pos[identity(t, in[i])]
		k, nextKept := pos[identity(t, in[i+1])]
		if !rsKept && nextKept {
			t.Fatalf("item %d (%s) kept without the reasoning item before it (%s)", i+1, itemKey(t, in[i+1]), itemKey(t, in[i]))
		}
		if rsKept && (!nextKept || k != j+1) {
			t.Fatalf("reasoning item %d (%s) kept without the item after it (%s)", i, itemKey(t, in[i]), itemKey(t, in[i+1]))
		}
	}
	// Kept items keep their order, but for a compaction item, which a
	// trim may move into the prefix.
	last := -1
	for i := range in {
		if j, ok := pos[identity(t, in[i])]; ok && in[i].OfCompaction == nil {
			if j < last {
				t.Fatalf("item %d (%s) moved before an item that preceded it", i, itemKey(t, in[i]))
			}
			last = j
		}
	}
}

func TestOverhead(t *testing.T) {
	tool := responses.ToolParamOfFunction("lookup", map[string]any{
		"type":       "object",
		"properties": map[string]any{"q": map[string]any{"type": "string"}},
	}, true)
	toolsJSON, err := json.Marshal([]responses.ToolUnionParam{tool})
	if err != nil {
		t.Fatal(err)
	}
	sys := func(s string) int {
		return history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: s})
	}
	tests := []struct {
		name   string
		params responses.ResponseNewParams
		c      history.Counter
		want   int
	}{
		{name: "nothing besides the input", want: 0},
		{name: "tools", params: responses.ResponseNewParams{Tools: []responses.ToolUnionParam{tool}}, want: sys(string(toolsJSON))},
		{name: "instructions", params: responses.ResponseNewParams{Instructions: openai.String("Be brief.")}, want: sys("Be brief.")},
		{name: "tools and instructions", params: responses.ResponseNewParams{Tools: []responses.ToolUnionParam{tool}, Instructions: openai.String("Be brief.")},
			want: sys(string(toolsJSON)) + sys("Be brief.")},
		{name: "negative counts are 0", params: responses.ResponseNewParams{Instructions: openai.String("x")},
			c: history.CounterFunc(func(history.Message) int { return -5 }), want: 0},
		{name: "huge counts saturate", params: responses.ResponseNewParams{Tools: []responses.ToolUnionParam{tool}, Instructions: openai.String("x")},
			c: history.CounterFunc(func(history.Message) int { return math.MaxInt }), want: math.MaxInt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Overhead(tc.params, tc.c); got != tc.want {
				t.Fatalf("Overhead = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestOverheadReachesTokensAfter: with the overhead, the items get the
// budget less the tools, and TokensAfter counts the whole request.
func TestOverheadReachesTokensAfter(t *testing.T) {
	items := []Item{userItem("hello"), assistantItem("hi")}
	params := responses.ResponseNewParams{Instructions: openai.String("You are a helpful assistant with a long brief.")}
	ov := Overhead(params, nil)
	_, plain, err := Trim(items, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	_, with, err := Trim(items, 10_000, history.WithOverhead(ov))
	if err != nil {
		t.Fatal(err)
	}
	if ov <= 0 || with.TokensAfter != plain.TokensAfter+ov {
		t.Fatalf("TokensAfter %d with overhead %d, %d without", with.TokensAfter, ov, plain.TokensAfter)
	}
}

func userItem(text string) Item {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

func assistantItem(text string) Item {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant)
}

// TestPins: a pinned item survives every budget; pins on tool calls,
// outputs and out-of-range indices are refused.
func TestPins(t *testing.T) {
	long := "an answer long enough to be worth dropping when the budget is small, repeated. "
	for range 4 {
		long += long
	}
	items := []Item{userItem("remember: the deploy key is in vault"), assistantItem("noted")}
	for i := range 6 {
		items = append(items, userItem("question "+string(rune('a'+i))), assistantItem(long))
	}
	pinned := items[0]
	total := 0
	if h, err := ToHistory(items); err == nil {
		total = history.Estimate(h, nil)
	}
	for budget := total; budget > 0; budget -= max(total/40, 1) {
		out, _, err := Trim(items, budget, history.WithPin(0))
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatalf("budget %d: %v", budget, err)
		}
		found := false
		for _, it := range out {
			if it.OfMessage != nil && it.OfMessage.Content.OfString.Value == pinned.OfMessage.Content.OfString.Value {
				found = true
			}
		}
		if !found {
			t.Fatalf("budget %d: the pinned item was dropped", budget)
		}
	}

	call := responses.ResponseInputItemParamOfFunctionCall(`{}`, "call_1", "lookup")
	output := responses.ResponseInputItemParamOfFunctionCallOutput("call_1", "result")
	withTools := []Item{userItem("q"), call, output, assistantItem("a")}
	for _, i := range []int{1, 2, 9} {
		_, _, err := Trim(withTools, 1000, history.WithPin(i))
		var oe *history.OptionError
		if !errors.As(err, &oe) || oe.Option != "WithPin" {
			t.Fatalf("pin %d: err = %v, want a WithPin *history.OptionError", i, err)
		}
	}
}

// TestValidate checks the rules Validate enforces, each of which the API
// enforces with an HTTP 400 (type invalid_request_error, param input):
//
//   - a call without an output after it: "No tool output found for
//     function call call_XXX." (tjardoo/openai-client#124);
//   - an output without its call before it: "No tool call found for
//     function call output with call_id call_uelfkqtHfJDC4Btqeoozq82e."
//     (continuedev/continue#10092);
//   - a reasoning item not followed by an item it can precede: "Item
//     'rs_06a2...' of type 'reasoning' was provided without its required
//     following item." (continuedev/continue#8933, vercel/ai#7099).
//
// sdk_test.go serves the same bodies from a fake API to the real client.
func TestValidate(t *testing.T) {
	pairAt := func(e *PairingError) (int, string) { return e.Index, e.ID }
	rsAt := func(e *ReasoningError) (int, string) { return e.Index, e.ID }
	tests := []struct {
		name  string
		items []Item
		// pairing and reasoning: index and id of the violation wanted,
		// -1 for none.
		pairing, reasoning int
		id                 string
	}{
		{name: "empty", pairing: -1, reasoning: -1},
		{name: "a reasoning turn", items: []Item{user("q"), reasoning("rs_1", "", "E"), functionCall("c1", "f", "{}"), functionOutput("c1", "r"),
			reasoning("rs_2", "", "F"), output("msg_2", "done")}, pairing: -1, reasoning: -1},
		{name: "outputs by call id, anywhere after their call", items: []Item{user("q"), functionCall("c1", "f", "{}"), user("wait"),
			functionOutput("c1", "r")}, pairing: -1, reasoning: -1},
		{name: "reasoning before reasoning before output", items: []Item{reasoning("rs_1", "", ""), reasoning("rs_2", "", ""), webSearch("ws_1")},
			pairing: -1, reasoning: -1},
		{name: "reasoning before a reference", items: []Item{reasoning("rs_1", "", ""), reference("msg_1")}, pairing: -1, reasoning: -1},
		{name: "an output after a reference", items: []Item{user("q"), reference("fc_1"), functionOutput("c1", "r")}, pairing: -1, reasoning: -1},
		{name: "approvals are not paired", items: []Item{approvalRequest("mcpr_1"), approvalResponse("mcpr_2", true)}, pairing: -1, reasoning: -1},
		{name: "local shell output by call id or item id", items: []Item{localShellCall("lsh_1", "c1"), localShellOutput("c1", "x"),
			localShellCall("lsh_2", "c2"), localShellOutput("lsh_2", "y")}, pairing: -1, reasoning: -1},
		{name: "a msg_ item after no reasoning is not checked", items: []Item{user("q"), output("msg_1", "a")}, pairing: -1, reasoning: -1},

		{name: "unanswered function call", items: []Item{user("q"), functionCall("c1", "f", "{}"), functionCall("c2", "f", "{}"),
			functionOutput("c2", "r")}, pairing: 1, id: "c1", reasoning: -1},
		{name: "orphan output", items: []Item{user("q"), functionOutput("c9", "r")}, pairing: 1, id: "c9", reasoning: -1},
		{name: "output before its call", items: []Item{user("q"), customOutput("k1", "r"), customCall("k1", "g", "")}, pairing: 1, id: "k1", reasoning: -1},
		{name: "unanswered shell call", items: []Item{shellCall("s1", "ls")}, pairing: 0, id: "s1", reasoning: -1},
		{name: "unanswered computer call", items: []Item{computerCall("u1"), user("stop")}, pairing: 0, id: "u1", reasoning: -1},
		{name: "reasoning at the end", items: []Item{user("q"), reasoning("rs_123", "", "E")}, pairing: -1, reasoning: 1, id: "rs_123"},
		{name: "reasoning before a user message", items: []Item{reasoning("rs_1", "", "E"), user("q")}, pairing: -1, reasoning: 0, id: "rs_1"},
		{name: "reasoning before an output", items: []Item{functionCall("c1", "f", "{}"), reasoning("rs_1", "", "E"), functionOutput("c1", "r")},
			pairing: -1, reasoning: 1, id: "rs_1"},
		{name: "reasoning before reasoning before nothing", items: []Item{reasoning("rs_1", "", ""), reasoning("rs_2", "", "")}, pairing: -1, reasoning: 0, id: "rs_1"},
		{name: "reasoning before a compaction", items: []Item{reasoning("rs_1", "", ""), compaction("cmp_1", "C")}, pairing: -1, reasoning: 0, id: "rs_1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.items)
			if tc.pairing >= 0 {
				adaptertest.Violation(t, err, ErrUnpaired, pairAt, tc.pairing, tc.id, tc.name)
				return
			}
			adaptertest.Violation(t, err, ErrUnboundReasoning, rsAt, tc.reasoning, tc.id, tc.name)
		})
	}
}

// contractConversation is a developer message and six turns of a task, a
// function call, its output and an answer.
func contractConversation() []Item {
	items := []Item{developer("be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		items = append(items, user("task "+strconv.Itoa(i)+strings.Repeat(" words", 20)), functionCall(id, "read", `{}`),
			functionOutput(id, strings.Repeat("output line\n", 40)), output("msg_"+strconv.Itoa(i), "done "+strconv.Itoa(i)))
	}
	return items
}

// TestContract runs the adapter through the contract every adapter keeps.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[Item]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[Item] {
			return NewConversations(s, opts...)
		},
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[Item] { return NewTrimmer(opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Task:       user,
		Compaction: func(s string) Item { return compaction("cmp_1", s) },
		Invalid:    []Item{user("hi"), {}},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows:    []error{errors.New(`{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`)},
		NotOverflows: []error{errors.New("Rate limit reached for o4-mini: please try again in 20s")},
	}
	c.Run(t)
}

// TestCoreRequirement: go.mod requires the core release these tests run
// against, so that adapter and core are released and upgraded together.
func TestCoreRequirement(t *testing.T) { adaptertest.CoreRequirement(t) }

// TestTrimUnchanged: a history that fits and needs no repair comes back
// as the caller's slice itself, clipped.
func TestTrimUnchanged(t *testing.T) {
	items := []Item{developer("d"), user("q"), reasoning("rs_1", "s", "E"), functionCall("c1", "f", "{}"), functionOutput("c1", "r"), output("msg_1", "a")}
	out, res, err := Trim(items, 10_000)
	if err != nil || !adaptertest.SameArray(out, items) || cap(out) != len(out) || res.Trimmed {
		t.Fatalf("Trim = %d items (same array %v, cap %d), %+v, %v", len(out), adaptertest.SameArray(out, items), cap(out), res, err)
	}
}

// TestTrimElidedForms: each output type with a text form becomes a copy
// holding the placeholder, keeping its call id, status and extra fields;
// outputs without one are kept whole.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	extra := functionOutput("c1", big)
	extra.OfFunctionCallOutput.SetExtraFields(map[string]any{"x_seq": 7})
	items := []Item{
		developer("sys"),
		user("task"),
		reasoning("rs_1", "", "ENC"),
		functionCall("c1", "read", "{}"), customCall("c2", "patch", ""), shellCall("c3", "ls"), localShellCall("lsh_4", "c4"),
		applyPatchCall("c5"), program("c6", "code"), functionCall("c7", "read", "{}"), computerCall("c8"), toolSearchCall("c9"),
		extra, customOutput("c2", big), shellOutput("c3", big, "warn"), localShellOutput("c4", big), applyPatchOutput("c5", big),
		programOutput("c6", big),
		overrideItem(`{"type":"function_call_output","call_id":"c7","output":` + quote(big) + `,"x_trace":"abc"}`),
		computerOutput("c8", pngURL(t, 2000, 2000)), toolSearchOutput("c9"),
		output("msg_1", "done"),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.ToolCallID + "]" }
	out, res, err := Trim(items, 1100, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 7 || len(out) != len(items) {
		t.Fatalf("elided %d of 7 outputs, %d items of %d", res.ElidedResults, len(out), len(items))
	}
	want := map[int]string{
		12: `{"call_id":"c1","output":"[elided c1]","type":"function_call_output","x_seq":7}`,
		13: `{"call_id":"c2","output":"[elided c2]","type":"custom_tool_call_output"}`,
		14: `{"call_id":"c3","output":[{"outcome":{"exit_code":1,"type":"exit"},"stderr":"","stdout":"[elided c3]"}],"type":"shell_call_output"}`,
		15: `{"id":"c4","output":"[elided c4]","type":"local_shell_call_output"}`,
		16: `{"call_id":"c5","status":"completed","output":"[elided c5]","type":"apply_patch_call_output"}`,
		17: `{"id":"po_c6","call_id":"c6","result":"[elided c6]","status":"completed","type":"program_output"}`,
		18: `{"call_id":"c7","output":"[elided c7]","type":"function_call_output","x_trace":"abc"}`,
	}
	for j := range out {
		got := jsonOf(t, out[j])
		if w, ok := want[j]; ok {
			if got != w {
				t.Errorf("item %d = %s\nwant %s", j, got, w)
			}
			continue
		}
		if got != jsonOf(t, items[j]) {
			t.Errorf("item %d changed: %s", j, got)
		}
	}
	back := mustHistory(t, out)
	if got := history.Estimate(back, nil); got != res.TokensAfter {
		t.Errorf("output counts %d, core counted %d", got, res.TokensAfter)
	}
	if !strings.Contains(jsonOf(t, items[12]), "0123456789") || !strings.Contains(jsonOf(t, items[18]), "0123456789") {
		t.Error("the caller's items were modified")
	}
}

// TestTrimReasoningGoesWithItsStep: step trimming drops the oldest steps
// of the latest turn, each with its reasoning (a reasoning item binds only
// to the item after it, so the step that opened the loop goes like any
// other); an interrupted call goes with the reasoning before it, and a
// cut-off reasoning item is dropped.
func TestTrimReasoningGoesWithItsStep(t *testing.T) {
	big := strings.Repeat("line of output\n", 80)
	items := []Item{
		developer("sys"),
		user("fix the bug"),
		reasoning("rs_1", "", "E1"), functionCall("c1", "read", `{"f":"a.go"}`), functionCall("c2", "read", `{"f":"b.go"}`),
		functionOutput("c1", "package a"), functionOutput("c2", "package b"),
		reasoning("rs_2", "", "E2"), functionCall("c3", "grep", "{}"), functionOutput("c3", big),
		reasoning("rs_2b", "", "E2b"), functionCall("c3b", "grep", "{}"), functionOutput("c3b", big),
		reasoning("rs_3", "", "E3"), functionCall("c4", "test", "{}"), reasoning("rs_4", "", "E4"), functionCall("c5", "lost", "{}"), functionOutput("c4", "ok"),
		reasoning("rs_5", "", "E5"), output("msg_5", "fixed"),
		reasoning("rs_6", "", "E6"),
	}
	out, res, err := Trim(items, 300, history.WithStepTrim())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range out {
		got = append(got, itemKey(t, u))
	}
	want := []string{"message:#0", "message:#1", "message:#step",
		"reasoning:rs_3", "function_call:fc_c4", "function_call_output:c4", "reasoning:rs_5", "message:msg_5"}
	for i, k := range got {
		if strings.HasPrefix(k, "{") {
			got[i] = "message:#?"
		}
	}
	want[0], want[1], want[2] = "message:#?", "message:#?", "message:#?"
	if !slices.Equal(got, want) {
		t.Fatalf("kept %v\nwant %v", got, want)
	}
	if res.DroppedSteps != 3 || res.OrphansRemoved != 3 { // c5, rs_4's stand-in, rs_6's stand-in
		t.Errorf("dropped %d steps, removed %d orphans; want 3 and 3", res.DroppedSteps, res.OrphansRemoved)
	}
	checkBinding(t, items, out)
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
}

// TestTrimCompaction: a compacted window (user messages, then the
// compaction item) followed by new turns: the compaction item is never
// dropped, and moves into the prefix when the turns holding it go.
func TestTrimCompaction(t *testing.T) {
	items := []Item{
		developer("sys"),
		user("first " + strings.Repeat("words ", 60)), user("second " + strings.Repeat("words ", 60)),
		compaction("cmp_1", strings.Repeat("C", 400)),
		user("third " + strings.Repeat("words ", 60)), reasoning("rs_1", "", "E"), output("msg_1", "ok"),
		user("fourth"), reasoning("rs_2", "", "F"), output("msg_2", "done"),
	}
	out, res, err := Trim(items, 250)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 3 || out[1].OfCompaction == nil || out[0].OfMessage == nil || out[0].OfMessage.Role != "developer" {
		t.Fatalf("the compaction item is not right after the developer message: %s", adaptertest.JSON(t, out))
	}
	if res.DroppedTurns != 2 || out[2].OfMessage == nil || out[2].OfMessage.Content.OfString.Value != history.BreadcrumbText {
		t.Errorf("dropped %d turns, want 2, and the notice after the compaction item: %s", res.DroppedTurns, adaptertest.JSON(t, out))
	}
	if last := out[len(out)-1]; last.OfOutputMessage == nil || last.OfOutputMessage.ID != "msg_2" {
		t.Errorf("the latest turn is not last: %s", adaptertest.JSON(t, out))
	}
	// Pinned once in the prefix: a tighter budget keeps it too.
	out2, _, err := Trim(out, 60)
	if !errors.Is(err, history.ErrLatestTurnTooLarge) && err != nil {
		t.Fatal(err)
	}
	if out2[1].OfCompaction == nil {
		t.Errorf("the pinned compaction item was dropped: %s", adaptertest.JSON(t, out2))
	}
}

// TestTrimCompactionTriggerStaysLast: the trigger must be the last item;
// it belongs to the latest turn, which is always kept, and stays last.
func TestTrimCompactionTriggerStaysLast(t *testing.T) {
	big := strings.Repeat("x ", 300)
	items := []Item{developer("sys"), user("old " + big), output("msg_1", big),
		user("new"), reasoning("rs_1", "", "E"), functionCall("c1", "f", "{}"), functionOutput("c1", big),
		reasoning("rs_2", "", "F"), functionCall("c2", "f", "{}"), functionOutput("c2", "small"), trigger()}
	for _, opts := range [][]history.Option{nil, {history.WithStepTrim()}, {history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()}} {
		out, _, err := Trim(items, 40, opts...)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatal(err)
		}
		if out[len(out)-1].OfCompactionTrigger == nil {
			t.Fatalf("the trigger is not last: %s", adaptertest.JSON(t, out))
		}
		checkBinding(t, items, out)
	}
}

// TestTrimItemReferences: an output whose call is only referenced stays
// with the references before it, and goes with them.
func TestTrimItemReferences(t *testing.T) {
	big := strings.Repeat("result line\n", 100)
	items := []Item{developer("sys"),
		user("one"), reference("rs_a"), reference("fc_a"), functionOutput("call_a", big), reference("msg_a"),
		user("two"), reasoning("rs_b", "", "E"), reference("fc_b"), functionOutput("call_b", "small"), output("msg_b", "ok"),
	}
	out, res, err := Trim(items, 10_000)
	if err != nil || res.OrphansRemoved != 0 || len(out) != len(items) {
		t.Fatalf("the referenced outputs were not kept: %d of %d items, %d orphans, %v", len(out), len(items), res.OrphansRemoved, err)
	}
	out, res, err = Trim(items, 80)
	if err != nil {
		t.Fatal(err)
	}
	if res.DroppedTurns != 1 || len(out) != 7 || out[3].OfReasoning == nil || out[4].OfItemReference == nil {
		t.Fatalf("want the first turn dropped whole: %s", adaptertest.JSON(t, out))
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
}

// TestAssistantNotice: notices in the assistant role are rendered as
// assistant messages and recognised by the next trim with the same
// options, so that they do not stack, even right before reasoning.
func TestAssistantNotice(t *testing.T) {
	opts := []history.Option{history.WithStepTrim(),
		history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[older turns trimmed]"}),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[older steps trimmed]"})}
	big := strings.Repeat("output\n", 120)
	items := []Item{developer("sys"), user("old task " + big), output("msg_0", "ok"), user("task")}
	for i := range 12 {
		id := "c" + strings.Repeat("x", i)
		items = append(items, reasoning("rs_"+id, "", "E"), functionCall(id, "run", "{}"), functionOutput(id, big))
		out, res, err := Trim(items, 600, opts...)
		if err != nil {
			t.Fatal(err)
		}
		notices := 0
		for j, u := range out {
			if u.OfMessage != nil && u.OfMessage.Role == "assistant" {
				notices++
				if j+1 < len(out) && out[j+1].OfReasoning == nil && out[j+1].OfMessage == nil {
					t.Fatalf("round %d: the notice is not followed by a step or a message", i)
				}
			}
		}
		if notices > 2 {
			t.Fatalf("round %d: %d notices stack: %s", i, notices, adaptertest.JSON(t, out))
		}
		c, err := convert(out, opts, currentTurn, nil)
		if err != nil || history.Estimate(c.hist, nil) != res.TokensAfter {
			t.Fatalf("round %d: output counts differently from the core (%v)", i, err)
		}
		checkBinding(t, items, out)
		items = out
	}
}

// TestTrimRepairMayJoinExchanges: removing a cut-off reasoning item and
// a stray output can join the exchanges around them; the repaired output
// counts no more than the core counted and is valid, and trimming it again
// repairs what the join exposed (here a call id used twice).
func TestTrimRepairMayJoinExchanges(t *testing.T) {
	items := []Item{developer("sys"), user("q"),
		reasoning("rs_1", "", "E"), functionCall("k1", "f", "{}"), functionOutput("k1", "one"),
		reasoning("rs_2", "", "F"), functionOutput("stray", "x"),
		functionCall("k1", "f", "{}"), functionOutput("k1", "two")}
	out, res, err := Trim(items, 10_000)
	if err != nil || res.OrphansRemoved != 2 || len(out) != 7 {
		t.Fatalf("Trim = %d items, %d orphans, %v", len(out), res.OrphansRemoved, err)
	}
	if got := history.Estimate(mustHistory(t, out), nil); got > res.TokensAfter || Validate(out) != nil {
		t.Fatalf("output counts %d of %d, Validate %v", got, res.TokensAfter, Validate(out))
	}
	again, res2, err := Trim(out, 10_000)
	if err != nil || res2.OrphansRemoved != 2 || len(again) != 5 || Validate(again) != nil {
		t.Fatalf("second trim = %d items, %d orphans, %v, Validate %v", len(again), res2.OrphansRemoved, err, Validate(again))
	}
}

// TestReasoningOfEarlierTurns: a reasoning item of an earlier turn (before
// the latest user message) counts nothing, as the API reads it ("In turn
// 2, reasoning items from turn 1 are ignored and stripped", the cookbook;
// reasoning.context current_turn), and is still sent with the item it
// binds; with reasoning.context all_turns, TrimRequest counts it.
func TestReasoningOfEarlierTurns(t *testing.T) {
	blob := "gAAAAB" + strings.Repeat("q8Zr", 200)
	items := []Item{user("first task"), reasoning("rs_1", "", blob), functionCall("c1", "read", `{}`), functionOutput("c1", "one"),
		reasoning("rs_2", "", blob), output("msg_1", "done"),
		user("second task"), reasoning("rs_3", "", blob), functionCall("c2", "read", `{}`), functionOutput("c2", "two")}
	cost := history.EstimateText(blob)
	all := []history.Option{history.WithFullCount()}
	_, cur, err := Trim(items, 1_000_000, all...)
	if err != nil {
		t.Fatal(err)
	}
	params := responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}
	for _, tc := range []struct {
		name    string
		context shared.ReasoningContext
		extra   int
		reason  string
	}{
		{"default", "", 0, "the API's documented default: earlier turns' reasoning is stripped"},
		{"auto", shared.ReasoningContextAuto, 0, "auto is the default"},
		{"current_turn", shared.ReasoningContextCurrentTurn, 0, "stated"},
		{"all_turns", shared.ReasoningContextAllTurns, 2 * cost, "the API reads rs_1 and rs_2 too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params
			p.Reasoning.Context = tc.context
			out, res, err := TrimRequest(p, 1_000_000, all...)
			if err != nil || len(out.Input.OfInputItemList) != len(items) {
				t.Fatalf("%v, %d items; want them all", err, len(out.Input.OfInputItemList))
			}
			if res.TokensAfter != cur.TokensAfter+tc.extra {
				t.Fatalf("%d tokens, want %d + %d (%s)", res.TokensAfter, cur.TokensAfter, tc.extra, tc.reason)
			}
		})
	}
	// What Trim counts is the request less rs_1 and rs_2: the current
	// turn's rs_3 counts whole.
	hist, err := ToHistory(items[6:])
	if err != nil {
		t.Fatal(err)
	}
	if rest := history.Estimate(hist, nil); rest <= cost || cur.TokensAfter-rest >= cost {
		t.Fatalf("the latest turn counts %d tokens, the request %d; want rs_3's %d in the turn and the earlier turn's reasoning free", rest, cur.TokensAfter, cost)
	}
}
