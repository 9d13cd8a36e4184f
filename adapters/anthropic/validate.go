package anthropic

import (
	"errors"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history/internal/adapt"
)

// ErrUnpaired is wrapped by *PairingError: the messages break the Messages
// API tool-pairing rule and the API would reject them with an HTTP 400.
var ErrUnpaired = errors.New("history/anthropic: unpaired tool_use or tool_result")

// PairingError reports where msgs break the pairing rule: Index is the
// position of the offending message in msgs (the assistant message whose
// tool_use is not answered, or the user message holding the tool_result
// that answers nothing or stands after other blocks), ID the tool_use ID
// concerned, Reason which part of the rule is broken. It wraps ErrUnpaired.
type PairingError = adapt.PairingError

// Validate checks msgs against the tool-pairing rules of the Messages API:
//
//   - every tool_use block of an assistant message must be answered by a
//     tool_result block in the very next message, which must be a user
//     message ("tool_use ids were found without tool_result blocks
//     immediately after");
//   - every tool_result block must answer a tool_use block of the
//     immediately preceding message, which must be an assistant message,
//     and each tool_use only once ("unexpected tool_use_id found in
//     tool_result blocks");
//   - in a user message, tool_result blocks come before any other block
//     (text after the results is fine, text before them is rejected).
//
// Consecutive messages of the same role are accepted (the API joins them
// into one turn, which is how a breadcrumb may precede a user message), but
// the pairing rules are checked per message as the API states them: results
// split over two user messages are reported.
// Validate returns nil when msgs pass, the first violation as a
// *PairingError otherwise, or a *MessageError when a message cannot be read.
// It never modifies msgs.
func Validate(msgs []anthropic.MessageParam) error {
	var prevCalls []string // tool_use IDs of the previous message, if an assistant
	for i := range msgs {
		role, blocks, err := readMessage(&msgs[i])
		if err != nil {
			return invalid(i, err.Error())
		}
		var calls, results []string
		other := false // a non-tool_result block was seen in this message
		for j := range blocks {
			b := blocks[j].typed
			switch {
			case b != nil && b.OfToolUse != nil:
				calls = append(calls, b.OfToolUse.ID)
			case b != nil && b.OfToolResult != nil:
				id := b.OfToolResult.ToolUseID
				if role != anthropic.MessageParamRoleUser || !contains(prevCalls, id) {
					return unpaired(i, id, "tool_result answers no tool_use of the immediately preceding assistant message")
				}
				if contains(results, id) {
					return unpaired(i, id, "tool_use answered twice")
				}
				if other {
					return unpaired(i, id, "tool_result block after another block; tool_result blocks must come first")
				}
				results = append(results, id)
			default:
				other = true
			}
		}
		for _, id := range prevCalls {
			if !contains(results, id) {
				return unpaired(i-1, id, "tool_use has no tool_result in the next message")
			}
		}
		prevCalls = nil
		if role == anthropic.MessageParamRoleAssistant {
			prevCalls = calls
		}
	}
	if len(prevCalls) > 0 {
		return unpaired(len(msgs)-1, prevCalls[0], "tool_use has no tool_result in the next message")
	}
	return nil
}

func contains(ids []string, id string) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
}

func unpaired(i int, id, reason string) error {
	return adapt.Unpaired("anthropic", "message", ErrUnpaired, i, id, reason)
}
