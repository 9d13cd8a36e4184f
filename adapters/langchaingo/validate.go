package langchaingo

import (
	"strconv"

	"github.com/tmc/langchaingo/llms"
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
	return "history/langchaingo: message " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns ErrUnpaired.
func (e *PairingError) Unwrap() error { return ErrUnpaired }

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
	open := -1 // index of the AI message whose calls are being answered
	var calls map[string]bool
	var order []string // the open message's call ids, in order
	answered := map[string]bool{}
	closeOpen := func() error {
		if open < 0 {
			return nil
		}
		for _, id := range order {
			if !answered[id] {
				return &PairingError{open, "tool call " + strconv.Quote(id) + " has no response before the next non-tool message"}
			}
		}
		open = -1
		return nil
	}
	for i, mc := range msgs {
		if mc.Role == llms.ChatMessageTypeTool {
			for _, part := range mc.Parts {
				switch x := unwrap(part).(type) {
				case llms.ToolCall:
					return &PairingError{i, "tool call in a tool message"}
				case llms.ToolCallResponse:
					id := x.ToolCallID
					switch {
					case open < 0:
						return &PairingError{i, "tool response " + strconv.Quote(id) + " does not follow an AI message with tool calls"}
					case !calls[id]:
						return &PairingError{i, "tool response " + strconv.Quote(id) + " answers no call of the preceding AI message"}
					case answered[id]:
						return &PairingError{i, "tool call " + strconv.Quote(id) + " answered twice"}
					}
					answered[id] = true
				}
			}
			continue
		}
		if err := closeOpen(); err != nil {
			return err
		}
		var ids map[string]bool
		var idOrder []string
		for _, part := range mc.Parts {
			switch x := unwrap(part).(type) {
			case llms.ToolCallResponse:
				return &PairingError{i, "tool response in a " + string(mc.Role) + " message"}
			case llms.ToolCall:
				if mc.Role != llms.ChatMessageTypeAI {
					return &PairingError{i, "tool call in a " + string(mc.Role) + " message"}
				}
				if x.ID == "" || ids[x.ID] {
					return &PairingError{i, "tool call id " + strconv.Quote(x.ID) + " is empty or used twice"}
				}
				if ids == nil {
					ids = map[string]bool{}
				}
				ids[x.ID] = true
				idOrder = append(idOrder, x.ID)
			}
		}
		if ids != nil {
			open, calls, order, answered = i, ids, idOrder, map[string]bool{}
		}
	}
	return closeOpen()
}
