package fantasy

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	_ "image/gif" // image headers: the dimensions of image parts
	_ "image/jpeg"
	_ "image/png"
	"strconv"
	"strings"

	"charm.land/fantasy"
	"github.com/histrim/history"
)

// MessageError reports a message the adapter cannot convert: an unknown
// role, a nil part, a tool call without an id or with an id its message
// already has, a tool result without a call id, a tool call in a message
// that is not the assistant's. It wraps [history.ErrInvalidMessage].
type MessageError struct {
	// Index is the position of the message in the caller's slice.
	Index int
	// Reason says what is wrong with it.
	Reason string
}

func (e *MessageError) Error() string {
	return "history/fantasy: invalid message at index " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns history.ErrInvalidMessage.
func (e *MessageError) Unwrap() error { return history.ErrInvalidMessage }

// slot says where a converted message comes from: the index of its native
// message and the indices of the native parts it holds.
type slot struct {
	msg   int
	parts []int
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
func convert(msgs []fantasy.Message, opts []history.Option) ([]history.Message, []slot, error) {
	out := make([]history.Message, 0, len(msgs))
	slots := make([]slot, 0, len(msgs))
	for i := range msgs {
		hs, ss, err := toMessages(&msgs[i], i)
		if err != nil {
			return nil, nil, &MessageError{Index: i, Reason: err.Error()}
		}
		out, slots = append(out, hs...), append(slots, ss...)
	}
	markNotices(out, opts)
	return out, slots, nil
}

// toMessages converts the native message m, at index i.
func toMessages(m *fantasy.Message, i int) ([]history.Message, []slot, error) {
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
	all := make([]int, len(m.Content))
	for k, p := range m.Content {
		all[k] = k
		if p == nil {
			return nil, nil, errors.New("part " + strconv.Itoa(k) + " is nil")
		}
		if c, ok := fantasy.AsMessagePart[fantasy.ToolCallPart](p); ok && !c.ProviderExecuted {
			if role != history.RoleAssistant {
				return nil, nil, errors.New("a tool call in a " + string(m.Role) + " message")
			}
			if c.ToolCallID == "" {
				return nil, nil, errors.New("tool call " + strconv.Itoa(k) + " has no id")
			}
			for _, d := range h.ToolCalls {
				if d.ID == c.ToolCallID {
					return nil, nil, errors.New("two tool calls with id " + strconv.Quote(c.ToolCallID))
				}
			}
			h.ToolCalls = append(h.ToolCalls, history.ToolCall{ID: c.ToolCallID, Name: c.ToolName, Arguments: c.Input})
			continue
		}
		if t, ok := fantasy.AsMessagePart[fantasy.TextPart](p); ok && len(m.Content) == 1 {
			h.Content = t.Text // the common shape, and the one notices are read in
			continue
		}
		h.Parts = append(h.Parts, toPart(p))
	}
	return []history.Message{h}, []slot{{msg: i, parts: all}}, nil
}

// toolMessages converts a tool message: one tool message per result, and
// one user message of history.KindNudge for its other parts (a nudge
// neither opens a turn nor separates results from their calls).
func toolMessages(m *fantasy.Message, i int) ([]history.Message, []slot, error) {
	var out []history.Message
	var slots []slot
	var other []int
	nudge := history.Message{Role: history.RoleUser, Kind: history.KindNudge}
	for k, p := range m.Content {
		if p == nil {
			return nil, nil, errors.New("part " + strconv.Itoa(k) + " is nil")
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
		slots = append(slots, slot{msg: i, parts: []int{k}})
	}
	if len(other) > 0 || len(out) == 0 {
		out = append(out, nudge)
		slots = append(slots, slot{msg: i, parts: other})
	}
	return out, slots, nil
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
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
	b, _ := json.Marshal(p) // a part that does not encode counts as nothing
	return history.Part{Type: history.PartText, Text: string(b)}
}

// file converts a file's bytes: an image by the dimensions its header
// states, anything else by its size.
func file(mediaType string, data []byte) history.Part {
	if strings.HasPrefix(mediaType, "image/") {
		p := history.Part{Type: history.PartImage, MIMEType: mediaType}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			p.Width, p.Height = cfg.Width, cfg.Height
		}
		return p
	}
	return history.Part{Type: history.PartFile, MIMEType: mediaType, Size: int64(len(data))}
}

// media converts a tool result's base64 media.
func media(mediaType, data string) history.Part {
	return file(mediaType, []byte(data))
}

// markNotices marks as history.KindBreadcrumb the messages that read
// exactly as a notice a trim with opts (or with the defaults) renders: a
// message of the notice's role holding one text part with its text. The
// turn notice is recognised only in the leading block of system messages
// and right after it, where trims put it; the step notice anywhere, since
// later turns leave it behind.
func markNotices(msgs []history.Message, opts []history.Option) {
	turn, step, on := history.Breadcrumbs(opts...)
	dturn, dstep, _ := history.Breadcrumbs()
	turns, steps := []history.Message{dturn}, []history.Message{dstep}
	if on {
		turns, steps = append(turns, turn), append(steps, step)
	}
	lead := true
	for i := range msgs {
		m := &msgs[i]
		if lead && matches(m, turns) || matches(m, steps) {
			m.Kind = history.KindBreadcrumb
		}
		lead = lead && m.Role == history.RoleSystem
	}
}

func matches(m *history.Message, notices []history.Message) bool {
	if len(m.Parts) > 0 || len(m.ToolCalls) > 0 || m.Kind != "" {
		return false
	}
	for i := range notices {
		if m.Role == notices[i].Role && m.Content == notices[i].Content {
			return true
		}
	}
	return false
}

// fromNotice renders the notice b as a message of its role holding one
// text part.
func fromNotice(b history.Message) fantasy.Message {
	role := fantasy.MessageRoleUser
	switch b.Role {
	case history.RoleSystem:
		role = fantasy.MessageRoleSystem
	case history.RoleAssistant:
		role = fantasy.MessageRoleAssistant
	}
	return fantasy.Message{Role: role, Content: []fantasy.MessagePart{fantasy.TextPart{Text: b.Content}}}
}

// Trim trims msgs to budget tokens with history.TrimToRecentTurns and
// returns the caller's messages the trim kept, in order, with the notices
// it inserted (dropped turns; dropped steps under history.WithStepTrim)
// as messages of their role holding one text part. res is the core's
// Result over ToHistory(msgs): res.Kept indexes that, not msgs, and
// history.WithPin takes indices into it.
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
	hist, slots, err := convert(msgs, opts)
	if err != nil {
		return nil, history.Result{Budget: budget}, err
	}
	res, err := history.TrimToRecentTurns(hist, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, res, err
	}
	return apply(msgs, slots, res), res, err
}

// apply maps res, a Result over the conversion of msgs whose slots are
// slots, back onto msgs: a native message whose converted messages are all
// kept unchanged, in a row, is the caller's value; one of which only some
// are kept, or changed, is a new message over the caller's parts; a notice
// is rendered.
func apply(msgs []fantasy.Message, slots []slot, res history.Result) []fantasy.Message {
	if res.Kept == nil {
		return msgs[:len(msgs):len(msgs)]
	}
	count := make([]int, len(msgs)) // converted messages per native message
	for _, s := range slots {
		count[s.msg]++
	}
	modified := make(map[int]bool, len(res.Modified))
	for _, j := range res.Modified {
		modified[j] = true
	}
	out := make([]fantasy.Message, 0, len(res.Kept))
	same := len(res.Kept) == len(slots) && len(res.Modified) == 0
	for j := 0; j < len(res.Kept); {
		k := res.Kept[j]
		if k < 0 {
			out = append(out, fromNotice(res.Messages[j]))
			same = false
			j++
			continue
		}
		n := slots[k].msg
		end, changed := j, false
		for end < len(res.Kept) && res.Kept[end] >= 0 && slots[res.Kept[end]].msg == n {
			changed = changed || modified[end]
			end++
		}
		if end-j == count[n] && !changed {
			out = append(out, msgs[n])
		} else {
			out = append(out, rebuild(msgs[n], slots, res, j, end, modified))
			same = false
		}
		j = end
	}
	if same && len(out) == len(msgs) {
		return msgs[:len(msgs):len(msgs)]
	}
	return out
}

// rebuild returns a new message of u's role holding the parts of u that
// res.Messages[j:end] kept, in their order: elided results replaced by
// copies holding the placeholder, and in an assistant message the calls
// the sweep left, with the core's arguments.
func rebuild(u fantasy.Message, slots []slot, res history.Result, j, end int, modified map[int]bool) fantasy.Message {
	out := fantasy.Message{Role: u.Role, ProviderOptions: u.ProviderOptions}
	for ; j < end; j++ {
		m := &res.Messages[j]
		for _, k := range slots[res.Kept[j]].parts {
			p := u.Content[k]
			if modified[j] {
				var keep bool
				if p, keep = change(p, m); !keep {
					continue
				}
			}
			out.Content = append(out.Content, p)
		}
	}
	return out
}

// change returns the part p of a message the core changed into m: an
// elided result holding m's placeholder as its text output, a tool call
// with m's arguments, or dropped (keep false) when m no longer holds it.
func change(p fantasy.MessagePart, m *history.Message) (fantasy.MessagePart, bool) {
	if r, ok := fantasy.AsMessagePart[fantasy.ToolResultPart](p); ok && m.Kind == history.KindElided {
		r.Output = fantasy.ToolResultOutputContentText{Text: m.Content}
		return r, true
	}
	c, ok := fantasy.AsMessagePart[fantasy.ToolCallPart](p)
	if !ok || c.ProviderExecuted {
		return p, true
	}
	for _, k := range m.ToolCalls {
		if k.ID == c.ToolCallID {
			if k.Arguments == c.Input {
				return p, true
			}
			c.Input = k.Arguments // c is a copy of the caller's part
			return c, true
		}
	}
	return nil, false
}
