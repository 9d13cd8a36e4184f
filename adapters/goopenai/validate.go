package goopenai

import (
	"errors"

	"github.com/histrim/history/internal/adapt"
	openai "github.com/sashabaranov/go-openai"
)

// ErrUnpaired is wrapped by *PairingError: the messages break the chat
// completions tool-pairing rule, which the API enforces with an HTTP 400.
var ErrUnpaired = errors.New("history/goopenai: unpaired tool call or tool message")

// PairingError reports where messages break the pairing rule: Index is the
// position of the offending message (the tool message that answers
// nothing, or the assistant message whose call is never answered), ID the
// tool call id concerned, Reason which half of the rule is broken. It
// wraps ErrUnpaired.
type PairingError = adapt.PairingError

// Validate checks msgs against the chat completions tool-pairing rule:
// every tool call of an assistant message is answered by a tool message
// with its id after it and before the next message that is not a tool
// message ("An assistant message with 'tool_calls' must be followed by
// tool messages responding to each 'tool_call_id'"), and every tool
// message answers a call of the assistant message before its run of tool
// messages, once ("messages with role 'tool' must be a response to a
// preceeding message with 'tool_calls'"). The deprecated function_call is
// held to the same rule, answered by a function-role message. It returns
// nil, the first violation as a *PairingError, or a *MessageError for a
// message it cannot read; it never modifies msgs.
func Validate(msgs []openai.ChatCompletionMessage) error {
	return adapt.Validate(providerRules, msgs)
}

// providerRules is the provider's rules table that Validate walks
// (docs/providers.md).
var providerRules = []adapt.Rule[openai.ChatCompletionMessage]{
	each.Pairing(ErrUnpaired),
}
