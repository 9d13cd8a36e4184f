// This file owns the message model: roles, kinds, tool calls, parts, and the
// rules a valid Message obeys (validate), with the two helpers every other
// file shares: Clone and equal.

package history

import (
	"slices"
	"strconv"
)

// Role is the author of a [Message], as chat-completion providers name it.
type Role string

// The roles a [Message] may have. Any other value is rejected with
// [ErrInvalidMessage].
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Kind marks messages the library treats specially. The zero value is an
// ordinary message. Any value other than the constants below is rejected with
// [ErrInvalidMessage], so that a misspelt kind cannot silently turn a pinned
// summary into an ordinary, droppable message. Only [KindElided] may be set
// on a [RoleTool] message, and no kind on a message with tool calls.
type Kind string

// The special kinds of message.
const (
	// KindBreadcrumb is the library's omission notice (see [Breadcrumb]). It
	// never starts a turn and the library never stacks two of them: a new one
	// replaces the old.
	KindBreadcrumb Kind = "breadcrumb"
	// KindSummary is a compaction summary written by the runtime. Summaries
	// directly after the leading system messages are pinned: never dropped.
	// When dropped turns hold summaries, the newest of them is moved into
	// the prefix (see [Summaries]).
	KindSummary Kind = "summary"
	// KindNudge is a runtime-injected user-role note (a reminder, a
	// "[system: ...]" line). It never starts a turn.
	KindNudge Kind = "nudge"
	// KindElided marks a tool result whose content the library replaced
	// with a placeholder (see [ElideToolResults]). Only RoleTool messages
	// may carry it. An elided result is never elided again, whatever its
	// text says.
	KindElided Kind = "elided"
	// KindCompaction is a provider's own compaction of the conversation
	// (an Anthropic compaction block, a Responses compaction item), which
	// the adapters map to it: the provider ignores every message before
	// the latest one. A trim drops everything between the prefix and the
	// latest compaction first, as the provider would not read it, with no
	// breadcrumb (the compaction stands for it), and keeps the compaction
	// itself in the prefix, like a pinned summary; its content is opaque
	// and never edited.
	KindCompaction Kind = "compaction"
)

// ToolCall is one tool invocation requested by an assistant message (see
// [Message.ToolCalls]).
type ToolCall struct {
	// ID pairs the call with the [RoleTool] message that answers it. It must
	// be non-empty and unique within its assistant message; the same ID may
	// be reused by later, separate exchanges.
	ID string `json:"id"`
	// Name is the tool's name. Elision placeholders and ExcludeTools (see
	// [ElideOptions]) read it.
	Name string `json:"name"`
	// Arguments is the raw JSON text of the arguments, as the model wrote it.
	Arguments string `json:"arguments,omitempty"`
}

// Message is one entry of a conversation, in a provider-neutral shape.
//
// The library never modifies a Message it is given: results hold copies, and a
// message whose tool calls had to be stripped is a new value with a new
// ToolCalls slice. A copied Message still shares its Parts and ToolCalls
// backing arrays with the original; use [Message.Clone] before editing them.
type Message struct {
	// Role is the author; it must be one of the Role constants.
	Role Role `json:"role"`
	// Content is the message's plain text.
	Content string `json:"content,omitempty"`
	// Parts holds non-text content: images, files, reasoning. Text parts are
	// allowed too, for providers that split text into blocks.
	Parts []Part `json:"parts,omitempty"`
	// ToolCalls are the calls an assistant message makes. Only [RoleAssistant]
	// messages may carry them.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a [RoleTool] message answers. Required on tool
	// messages, forbidden elsewhere.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the optional author name (OpenAI "name"); for tool messages
	// some providers put the tool's name here.
	Name string `json:"name,omitempty"`
	// Kind marks a breadcrumb, summary, nudge or elided result; empty for an
	// ordinary message.
	Kind Kind `json:"kind,omitempty"`
}

// PartType says what a [Part] holds.
type PartType string

// The part types. Any other value is rejected with [ErrInvalidMessage].
const (
	PartText      PartType = "text"
	PartImage     PartType = "image"
	PartFile      PartType = "file"
	PartReasoning PartType = "reasoning"
)

// Part is one piece of non-plain-text content. Only the fields that matter
// for its type need to be set; the library reads them to estimate the part's
// token cost and never needs the payload itself (no base64 data is carried:
// counting by encoded length overcounts images about a thousandfold).
//
// Cost rules (see [PartTokens]): a part with Tokens > 0 costs exactly that;
// text and reasoning parts cost their Text; images cost by Width and Height;
// files by Size.
type Part struct {
	// Type is one of the PartType constants.
	Type PartType `json:"type"`
	// Text is the text of a text or reasoning part.
	Text string `json:"text,omitempty"`
	// Tokens is the part's cost when the caller already knows it (for
	// example from a provider's usage report). Zero means unknown.
	Tokens int `json:"tokens,omitempty"`
	// Width and Height are an image's size in pixels. Zero means unknown.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// Detail is an image's detail level: "low", "high" or "auto" (the
	// default, treated as "high").
	Detail string `json:"detail,omitempty"`
	// MIMEType is the media type of an image or file, e.g. "application/pdf".
	MIMEType string `json:"mime_type,omitempty"`
	// Size is a file's size in bytes. Zero means unknown.
	Size int64 `json:"size,omitempty"`
}

