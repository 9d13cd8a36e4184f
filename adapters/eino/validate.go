package eino

import (
	"fmt"
	"strconv"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history/internal/pairing"
)

// PairingError reports the first place where messages break the pairing
// rule Validate checks. It wraps ErrUnpaired.
type PairingError struct {
	// Index is the position in the messages of the offending message.
	Index int
	// Reason says which part of the rule it breaks.
	Reason string
}

func (e *PairingError) Error() string {
	return "history/eino: message " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns ErrUnpaired.
func (e *PairingError) Unwrap() error { return ErrUnpaired }

// Validate checks msgs against the tool-calling rule of the OpenAI-style
// chat APIs that Eino's chat models send to (OpenAI, Ark, DeepSeek, Qwen,
// Ollama and the other OpenAI-compatible endpoints answer a request that
// breaks it with HTTP 400):
//
//   - Only assistant messages carry ToolCalls; every call has a non-empty
//     ID, unique within its message.
//   - The tool messages that immediately follow an assistant message with
//     calls (before any other message) answer its calls one for one: each
//     ToolCallID names a call of that assistant message that no earlier
//     tool message answered, and every call is answered.
//   - A tool message anywhere else (after a user or system message, or
//     after an assistant message without calls) is an orphan.
//
// Validate returns nil or the first violation: a *PairingError wrapping
// ErrUnpaired (a nil message is reported as one too). It
// never modifies msgs.
func Validate(msgs []*schema.Message) error {
	var c pairing.Checker
	for i, m := range msgs {
		if m == nil {
			return &PairingError{i, "nil message"}
		}
		var v *pairing.Violation
		switch {
		case m.Role == schema.Tool:
			v = c.Answer(i, m.ToolCallID)
		case len(m.ToolCalls) > 0 && m.Role != schema.Assistant:
			if v = c.Close(); v == nil {
				return &PairingError{i, "tool calls on a " + string(m.Role) + " message"}
			}
		default:
			ids := make([]string, len(m.ToolCalls))
			for k := range m.ToolCalls {
				ids[k] = m.ToolCalls[k].ID
			}
			v = c.Open(i, ids)
		}
		if v != nil {
			return pairingError(v)
		}
	}
	if v := c.Close(); v != nil {
		return pairingError(v)
	}
	return nil
}

// reasons says, for each fault, which part of the rule is broken; %q
// stands for the tool call ID.
var reasons = [...]string{
	pairing.Unanswered: "tool call %q has no result before the next non-tool message",
	pairing.Orphan:     "tool result %q does not follow an assistant message with tool calls",
	pairing.Unknown:    "tool result %q answers no call of the preceding assistant message",
	pairing.Twice:      "tool call %q answered twice",
	pairing.BadID:      "tool call id %q is empty or used twice",
}

func pairingError(v *pairing.Violation) error {
	return &PairingError{v.Index, fmt.Sprintf(reasons[v.Fault], v.ID)}
}
