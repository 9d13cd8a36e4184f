package trpc

import (
	"errors"
	"strconv"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/media"
	"github.com/histrim/history/internal/notice"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// MessageError reports a message the strategy cannot convert: an unknown
// role, a tool call without an id or with an id its message already has,
// a tool message without a ToolID. It wraps [history.ErrInvalidMessage].
// Index is the position of the message in the caller's slice, Reason says
// what is wrong with it.
type MessageError = adapt.MessageError

// invalid is the *MessageError for message i.
func invalid(i int, err error) error {
	return adapt.Invalid("trpc", "message", nil, i, err.Error())
}

// ToHistory converts msgs to the library's messages, one for one, so that
// indices into the result are indices into msgs (see the package
// documentation for the mapping). The result is for deciding, not for
// sending: inline image and file data is reduced to its size. The notices a
// trim with default options inserts are marked history.KindBreadcrumb.
// ToHistory never modifies msgs; a message it cannot convert gives a nil
// slice and a *MessageError.
func ToHistory(msgs []model.Message) ([]history.Message, error) {
	return convert(msgs, nil)
}

// convert is ToHistory, recognising the notices a trim with opts inserts.
func convert(msgs []model.Message, opts []history.Option) ([]history.Message, error) {
	var cv converter
	cv.reserve(msgs)
	out := make([]history.Message, len(msgs))
	for i := range msgs {
		h, err := cv.message(&msgs[i])
		if err != nil {
			return nil, invalid(i, err)
		}
		out[i] = h
	}
	markNotices(out, opts)
	return out, nil
}

// converter converts messages one by one into shared buffers: the tool
// calls, parts and arguments of the messages it converts are carved out of
// blocks, never grown and copied. Unreserved, the blocks start small and
// double (to at most maxBlock elements, 64 times that in bytes of
// arguments), so that converting a few messages allocates little and
// converting n allocates about log(n) times plus n/maxBlock.
type converter struct {
	calls []history.ToolCall
	parts []history.Part
	args  strings.Builder // the arguments, carved out like the calls
}

// minBlock and maxBlock bound the size of an unreserved block, in
// elements.
const (
	minBlock = 16
	maxBlock = 1024
)

// reserve sizes the buffers for msgs.
func (cv *converter) reserve(msgs []model.Message) {
	calls, parts, args := 0, 0, 0
	for i := range msgs {
		m := &msgs[i]
		calls += len(m.ToolCalls)
		parts += len(m.ContentParts)
		if m.ReasoningContent != "" {
			parts++
		}
		for k := range m.ToolCalls {
			args += len(m.ToolCalls[k].Function.Arguments)
		}
	}
	cv.calls = make([]history.ToolCall, 0, calls)
	cv.parts = make([]history.Part, 0, parts)
	cv.args.Grow(args)
}

// arg returns b as a string carved out of the current block of arguments.
// A strings.Builder never changes the bytes it holds, so the strings
// carved out earlier stay valid when a new block starts.
func (cv *converter) arg(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cv.args.Cap()-cv.args.Len() < len(b) {
		size := min(2*cv.args.Cap(), 64*maxBlock*16)
		cv.args = strings.Builder{}
		cv.args.Grow(max(size, 64*minBlock, len(b)))
	}
	from := cv.args.Len()
	cv.args.Write(b)
	return cv.args.String()[from:]
}

// room returns buf, or a new block, twice the size of buf's (between
// minBlock and maxBlock elements, and at least n), when buf has no room
// for n more elements: the slices carved out of the old block stay as
// they are.
func room[T any](buf []T, n int) []T {
	if cap(buf)-len(buf) >= n {
		return buf
	}
	return make([]T, 0, max(min(2*cap(buf), maxBlock), minBlock, n))
}

// message converts m (see the package documentation for the mapping).
func (cv *converter) message(m *model.Message) (history.Message, error) {
	h := history.Message{Content: m.Content}
	switch m.Role {
	case model.RoleSystem:
		h.Role = history.RoleSystem
	case model.RoleUser:
		h.Role = history.RoleUser
	case model.RoleAssistant:
		h.Role = history.RoleAssistant
	case model.RoleTool:
		if m.ToolID == "" {
			return h, errors.New("tool message without ToolID")
		}
		h.Role, h.ToolCallID, h.Name = history.RoleTool, m.ToolID, m.ToolName
	default:
		return h, errors.New("unknown role " + strconv.Quote(string(m.Role)))
	}
	if n := len(m.ContentParts); n > 0 || m.ReasoningContent != "" {
		cv.parts = room(cv.parts, n+1)
		start := len(cv.parts)
		for k := range m.ContentParts {
			cv.parts = append(cv.parts, toPart(&m.ContentParts[k]))
		}
		if m.ReasoningContent != "" {
			cv.parts = append(cv.parts, history.Part{Type: history.PartReasoning, Text: m.ReasoningContent})
		}
		h.Parts = cv.parts[start:len(cv.parts):len(cv.parts)]
	}
	if len(m.ToolCalls) == 0 {
		return h, nil
	}
	if m.Role != model.RoleAssistant {
		return h, errors.New("tool calls in a " + string(m.Role) + " message")
	}
	cv.calls = room(cv.calls, len(m.ToolCalls))
	start := len(cv.calls)
	for k := range m.ToolCalls {
		c := &m.ToolCalls[k]
		if c.ID == "" {
			return h, errors.New("tool call " + strconv.Itoa(k) + " has no id")
		}
		for _, d := range cv.calls[start:] {
			if d.ID == c.ID {
				return h, errors.New("two tool calls with id " + strconv.Quote(c.ID))
			}
		}
		cv.calls = append(cv.calls, history.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: cv.arg(c.Function.Arguments)})
	}
	h.ToolCalls = cv.calls[start:len(cv.calls):len(cv.calls)]
	return h, nil
}

