package openai

import (
	"errors"

	"github.com/histrim/history/internal/adapt"
	"github.com/openai/openai-go/v3"
)

// ErrUnpaired is wrapped by *PairingError: the messages break the Chat
// Completions tool-pairing rule and the API would reject them with an
// HTTP 400.
var ErrUnpaired = errors.New("history/openai: unpaired tool call or tool message")

// PairingError reports where msgs break the pairing rule: Index is the
// position of the offending message (the tool message that answers
// nothing, or the assistant message whose call is never answered), ID the
// tool call ID concerned, Reason which half of the rule is broken. It
// wraps ErrUnpaired.
type PairingError = adapt.PairingError

// Validate checks msgs against the tool-pairing rule of the Chat Completions
// API:
//
//   - every tool call of an assistant message must be answered by a tool
//     message with its tool_call_id, after that assistant message and before
//     the next message that is not a tool message ("An assistant message
//     with 'tool_calls' must be followed by tool messages responding to each
//     'tool_call_id'");
//   - every tool message must answer a call of the assistant message that
//     precedes its run of tool messages, and each call only once ("messages
//     with role 'tool' must be a response to a preceding message with
//     'tool_calls'").
//
// The deprecated function_call is held to the same rule, answered by a
// function-role message. Validate returns nil when msgs pass, the first
// violation as a *PairingError otherwise, or a *MessageError when a message
// cannot be read. It never modifies msgs.
func Validate(msgs []openai.ChatCompletionMessageParamUnion) error {
	return adapt.Validate(providerRules, msgs)
}

// providerRules is the provider's rules table that Validate walks
// (docs/providers.md).
var providerRules = []adapt.Rule[openai.ChatCompletionMessageParamUnion]{
	each.Pairing(ErrUnpaired),
}
