package langchaingo

import (
	"fmt"
	"strconv"

	"github.com/histrim/history/internal/pairing"
	"github.com/tmc/langchaingo/llms"
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
	return "history/langchaingo: message " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns ErrUnpaired.
func (e *PairingError) Unwrap() error { return ErrUnpaired }

// Validate checks msgs against the tool-calling rule that the providers
// LangChainGo sends to enforce (OpenAI-style APIs answer a request that
// breaks it with HTTP 400, and Anthropic's requires every tool_use to be
// answered in the very next message, which LangChainGo builds from the tool
// messages that follow):
//
//   - llms.ToolCall parts appear only in AI messages and
//     llms.ToolCallResponse parts only in tool messages; every call has a
//     non-empty ID, unique within its message.
//   - The tool messages that immediately follow an AI message with calls
//     (before any other message) answer its calls one for one: each
//     response's ToolCallID names a call of that AI message that no earlier
//     response answered, and every call is answered.
//   - A tool message anywhere else is an orphan.
//
// Parts wrapped in llms.CachedContent count as the part they wrap.
// LangChainGo's OpenAI provider additionally wants exactly one response per
// tool message; trimming never merges messages, so a history that has one
// per message keeps it. Validate returns nil or the first violation, a
// *PairingError wrapping ErrUnpaired. It never modifies msgs.
func Validate(msgs []llms.MessageContent) error {
	var c pairing.Checker
	for i, mc := range msgs {
		if mc.Role == llms.ChatMessageTypeTool {
			for _, part := range mc.Parts {
				switch x := unwrap(part).(type) {
				case llms.ToolCall:
					return &PairingError{i, "tool call in a tool message"}
				case llms.ToolCallResponse:
					if v := c.Answer(i, x.ToolCallID); v != nil {
						return pairingError(v)
					}
				}
			}
			continue
		}
		if v := c.Close(); v != nil {
			return pairingError(v)
		}
		var ids []string
		for _, part := range mc.Parts {
			switch x := unwrap(part).(type) {
			case llms.ToolCallResponse:
				return &PairingError{i, "tool response in a " + string(mc.Role) + " message"}
			case llms.ToolCall:
				if mc.Role != llms.ChatMessageTypeAI {
					return &PairingError{i, "tool call in a " + string(mc.Role) + " message"}
				}
				ids = append(ids, x.ID)
			}
		}
		if v := c.Open(i, ids); v != nil {
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
	pairing.Unanswered: "tool call %q has no response before the next non-tool message",
	pairing.Orphan:     "tool response %q does not follow an AI message with tool calls",
	pairing.Unknown:    "tool response %q answers no call of the preceding AI message",
	pairing.Twice:      "tool call %q answered twice",
	pairing.BadID:      "tool call id %q is empty or used twice",
}

func pairingError(v *pairing.Violation) error {
	return &PairingError{v.Index, fmt.Sprintf(reasons[v.Fault], v.ID)}
}
