package fantasy

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"

	"charm.land/fantasy"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/errtree"
	"github.com/histrim/history/internal/mediapart"
	"github.com/histrim/history/internal/regroup"
)

// MessageError reports a message the adapter cannot convert: an unknown
// role, a nil or typed-nil part, a tool call without an id or with an id
// its message already has, a tool result without a call id or without an
// output (nil or a typed nil), an error output whose error is nil or
// panics when read, a tool call in a message that is not the assistant's. It wraps [history.ErrInvalidMessage].
// Index is the position of the message in the caller's slice, Reason
// says what is wrong with it.
type MessageError = adapt.MessageError

// codec is the module's part of the shape every adapter shares
// (internal/adapt, docs/adapters.md): the conversion both ways, and the
// reader of fantasy's provider errors.
var codec = &adapt.Codec[struct{}, fantasy.Message]{
	Name: "fantasy", Noun: "message",
	Convert: func(_ struct{}, msgs []fantasy.Message, opts []history.Option) (*adapt.View[fantasy.Message], error) {
		hist, slots, err := convert(msgs, opts)
		if err != nil {
			return nil, err
		}
		notice := func(b history.Message, _ *regroup.Group) fantasy.Message { return fromNotice(b) }
		return adapt.Grouped(msgs, hist, 0, slots, notice, cut), nil
	},
	Overflow: overflow,
}

// ToHistory converts msgs to the library's messages (see the package
// documentation for the mapping): one per message, but that a tool
// message becomes one tool message per result, plus a nudge holding its
// other parts. The result is for deciding, not for sending: file data is
// reduced to its size and an image's to its dimensions. The notices a trim
// with default options inserts are marked history.KindBreadcrumb.
// ToHistory never modifies msgs; a message it cannot convert gives a nil
// slice and a *MessageError.
func ToHistory(msgs []fantasy.Message) ([]history.Message, error) {
	out, _, err := convert(msgs, nil)
	return out, err
}

// convert is ToHistory, recognising the notices a trim with opts inserts,
// and returning where each converted message comes from.
func convert(msgs []fantasy.Message, opts []history.Option) ([]history.Message, []regroup.Slot, error) {
	return adapt.Marked(msgs, opts, convertMessages, fromNotice, nil)
}

// convertMessages is convert without the recognition of notices.
func convertMessages(msgs []fantasy.Message) ([]history.Message, []regroup.Slot, error) {
	out := make([]history.Message, 0, len(msgs))
	slots := make([]regroup.Slot, 0, len(msgs))
	for i := range msgs {
		hs, ss, err := toMessages(&msgs[i], i)
		if err != nil {
			return nil, nil, invalid(i, err)
		}
		out, slots = append(out, hs...), append(slots, ss...)
	}
	return out, slots, nil
}

// invalid is the *MessageError for msgs[i].
func invalid(i int, err error) error {
	return adapt.Invalid("fantasy", "message", nil, i, err.Error())
}

// toMessages converts the native message m, at index i.
func toMessages(m *fantasy.Message, i int) ([]history.Message, []regroup.Slot, error) {
	var role history.Role
	switch m.Role {
	case fantasy.MessageRoleSystem:
		role = history.RoleSystem
	case fantasy.MessageRoleUser:
		role = history.RoleUser
	case fantasy.MessageRoleAssistant:
		role = history.RoleAssistant
	case fantasy.MessageRoleTool:
		return toolMessages(m, i)
	default:
		return nil, nil, errors.New("unknown role " + strconv.Quote(string(m.Role)))
	}
	h := history.Message{Role: role}
	var calls []int
	var ids map[string]bool // the calls' ids, once there are many
	for k, p := range m.Content {
		if err := checkPart(p, k); err != nil {
			return nil, nil, err
		}
		if c, ok := fantasy.AsMessagePart[fantasy.ToolCallPart](p); ok && !c.ProviderExecuted {
			if role != history.RoleAssistant {
				return nil, nil, errors.New("a tool call in a " + string(m.Role) + " message")
			}
			if c.ToolCallID == "" {
				return nil, nil, errors.New("tool call " + strconv.Itoa(k) + " has no id")
			}
			if ids, ok = seen(ids, h.ToolCalls, c.ToolCallID); ok {
				return nil, nil, errors.New("two tool calls with id " + strconv.Quote(c.ToolCallID))
			}
			h.ToolCalls = append(h.ToolCalls, history.ToolCall{ID: c.ToolCallID, Name: c.ToolName, Arguments: c.Input})
			calls = append(calls, k)
			continue
		}
		if t, ok := fantasy.AsMessagePart[fantasy.TextPart](p); ok && len(m.Content) == 1 {
			h.Content = t.Text // the common shape, and the one notices are read in
			continue
		}
		h.Parts = append(h.Parts, toPart(p))
	}
	return []history.Message{h}, []regroup.Slot{{Native: i, Calls: calls}}, nil
}

