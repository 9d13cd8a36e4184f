package anthropic

import (
	"errors"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history/internal/anthropicmsg"
)

// ErrThinking is wrapped by *ThinkingError: the request breaks a rule of
// extended thinking that the Messages API enforces with an HTTP 400.
var ErrThinking = errors.New("history/anthropic: extended thinking rule broken")

// ThinkingError reports where a request breaks a rule of extended thinking
// (see [ValidateRequest]): Index is the position of the offending message
// in the request's messages, Block the offending content block in it,
// Reason which rule is broken. It wraps ErrThinking.
type ThinkingError = anthropicmsg.ThinkingError

// ValidateRequest checks params.Messages as the Messages API does for a
// request with params' thinking configuration: the pairing rules of
// [Validate] always, and the rules of extended thinking that the API
// enforces with an HTTP 400:
//
//   - with thinking enabled (params.Thinking.OfEnabled), the first
//     assistant message of the final assistant turn must start with a
//     thinking or redacted_thinking block ("Expected `thinking` or
//     `redacted_thinking`, but found `tool_use`. When `thinking` is
//     enabled, a final `assistant` message must start with a thinking
//     block"). The final assistant turn begins after the last user message
//     that holds a block other than tool_result: text next to tool results
//     is a user turn, and the tool loop after it is a new assistant turn.
//     A request ending with such a user message has no final assistant
//     turn yet, so nothing is required of it;
//   - with thinking enabled, an assistant message that holds a thinking or
//     redacted_thinking block must start with one ("If an assistant message
//     contains any thinking blocks, the first block must be thinking or
//     redacted_thinking");
//   - with thinking enabled or adaptive (params.Thinking.OfAdaptive), no
//     assistant message may end with a thinking block ("The final block in
//     an assistant message cannot be `thinking`");
//   - with thinking disabled (params.Thinking.OfDisabled), an assistant
//     message in the final position must not hold a thinking block ("When
//     thinking is disabled, an `assistant` message in the final position
//     cannot contain `thinking`").
//
// Adaptive thinking lets the model skip thinking, even at the start of a
// response, so only the final-block rule applies to it. A request with no
// thinking configuration is checked for pairing only: its thinking mode
// depends on the model. The API also requires every thinking block of the
// latest assistant turn to come back exactly as it returned it (its
// signature verifies that); ValidateRequest cannot check a signature, and
// [Trim] and [RecoverOverflow] return the caller's own blocks.
//
// ValidateRequest returns nil when the request passes; otherwise the first
// violation: a *PairingError or *MessageError from Validate, or a
// *ThinkingError. It also counts the request's cache breakpoints
// (automatic caching's top-level cache_control, the tools', the system
// prompt's and the messages'): more than 4 is a *MessageError at the
// message holding the fifth (-1 when it is not in a message). It never
// modifies params.
func ValidateRequest(params anthropic.MessageNewParams) error {
	return validateRequest(params, anthropicmsg.UserTurn)
}

// validateRequest is ValidateRequest with opens saying which user messages
// open a user turn, and so end the assistant turn before them.
func validateRequest(params anthropic.MessageNewParams, opens func(types []string) bool) error {
	th := anthropicmsg.ThinkingUnset
	switch t := &params.Thinking; {
	case t.OfEnabled != nil:
		th = anthropicmsg.ThinkingEnabled
	case t.OfAdaptive != nil:
		th = anthropicmsg.ThinkingAdaptive
	case t.OfDisabled != nil:
		th = anthropicmsg.ThinkingDisabled
	}
	if err := sdk.ValidateRequest(params.Messages, th, opens, ErrUnpaired, ErrCompaction, ErrThinking); err != nil {
		return err
	}
	return sdk.Breakpoints(params)
}