// toPart converts a content part: text as text; an image by its
// dimensions when its data is there (a remote image is priced at its
// largest); audio, video and files by their size.
func toPart(p *model.ContentPart) history.Part {
	switch {
	case p.Text != nil:
		return history.Part{Type: history.PartText, Text: *p.Text}
	case p.Image != nil:
		part := history.Part{Type: history.PartImage, Detail: p.Image.Detail}
		if len(p.Image.Data) > 0 {
			part.Width, part.Height = media.ImageSize(p.Image.Data)
		}
		return part
	case p.File != nil:
		return history.Part{Type: history.PartFile, MIMEType: p.File.MimeType, Size: int64(len(p.File.Data))}
	case p.Audio != nil:
		return history.Part{Type: history.PartFile, Size: int64(len(p.Audio.Data))}
	case p.Video != nil:
		return history.Part{Type: history.PartFile, Size: int64(len(p.Video.Data))}
	}
	return history.Part{Type: history.PartText}
}

// markNotices marks as history.KindBreadcrumb the messages that read
// exactly as a notice a trim with opts (or with the defaults) renders: a
// plain message of the notice's role and text (see notice.Mark).
func markNotices(msgs []history.Message, opts []history.Option) {
	notice.Mark(msgs, opts, readNotice, nil)
}

// readNotice returns the notice b as ToHistory reads it once rendered.
func readNotice(b history.Message) []history.Message {
	var cv converter
	m, _ := cv.message(ptr(fromNotice(b))) // a rendered notice always converts
	return []history.Message{m}
}

func ptr[T any](v T) *T { return &v }

// fromNotice renders the notice b as a plain message of its role.
func fromNotice(b history.Message) model.Message {
	role := adapt.ByRole(b.Role, model.RoleSystem, model.RoleUser, model.RoleAssistant)
	return model.Message{Role: role, Content: b.Content}
}

// apply maps the Result res over ToHistory(msgs) back onto msgs: the
// caller's values where the trim kept a message unchanged, a rendered
// notice where it inserted one, a copy of the original with the core's
// changes where it changed one. When nothing changed it returns msgs
// itself, clipped.
func apply(msgs []model.Message, res history.Result) []model.Message {
	return applyWindow(msgs, res, 0, 0)
}

// applyWindow is apply for a Result over the conversion of msgs[:p] and,
// when w > p, a stand-in the trim dropped and msgs[w:]: the Result's
// index k names msgs[k] below p and msgs[k+w-p-1] above p.
func applyWindow(msgs []model.Message, res history.Result, p, w int) []model.Message {
	if res.Kept == nil || w == p && len(res.Kept) == len(msgs) && len(res.Modified) == 0 && identity(res.Kept) {
		return msgs[:len(msgs):len(msgs)]
	}
	out := make([]model.Message, len(res.Kept))
	mod := res.Modified
	for j, i := range res.Kept {
		if i > p && w > p {
			i += w - p - 1
		}
		switch {
		case i < 0:
			out[j] = fromNotice(res.Messages[j])
		case len(mod) > 0 && mod[0] == j:
			mod = mod[1:]
			out[j] = rebuild(msgs[i], &res.Messages[j])
		default:
			out[j] = msgs[i]
		}
	}
	return out
}

func identity(kept []int) bool {
	for j, i := range kept {
		if i != j {
			return false
		}
	}
	return true
}

// rebuild returns a copy of u with what the core changed in m, the
// message it kept in u's place: an elided result's placeholder (as its
// Content, its parts dropped), or the tool calls the sweep left with the
// core's arguments. u's slices are not written to.
func rebuild(u model.Message, m *history.Message) model.Message {
	if m.Kind == history.KindElided {
		u.Content, u.ContentParts = m.Content, nil
		return u
	}
	u.ToolCalls = adapt.KeepCalls(u.ToolCalls, m, func(c *model.ToolCall) string { return c.ID },
		func(c *model.ToolCall, args string) {
			if string(c.Function.Arguments) != args {
				c.Function.Arguments = []byte(args)
			}
		})
	return u
}
