package anthropic

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go"
)

// ErrThinking is wrapped by *ThinkingError: the request breaks a rule of
// extended thinking that the Messages API enforces with an HTTP 400.
var ErrThinking = errors.New("history/anthropic: extended thinking rule broken")

// ThinkingError reports where a request breaks a rule of extended thinking
// (see [ValidateRequest]). It wraps ErrThinking.
type ThinkingError struct {
	// Index is the position of the offending message in the request's
	// messages.
	Index int
	// Block is the position of the offending content block in that
	// message.
	Block int
	// Reason says which rule is broken.
	Reason string
}

func (e *ThinkingError) Error() string {
	return "history/anthropic: message " + strconv.Itoa(e.Index) + ", block " + strconv.Itoa(e.Block) + ": " + e.Reason
}

// Unwrap returns ErrThinking.
func (e *ThinkingError) Unwrap() error { return ErrThinking }

// Block types of extended thinking.
const (
	typeThinking         = "thinking"
	typeRedactedThinking = "redacted_thinking"
	typeToolResult       = "tool_result"
)

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
// *ThinkingError. It never modifies params.
func ValidateRequest(params anthropic.MessageNewParams) error {
	return validateRequest(params, userTurn)
}

// validateRequest is ValidateRequest with opens saying which user messages
// open a user turn, and so end the assistant turn before them.
func validateRequest(params anthropic.MessageNewParams, opens func(types []string) bool) error {
	msgs := params.Messages
	if err := Validate(msgs); err != nil {
		return err
	}
	th := &params.Thinking
	enabled, adaptive, disabled := th.OfEnabled != nil, th.OfAdaptive != nil, th.OfDisabled != nil
	if !enabled && !adaptive && !disabled {
		return nil
	}
	types := make([][]string, len(msgs))
	for i := range msgs {
		_, blocks, err := readMessage(&msgs[i])
		if err != nil {
			return invalid(i, err.Error()) // Validate read it: does not happen
		}
		types[i] = make([]string, len(blocks))
		for j := range blocks {
			types[i][j] = blockType(&blocks[j])
		}
	}
	if disabled {
		if n := len(msgs) - 1; n >= 0 && msgs[n].Role == anthropic.MessageParamRoleAssistant {
			for j, t := range types[n] {
				if t == typeThinking {
					return &ThinkingError{Index: n, Block: j, Reason: "thinking is disabled, and the assistant message in the final position holds a thinking block"}
				}
			}
		}
		return nil
	}
	for i := range msgs {
		if msgs[i].Role != anthropic.MessageParamRoleAssistant {
			continue
		}
		t := types[i]
		if enabled {
			for j := range t {
				if isThinking(t[j]) && !isThinking(t[0]) {
					return &ThinkingError{Index: i, Block: 0, Reason: "the assistant message holds a thinking block, so its first block must be thinking or redacted_thinking; found " + strconv.Quote(t[0])}
				}
			}
		}
		if n := len(t); n > 0 && t[n-1] == typeThinking {
			return &ThinkingError{Index: i, Block: n - 1, Reason: "the final block of an assistant message cannot be thinking"}
		}
	}
	if enabled {
		if i := finalTurnStart(msgs, types, opens); i >= 0 && (len(types[i]) == 0 || !isThinking(types[i][0])) {
			found := "no block"
			if len(types[i]) > 0 {
				found = strconv.Quote(types[i][0])
			}
			return &ThinkingError{Index: i, Block: 0, Reason: "with thinking enabled, the first assistant message of the final assistant turn must start with a thinking or redacted_thinking block; found " + found}
		}
	}
	return nil
}

// finalTurnStart returns the index of the first assistant message of the
// final assistant turn of msgs (types holding each message's block types):
// the first assistant message after the last user message that opens a
// turn (opens says which do), or after the start when there is none; -1
// when no assistant message follows it.
func finalTurnStart(msgs []anthropic.MessageParam, types [][]string, opens func(types []string) bool) int {
	from := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == anthropic.MessageParamRoleUser && opens(types[i]) {
			from = i + 1
			break
		}
	}
	for i := from; i < len(msgs); i++ {
		if msgs[i].Role == anthropic.MessageParamRoleAssistant {
			return i
		}
	}
	return -1
}

// userTurn reports whether a user message of these block types opens a
// user turn, as ValidateRequest reads the API: it holds a block other than
// tool_result (or none).
func userTurn(types []string) bool {
	for _, t := range types {
		if t != typeToolResult {
			return true
		}
	}
	return len(types) == 0
}

func isThinking(t string) bool { return t == typeThinking || t == typeRedactedThinking }

// blockType returns the "type" of a content block: the typed variant's, or
// the one its raw JSON states.
func blockType(b *block) string {
	if b.typed != nil {
		if t := b.typed.GetType(); t != nil {
			return *t
		}
		return ""
	}
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b.raw, &v)
	return v.Type
}
