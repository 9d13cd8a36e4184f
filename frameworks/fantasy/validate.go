package fantasy

import (
	"errors"

	"charm.land/fantasy"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// ErrUnpaired is wrapped by *PairingError: the messages break the tool
// pairing rule the providers behind fantasy enforce with an HTTP 400.
var ErrUnpaired = errors.New("history/fantasy: unpaired tool call or tool result")

// PairingError reports where messages break the pairing rule: Index is the
// position of the offending message (a tool message holding a result that
// answers no open call, or the assistant message whose call is never
// answered), ID the tool call id concerned, Reason which half of the rule
// is broken. It wraps ErrUnpaired.
type PairingError = adapt.PairingError

// Validate checks msgs against the tool pairing rule of the providers
// fantasy sends to: every tool call of an assistant message is answered
// by a result in the tool messages that follow it, before the next
// message that is not a tool message, and every result answers a call
// of the assistant message before its run of tool messages, once. It
// returns nil, the first violation as a *PairingError, or a *MessageError
// for a message it cannot read; it never modifies msgs.
func Validate(msgs []fantasy.Message) error {
	return adapt.Validate(providerRules, msgs)
}

// providerRules is the providers' rules table that Validate walks
// (docs/providers.md).
var providerRules = []adapt.Rule[fantasy.Message]{
	adapt.PairingRule("fantasy", "message", ErrUnpaired, read),
}

// read says what msgs[i] calls or answers (see pairing.Read).
func read(msgs []fantasy.Message, i int) (bool, []string, error) {
	hs, _, err := toMessages(&msgs[i], i)
	if err != nil {
		return true, nil, invalid(i, err)
	}
	var ids []string
	for _, h := range hs {
		if h.Role == history.RoleTool {
			ids = append(ids, h.ToolCallID)
		}
		for _, c := range h.ToolCalls {
			ids = append(ids, c.ID)
		}
	}
	return msgs[i].Role == fantasy.MessageRoleTool, ids, nil
}