// seen reports whether calls, the calls of a message so far, hold id, and
// records id: by a scan while they are few, in ids (made here) once they
// are many, so that a message of n calls costs O(n).
func seen(ids map[string]bool, calls []history.ToolCall, id string) (map[string]bool, bool) {
	if ids == nil && len(calls) < 16 {
		for _, d := range calls {
			if d.ID == id {
				return nil, true
			}
		}
		return nil, false
	}
	if ids == nil {
		ids = make(map[string]bool, 2*len(calls))
		for _, d := range calls {
			ids[d.ID] = true
		}
	}
	dup := ids[id]
	ids[id] = true
	return ids, dup
}

// toolMessages converts a tool message: one tool message per result, and
// one user message of history.KindNudge for its other parts (a nudge
// neither opens a turn nor separates results from their calls).
func toolMessages(m *fantasy.Message, i int) ([]history.Message, []regroup.Slot, error) {
	var out []history.Message
	var slots []regroup.Slot
	other := []int{}
	nudge := history.Message{Role: history.RoleUser, Kind: history.KindNudge}
	for k, p := range m.Content {
		if err := checkPart(p, k); err != nil {
			return nil, nil, err
		}
		r, ok := fantasy.AsMessagePart[fantasy.ToolResultPart](p)
		if !ok || r.ProviderExecuted {
			other = append(other, k)
			nudge.Parts = append(nudge.Parts, toPart(p))
			continue
		}
		if r.ToolCallID == "" {
			return nil, nil, errors.New("tool result " + strconv.Itoa(k) + " has no call id")
		}
		h := history.Message{Role: history.RoleTool, ToolCallID: r.ToolCallID}
		switch o := r.Output.(type) {
		case fantasy.ToolResultOutputContentText:
			h.Content = o.Text
		case *fantasy.ToolResultOutputContentText:
			h.Content = o.Text
		case fantasy.ToolResultOutputContentError:
			h.Content = errorText(o.Error)
		case *fantasy.ToolResultOutputContentError:
			h.Content = errorText(o.Error)
		case fantasy.ToolResultOutputContentMedia:
			h.Content, h.Parts = o.Text, []history.Part{media(o.MediaType, o.Data)}
		case *fantasy.ToolResultOutputContentMedia:
			h.Content, h.Parts = o.Text, []history.Part{media(o.MediaType, o.Data)}
		}
		out = append(out, h)
		slots = append(slots, regroup.Slot{Native: i, Parts: []int{k}})
	}
	out, slots = adapt.WithNudge(out, slots, i, other, nudge)
	return out, slots, nil
}

// checkPart returns why p, the part at k, cannot be read or sent: nil or
// a typed nil (fantasy reads a part by dereferencing it), or a tool
// result (a provider-executed one too, which is sent as its JSON) whose
// output is nil or a typed nil, or an error output whose error is nil
// or panics when read (fantasy's providers send an error output as
// Error.Error()).
func checkPart(p fantasy.MessagePart, k int) error {
	if isNil(p) {
		return errors.New("part " + strconv.Itoa(k) + " is nil")
	}
	r, ok := fantasy.AsMessagePart[fantasy.ToolResultPart](p)
	if !ok {
		return nil
	}
	if isNil(r.Output) {
		return errors.New("tool result " + strconv.Itoa(k) + " has no output")
	}
	if o, ok := fantasy.AsToolResultOutputType[fantasy.ToolResultOutputContentError](r.Output); ok {
		if _, ok := errtree.Error(o.Error); o.Error == nil || !ok {
			return errors.New("tool result " + strconv.Itoa(k) + " has an error output whose error is nil or does not read")
		}
	}
	return nil
}

// isNil reports whether v is nil or a typed nil: a nil pointer in an
// interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// errorText is the text of an error output's error, which checkPart
// found readable.
func errorText(err error) string {
	s, _ := errtree.Error(err)
	return s
}