// Clone returns a copy of m whose Parts and ToolCalls are new slices, so
// that editing the copy's parts or tool calls cannot change m (strings are
// immutable and are shared). Nil slices stay nil.
func (m Message) Clone() Message {
	m.Parts = slices.Clone(m.Parts)
	m.ToolCalls = slices.Clone(m.ToolCalls)
	return m
}

// equal reports whether a and b are equal in every field. Strings that share
// memory compare in constant time, so comparing a message with an unedited
// copy of itself does not scan its content.
func equal(a, b *Message) bool {
	return a.Role == b.Role && a.Kind == b.Kind && a.Content == b.Content &&
		a.ToolCallID == b.ToolCallID && a.Name == b.Name &&
		slices.Equal(a.ToolCalls, b.ToolCalls) && slices.Equal(a.Parts, b.Parts)
}

// validate checks every message against the message model. It is linear in
// the total number of messages, tool calls and parts.
func validate(msgs []Message) error {
	for i := range msgs {
		if reason := checkMessage(&msgs[i]); reason != "" {
			return &MessageError{Index: i, Reason: reason}
		}
	}
	return nil
}

// smallCalls is the number of tool calls up to which a linear scan beats a
// map for finding a call by ID.
const smallCalls = 16

// checkMessage returns why m is invalid, or "".
func checkMessage(m *Message) string {
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
	default:
		return "unknown role " + quote(string(m.Role))
	}
	switch m.Kind {
	case "", KindBreadcrumb, KindSummary, KindNudge, KindCompaction:
		if m.Kind != "" && (m.Role == RoleTool || len(m.ToolCalls) > 0) {
			return "a " + string(m.Kind) + " message cannot be part of a tool exchange"
		}
	case KindElided:
		if m.Role != RoleTool {
			return "only tool messages can be elided"
		}
	default:
		return "unknown kind " + quote(string(m.Kind))
	}
	if m.Role == RoleTool {
		if m.ToolCallID == "" {
			return "tool message without tool_call_id"
		}
	} else if m.ToolCallID != "" {
		return "tool_call_id on a " + string(m.Role) + " message"
	}
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return "tool calls on a " + string(m.Role) + " message"
	}
	if reason := checkCallIDs(m.ToolCalls); reason != "" {
		return reason
	}
	for j := range m.Parts {
		p := &m.Parts[j]
		switch p.Type {
		case PartText, PartImage, PartFile, PartReasoning:
		default:
			return "part " + strconv.Itoa(j) + " has unknown type " + quote(string(p.Type))
		}
		if p.Tokens < 0 || p.Width < 0 || p.Height < 0 || p.Size < 0 {
			return "part " + strconv.Itoa(j) + " has a negative size"
		}
	}
	return ""
}

// checkCallIDs returns why the IDs of calls are invalid (empty or used twice),
// or "". It is linear in len(calls).
func checkCallIDs(calls []ToolCall) string {
	var seen map[string]struct{}
	if len(calls) > smallCalls {
		seen = make(map[string]struct{}, len(calls))
	}
	for j := range calls {
		id := calls[j].ID
		if id == "" {
			return "tool call " + strconv.Itoa(j) + " has an empty id"
		}
		dup := false
		if seen != nil {
			_, dup = seen[id]
			seen[id] = struct{}{}
		} else {
			for k := range j {
				if calls[k].ID == id {
					dup = true
					break
				}
			}
		}
		if dup {
			return "tool call id " + quote(id) + " used twice in one message"
		}
	}
	return ""
}

// callIndex finds a tool call by ID among the calls of one assistant
// message: a linear scan for a few calls, a map built on first use for many,
// so that answering every one of n parallel calls costs O(n), not O(n²).
type callIndex struct {
	calls []ToolCall
	ids   map[string]int
}

func (x *callIndex) reset(calls []ToolCall) {
	x.calls, x.ids = calls, nil
}

// find returns the position of the call with the given id, or -1.
func (x *callIndex) find(id string) int {
	if len(x.calls) <= smallCalls {
		for j := range x.calls {
			if x.calls[j].ID == id {
				return j
			}
		}
		return -1
	}
	if x.ids == nil {
		x.ids = make(map[string]int, len(x.calls))
		for j := len(x.calls) - 1; j >= 0; j-- {
			x.ids[x.calls[j].ID] = j // the first call with an id wins
		}
	}
	if j, ok := x.ids[id]; ok {
		return j
	}
	return -1
}

func quote(s string) string { return strconv.Quote(s) }
