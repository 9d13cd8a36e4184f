package eino

import (
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history/internal/adapt"
)

// PairingError reports the first place where messages break the pairing
// rule Validate checks: Index is the position of the offending message, ID
// the tool call ID concerned, Reason which part of the rule it breaks. It
// wraps ErrUnpaired.
type PairingError = adapt.PairingError

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
	return adapt.Validate(providerRules, msgs)
}

// providerRules is the provider's rules table that Validate walks
// (docs/providers.md).
var providerRules = []adapt.Rule[*schema.Message]{
	adapt.PairingRule("eino", "message", ErrUnpaired, read),
}

// read says what msgs[i] calls or answers (see pairing.Read).
func read(msgs []*schema.Message, i int) (bool, []string, error) {
	m := msgs[i]
	switch {
	case m == nil:
		return true, nil, unpaired(i, "", "nil message")
	case m.Role == schema.Tool:
		return true, []string{m.ToolCallID}, nil
	case len(m.ToolCalls) > 0 && m.Role != schema.Assistant:
		return false, nil, unpaired(i, m.ToolCalls[0].ID, "tool calls on a "+string(m.Role)+" message")
	}
	ids := make([]string, len(m.ToolCalls))
	for k := range m.ToolCalls {
		ids[k] = m.ToolCalls[k].ID
	}
	return false, ids, nil
}

func unpaired(i int, id, reason string) error {
	return adapt.Unpaired("eino", "message", ErrUnpaired, i, id, reason)
}
