package goopenai

import (
	"errors"
	"slices"
	"strconv"

	"github.com/histrim/history"
	openai "github.com/sashabaranov/go-openai"
)

// ErrUnpaired is wrapped by *PairingError: the messages break the chat
// completions tool-pairing rule, which the API enforces with an HTTP 400.
var ErrUnpaired = errors.New("history/goopenai: unpaired tool call or tool message")

// PairingError reports where messages break the pairing rule. It wraps
// ErrUnpaired.
type PairingError struct {
	// Index is the position of the offending message: a tool message that
	// answers no open call, or the first message after calls left
	// unanswered (len(msgs) when they end the messages).
	Index int
	// ID is the tool call id concerned.
	ID string
	// Reason says which half of the rule is broken.
	Reason string
}

func (e *PairingError) Error() string {
	return "history/goopenai: message " + strconv.Itoa(e.Index) + ": " + e.Reason + " (tool call id " + strconv.Quote(e.ID) + ")"
}

// Unwrap returns ErrUnpaired.
func (e *PairingError) Unwrap() error { return ErrUnpaired }

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
	var open []string // the unanswered calls of the latest assistant message
	for i := range msgs {
		m, err := toMessage(&msgs[i])
		if err != nil {
			return &MessageError{Index: i, Reason: err.Error()}
		}
		if m.Role == history.RoleTool {
			k := slices.Index(open, m.ToolCallID)
			if k < 0 {
				return &PairingError{Index: i, ID: m.ToolCallID, Reason: "tool message answers no open tool call"}
			}
			open = slices.Delete(open, k, k+1)
			continue
		}
		if len(open) > 0 {
			return &PairingError{Index: i, ID: open[0], Reason: "tool call left unanswered"}
		}
		for _, c := range m.ToolCalls {
			open = append(open, c.ID)
		}
	}
	if len(open) > 0 {
		return &PairingError{Index: len(msgs), ID: open[0], Reason: "tool call left unanswered"}
	}
	return nil
}
