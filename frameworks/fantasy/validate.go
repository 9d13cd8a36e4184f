package fantasy

import (
	"errors"
	"slices"
	"strconv"

	"charm.land/fantasy"
	"github.com/histrim/history"
)

// ErrUnpaired is wrapped by *PairingError: the messages break the tool
// pairing rule every provider enforces with an HTTP 400.
var ErrUnpaired = errors.New("history/fantasy: unpaired tool call or tool result")

// PairingError reports where messages break the pairing rule. It wraps
// ErrUnpaired.
type PairingError struct {
	// Index is the position of the offending message: a tool message
	// holding a result that answers no open call, or the first message
	// after calls left unanswered (len(msgs) when they end the messages).
	Index int
	// ID is the tool call id concerned.
	ID string
	// Reason says which half of the rule is broken.
	Reason string
}

func (e *PairingError) Error() string {
	return "history/fantasy: message " + strconv.Itoa(e.Index) + ": " + e.Reason + " (tool call id " + strconv.Quote(e.ID) + ")"
}

// Unwrap returns ErrUnpaired.
func (e *PairingError) Unwrap() error { return ErrUnpaired }

// Validate checks msgs against the pairing rule fantasy's providers send
// to: every tool call of an assistant message (but a provider-executed
// one) is answered by a result in the tool messages that follow it, before
// any other message, and every result in a tool message answers a call of
// the assistant message before that run of tool messages, once. It
// returns nil, the first violation as a *PairingError, or a *MessageError
// for a message it cannot read; it never modifies msgs.
func Validate(msgs []fantasy.Message) error {
	var open []string
	for i := range msgs {
		hs, _, err := toMessages(&msgs[i], i)
		if err != nil {
			return &MessageError{Index: i, Reason: err.Error()}
		}
		if msgs[i].Role == fantasy.MessageRoleTool {
			for _, h := range hs {
				if h.Role != history.RoleTool {
					continue
				}
				k := slices.Index(open, h.ToolCallID)
				if k < 0 {
					return &PairingError{Index: i, ID: h.ToolCallID, Reason: "tool result answers no open tool call"}
				}
				open = slices.Delete(open, k, k+1)
			}
			continue
		}
		if len(open) > 0 {
			return &PairingError{Index: i, ID: open[0], Reason: "tool call left unanswered"}
		}
		for _, c := range hs[0].ToolCalls {
			open = append(open, c.ID)
		}
	}
	if len(open) > 0 {
		return &PairingError{Index: len(msgs), ID: open[0], Reason: "tool call left unanswered"}
	}
	return nil
}