// toPart converts a part that is not a plain tool call or result: text and
// reasoning as themselves, a file as an image (its dimensions read from
// its header) or a file of its size, anything else (a provider-executed
// call or result, a part type this package does not know) as the text of
// its JSON.
func toPart(p fantasy.MessagePart) history.Part {
	if t, ok := fantasy.AsMessagePart[fantasy.TextPart](p); ok {
		return history.Part{Type: history.PartText, Text: t.Text}
	}
	if r, ok := fantasy.AsMessagePart[fantasy.ReasoningPart](p); ok {
		return history.Part{Type: history.PartReasoning, Text: r.Text}
	}
	if f, ok := fantasy.AsMessagePart[fantasy.FilePart](p); ok {
		return file(f.MediaType, f.Data)
	}
	return history.Part{Type: history.PartText, Text: encode(p)}
}

// encode returns the JSON text of p, or "" when p does not encode (or its
// MarshalJSON panics): such a part counts as nothing.
func encode(p fantasy.MessagePart) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	b, _ := json.Marshal(p)
	return string(b)
}

// file converts a file's bytes: an image by the dimensions its header
// states, anything else by its size.
func file(mediaType string, data []byte) history.Part {
	return mediapart.Blob(mediaType, data)
}

// media converts a tool result's base64 media.
func media(mediaType, data string) history.Part {
	return file(mediaType, []byte(data))
}

// fromNotice renders the notice b as a message of its role holding one
// text part.
func fromNotice(b history.Message) fantasy.Message {
	role := adapt.ByRole(b.Role, fantasy.MessageRoleSystem, fantasy.MessageRoleUser, fantasy.MessageRoleAssistant)
	return fantasy.Message{Role: role, Content: []fantasy.MessagePart{fantasy.TextPart{Text: b.Content}}}
}

// Trim trims msgs to budget tokens with history.TrimToRecentTurns and
// returns the caller's messages the trim kept, in order, with the notices
// it inserted (dropped turns; dropped steps under history.WithStepTrim)
// as messages of their role holding one text part. res is the core's
// Result over ToHistory(msgs): res.Kept indexes that, not msgs (a tool
// message converts to one message per result); history.WithPin takes
// indices into msgs, as every adapter's Trim does.
//
// Kept messages are the caller's values; a message the trim changed is a
// new message holding the caller's remaining parts, in their order: a
// tool message some of whose results were swept (they answered nothing)
// or elided (a copy of the result whose output is the placeholder text),
// an assistant message whose unanswered calls were stripped (or whose
// calls' arguments history.ElideOptions.ClearArguments cleared: copies of
// those call parts with the core's arguments). When nothing needs
// trimming or sweeping, the result is msgs itself, clipped.
//
// Errors: a *MessageError when msgs cannot be converted; otherwise the
// core's, with nil messages, except a *history.BudgetError (the latest
// turn alone exceeds the budget), which comes with the trimmed messages
// and res, as the core returns it.
func Trim(msgs []fantasy.Message, budget int, opts ...history.Option) ([]fantasy.Message, history.Result, error) {
	return codec.Trim(struct{}{}, msgs, budget, opts)
}

// cut returns a new message of m's role and provider options holding the
// parts of m that g keeps, in their order: elided results replaced by
// copies holding the placeholder, the calls whose arguments g clears
// carrying the new ones; false if none is left.
func cut(m fantasy.Message, g *regroup.Group) (fantasy.Message, bool) {
	parts := regroup.KeptParts(g, regroup.WithArgs(g, m.Content, withArguments), elide)
	return fantasy.Message{Role: m.Role, Content: parts, ProviderOptions: m.ProviderOptions}, len(parts) > 0
}

// elide returns p, a tool result, with text as its output.
func elide(p fantasy.MessagePart, text string) fantasy.MessagePart {
	r, ok := fantasy.AsMessagePart[fantasy.ToolResultPart](p)
	if !ok {
		return p // not reached: only results are elided
	}
	r.Output = fantasy.ToolResultOutputContentText{Text: text}
	return r
}

// withArguments returns p, a tool call, with args as its input.
func withArguments(p fantasy.MessagePart, args string) fantasy.MessagePart {
	c, ok := fantasy.AsMessagePart[fantasy.ToolCallPart](p)
	if !ok {
		return p // not reached: only calls have arguments
	}
	c.Input = args // c is a copy of the caller's part
	return c
}
