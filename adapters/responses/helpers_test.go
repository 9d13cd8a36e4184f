package responses

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

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
