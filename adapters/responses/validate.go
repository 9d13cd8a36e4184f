package responses

import (
	"errors"
	"strconv"

	"github.com/histrim/history/internal/adapt"
)

// ErrUnpaired is wrapped by *PairingError: the items hold a tool call that
// no output answers, or an output that answers no call, which the
// Responses API rejects with an HTTP 400 ("No tool output found for
// function call ...", "No tool call found for function call output with
// call_id ...").
var ErrUnpaired = errors.New("history/responses: unpaired tool call or tool output")

// ErrUnboundReasoning is wrapped by *ReasoningError: the items hold a
// reasoning item without an item it can precede right after it, which the
// Responses API rejects with an HTTP 400 ("Item 'rs_...' of type
// 'reasoning' was provided without its required following item.").
var ErrUnboundReasoning = errors.New("history/responses: reasoning item without its following item")

// PairingError reports where items break the pairing rule: Index is the
// position of the offending item (the call that no output answers, or the
// output that answers no call), ID the call id concerned, Reason which half
// of the rule is broken. It wraps ErrUnpaired.
type PairingError = adapt.PairingError

// ReasoningError reports a reasoning item that no item it can precede
// follows. It wraps ErrUnboundReasoning.
type ReasoningError struct {
	// Index is the position of the reasoning item.
	Index int
	// ID is its id.
	ID string
}

func (e *ReasoningError) Error() string {
	return "history/responses: item " + strconv.Itoa(e.Index) + ": reasoning item " + strconv.Quote(e.ID) +
		" is not followed by an item it can precede (model output, a tool call or an item_reference)"
}

// Unwrap returns ErrUnboundReasoning.
func (e *ReasoningError) Unwrap() error { return ErrUnboundReasoning }

// Validate checks items against the rules of the Responses API that a trim
// could break, and returns the first violation in item order, or nil:
//
//   - every tool call (function_call, custom_tool_call, computer_call,
//     local_shell_call, shell_call, apply_patch_call, program, and
//     tool_search_call with a call_id) is answered by an output item with
//     its call id somewhere after it; a *PairingError otherwise;
//   - every output item answers, by its call id, a call somewhere before
//     it, or follows an item_reference, which may stand for its call; a
//     *PairingError otherwise. The API pairs by call id, not by position,
//     so an output need not follow its call directly;
//   - every reasoning item is followed directly by an item it can precede:
//     model output (a message of the assistant, a tool call, a hosted tool
//     call), an item_reference, or a reasoning item that is itself so
//     followed; a *ReasoningError otherwise.
//
// A local_shell_call_output answers by its id the call_id (or, failing
// that, the id) of a local_shell_call. An item that cannot be read gives a
// *MessageError.
//
// Two rules are not checked, because the items alone cannot tell without
// false positives. The API also rejects an output message or call
// ("Item 'msg_...' of type 'message' was provided without its required
// 'reasoning' item: 'rs_...'.") whose reasoning item is missing,
// but only when the model produced one before it: an msg_ item after no
// reasoning is valid from a model that does not reason, and only the API
// (which stored the response) or the original history knows which it was.
// Trim never creates that state: it keeps a reasoning item and the item
// after it together. And mcp_approval_request and mcp_approval_response
// items are not paired here, since the API's rule for them is not
// documented; Trim pairs them like calls and outputs, which is stricter.
// Validate never modifies items.
func Validate(items []Item) error {
	return adapt.Validate(providerRules, items)
}

// providerRules is the provider's rules table that Validate walks
// (docs/providers.md).
var providerRules = []adapt.Rule[Item]{{
	Rule:   "every tool call has an output after it, and every output answers a call before it (by call id)",
	Answer: "No tool output found for function call call_... / No tool call found for function call output with call_id call_...",
	Source: "tjardoo/openai-client#124, continuedev/continue#10092",
	Check:  checkPairing,
}, {
	Rule:   "a reasoning item is followed by the item it was produced for",
	Answer: "Item 'rs_...' of type 'reasoning' was provided without its required following item.",
	Source: "continuedev/continue#8933, vercel/ai#7099, openai/openai-agents-python#1611",
	Check:  checkReasoning,
}}

// readAll reads every item: their views, or the index and *MessageError
// of the first that cannot be read.
func readAll(items []Item) ([]view, int, error) {
	views := make([]view, len(items))
	for i := range items {
		v, err := read(&items[i])
		if err != nil {
			return nil, i, invalid(i, err)
		}
		views[i] = v
	}
	return views, -1, nil
}

// checkReasoning is the Check of the reasoning rule.
func checkReasoning(items []Item) (int, error) {
	views, at, err := readAll(items)
	if err != nil {
		return at, err
	}
	for i := range views {
		if views[i].cls == clsReasoning && !precedes(views, i) {
			return i, &ReasoningError{Index: i, ID: views[i].id}
		}
	}
	return -1, nil
}

// checkPairing is the Check of the pairing rule.
func checkPairing(items []Item) (int, error) {
	views, at, err := readAll(items)
	if err != nil {
		return at, err
	}
	firstCall, lastOutput, shellIDs := callIndex(views)
	ref := false // an item_reference or opaque item came before
	for i := range views {
		v := &views[i]
		switch {
		case v.cls == clsOpaque:
			ref = true
		case approval(v):
		case v.cls == clsCall:
			answered := lastOutput[v.callID] > i
			if !answered && v.typ == "local_shell_call" && v.id != "" {
				answered = lastOutput[v.id] > i
			}
			if !answered {
				return i, adapt.Unpaired("responses", "item", ErrUnpaired, i, v.callID, "tool call has no output after it")
			}
		case v.cls == clsResult:
			at, ok := firstCall[v.callID]
			if !ok && v.typ == "local_shell_call_output" {
				at, ok = firstCall[shellIDs[v.callID]]
			}
			if (!ok || at > i) && !ref {
				return i, adapt.Unpaired("responses", "item", ErrUnpaired, i, v.callID, "output answers no call before it")
			}
		}
	}
	return -1, nil
}

// callIndex returns the first call with each call id, the last output
// answering each id, and the call id of each local_shell_call by its item
// id (MCP approvals left out).
func callIndex(views []view) (firstCall, lastOutput map[string]int, shellIDs map[string]string) {
	firstCall, lastOutput, shellIDs = map[string]int{}, map[string]int{}, map[string]string{}
	for i := range views {
		v := &views[i]
		if approval(v) {
			continue
		}
		switch v.cls {
		case clsCall:
			if _, ok := firstCall[v.callID]; !ok {
				firstCall[v.callID] = i
			}
		case clsResult:
			lastOutput[v.callID] = i
		}
	}
	for i := range views {
		if v := &views[i]; v.cls == clsCall && v.typ == "local_shell_call" && v.id != "" {
			if _, ok := shellIDs[v.id]; !ok {
				shellIDs[v.id] = v.callID
			}
		}
	}
	return firstCall, lastOutput, shellIDs
}

// precedes reports whether the reasoning item at i is followed by an item
// it can precede.
func precedes(views []view, i int) bool {
	for j := i + 1; j < len(views); j++ {
		switch views[j].cls {
		case clsReasoning:
			continue
		case clsOutput, clsCall, clsOpaque:
			return true
		}
		return false
	}
	return false
}

// approval reports whether v is an MCP approval request or response, which
// Validate does not pair.
func approval(v *view) bool {
	return v.typ == "mcp_approval_request" || v.typ == "mcp_approval_response"
}
