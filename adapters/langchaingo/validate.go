package langchaingo

import (
	"github.com/histrim/history/internal/adapt"
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
	return adapt.Validate(providerRules, msgs)
}

// providerRules is the provider's rules table that Validate walks
// (docs/providers.md).
var providerRules = []adapt.Rule[llms.MessageContent]{
	adapt.PairingRule("langchaingo", "message", ErrUnpaired, read),
}

// read says what msgs[i] calls or answers (see pairing.Read).
func read(msgs []llms.MessageContent, i int) (bool, []string, error) {
	mc := &msgs[i]
	results := mc.Role == llms.ChatMessageTypeTool
	var ids []string
	for _, part := range mc.Parts {
		switch x := unwrap(part).(type) {
		case llms.ToolCall:
			if mc.Role != llms.ChatMessageTypeAI {
				return results, nil, unpaired(i, x.ID, "tool call in a "+string(mc.Role)+" message")
			}
			ids = append(ids, x.ID)
		case llms.ToolCallResponse:
			if !results {
				return false, nil, unpaired(i, x.ToolCallID, "tool response in a "+string(mc.Role)+" message")
			}
			ids = append(ids, x.ToolCallID)
		}
	}
	return results, ids, nil
}

func unpaired(i int, id, reason string) error {
	return adapt.Unpaired("langchaingo", "message", ErrUnpaired, i, id, reason)
}
