package langchaingo

import (
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/pairing"
	"github.com/tmc/langchaingo/llms"
)

// PairingError reports the first place where messages break the pairing
// rule Validate checks: Index is the position of the offending message, ID
// the tool call ID concerned, Reason which part of the rule it breaks. It
// wraps ErrUnpaired.
type PairingError = adapt.PairingError

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
					return unpaired(i, x.ID, "tool call in a tool message")
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
				return unpaired(i, x.ToolCallID, "tool response in a "+string(mc.Role)+" message")
			case llms.ToolCall:
				if mc.Role != llms.ChatMessageTypeAI {
					return unpaired(i, x.ID, "tool call in a "+string(mc.Role)+" message")
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

// reasons says, for each fault, which part of the rule is broken.
var reasons = [...]string{
	pairing.Unanswered: "tool call has no response before the next non-tool message",
	pairing.Orphan:     "tool response does not follow an AI message with tool calls",
	pairing.Unknown:    "tool response answers no call of the preceding AI message",
	pairing.Twice:      "tool call answered twice",
	pairing.BadID:      "tool call id is empty or used twice",
}

func pairingError(v *pairing.Violation) error { return unpaired(v.Index, v.ID, reasons[v.Fault]) }

func unpaired(i int, id, reason string) error {
	return adapt.Unpaired("langchaingo", "message", ErrUnpaired, i, id, reason)
}
