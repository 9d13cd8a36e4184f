package eino

import (
	"strconv"

	"github.com/cloudwego/eino/schema"
)

// PairingError reports the first place where messages break the pairing
// rule Validate checks. It wraps ErrUnpaired.
type PairingError struct {
	// Index is the position in the messages of the offending message.
	Index int
	// Reason says which part of the rule it breaks.
	Reason string
}

func (e *PairingError) Error() string {
	return "history/eino: message " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns ErrUnpaired.
func (e *PairingError) Unwrap() error { return ErrUnpaired }

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
	var open *schema.Message // assistant message whose calls are being answered
	openAt := -1
	var answered map[string]bool
	closeOpen := func() error {
		if open == nil {
			return nil
		}
		for _, tc := range open.ToolCalls {
			if !answered[tc.ID] {
				return &PairingError{openAt, "tool call " + strconv.Quote(tc.ID) + " has no result before the next non-tool message"}
			}
		}
		open = nil
		return nil
	}
	for i, m := range msgs {
		if m == nil {
			return &PairingError{i, "nil message"}
		}
		if m.Role == schema.Tool {
			if open == nil {
				return &PairingError{i, "tool result " + strconv.Quote(m.ToolCallID) + " does not follow an assistant message with tool calls"}
			}
			if !hasCall(open, m.ToolCallID) {
				return &PairingError{i, "tool result " + strconv.Quote(m.ToolCallID) + " answers no call of the preceding assistant message"}
			}
			if answered[m.ToolCallID] {
				return &PairingError{i, "tool call " + strconv.Quote(m.ToolCallID) + " answered twice"}
			}
			answered[m.ToolCallID] = true
			continue
		}
		if err := closeOpen(); err != nil {
			return err
		}
		if len(m.ToolCalls) == 0 {
			continue
		}
		if m.Role != schema.Assistant {
			return &PairingError{i, "tool calls on a " + string(m.Role) + " message"}
		}
		seen := make(map[string]bool, len(m.ToolCalls))
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || seen[tc.ID] {
				return &PairingError{i, "tool call id " + strconv.Quote(tc.ID) + " is empty or used twice"}
			}
			seen[tc.ID] = true
		}
		open, openAt, answered = m, i, make(map[string]bool, len(m.ToolCalls))
	}
	return closeOpen()
}

func hasCall(m *schema.Message, id string) bool {
	for _, tc := range m.ToolCalls {
		if tc.ID == id {
			return true
		}
	}
	return false
}
