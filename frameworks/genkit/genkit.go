package genkit

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/firebase/genkit/go/ai"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/mediapart"
	"github.com/histrim/history/internal/regroup"
)

// MessageError reports a message the adapter cannot convert: a nil
// message or part, an unknown role, a tool request outside a model
// message, a tool response outside a tool message, a tool request or
// response part without its payload (a nil ToolRequest or ToolResponse),
// a tool request whose input does not encode as JSON. It wraps
// [history.ErrInvalidMessage]. Index is the position of the message in
// the caller's slice, Reason says what is wrong with it.
type MessageError = adapt.MessageError

// codec is the module's part of the shape every adapter shares
// (internal/adapt, docs/adapters.md): the conversion both ways.
var codec = &adapt.Codec[struct{}, *ai.Message]{
	Name: "genkit", Noun: "message",
	Convert: func(_ struct{}, msgs []*ai.Message, opts []history.Option) (*adapt.View[*ai.Message], error) {
		hist, slots, err := convert(msgs, opts)
		if err != nil {
			return nil, err
		}
		notice := func(b history.Message, _ *regroup.Group) *ai.Message { return fromNotice(b) }
		return adapt.Grouped(msgs, hist, 0, slots, notice, cut), nil
	},
}

// ToHistory converts msgs to the library's messages (see the package
// documentation for the mapping): one per message, but that a tool
// message becomes one tool message per response, plus a nudge holding its
// other parts. The result is for deciding, not for sending: media is
// reduced to its size and an image's to its dimensions. The notices a
// trim with default options inserts are marked history.KindBreadcrumb.
// ToHistory never modifies msgs; a message it cannot convert gives a nil
// slice and a *MessageError.
func ToHistory(msgs []*ai.Message) ([]history.Message, error) {
	out, _, err := convert(msgs, nil)
	return out, err
}

// convert is ToHistory, recognising the notices a trim with opts inserts,
// and returning where each converted message comes from.
//
// Genkit's tool requests carry a Ref only when the provider gave the call
// an id, and Gemini gives none: a response answers the call of the model
// message before it with its Ref, or else the first unanswered call with
// its name, as Gemini pairs them. Calls and responses are given the ids
// that express it ("#c" and the message and part index), so that the
// core's id-based orphan sweep applies that rule; a response that answers
// nothing gets an id no call has.
func convert(msgs []*ai.Message, opts []history.Option) ([]history.Message, []regroup.Slot, error) {
	return adapt.Marked(msgs, opts, convertMessages, fromNotice, nil)
}

// invalid is the *MessageError for msgs[i].
func invalid(i int, reason string) error {
	return adapt.Invalid("genkit", "message", nil, i, reason)
}

// convertMessages is convert without the recognition of notices.
func convertMessages(msgs []*ai.Message) ([]history.Message, []regroup.Slot, error) {
	out := make([]history.Message, 0, len(msgs))
	slots := make([]regroup.Slot, 0, len(msgs))
	var open []history.ToolCall // the unanswered calls of the latest model message
	for i, m := range msgs {
		if m == nil {
			return nil, nil, invalid(i, "nil message")
		}
		var hs []history.Message
		var ss []regroup.Slot
		var err error
		switch m.Role {
		case ai.RoleTool:
			hs, ss, err = toolMessages(m, i, &open)
		case ai.RoleSystem, ai.RoleUser, ai.RoleModel:
			var h history.Message
			h, err = toMessage(m, i)
			hs, ss = []history.Message{h}, []regroup.Slot{{Native: i, Calls: calls(m)}}
			if m.Role == ai.RoleModel {
				open = append(open[:0], h.ToolCalls...)
			} else {
				open = open[:0]
			}
		default:
			err = errors.New("unknown role " + strconv.Quote(string(m.Role)))
		}
		if err != nil {
			return nil, nil, invalid(i, err.Error())
		}
		out, slots = append(out, hs...), append(slots, ss...)
	}
	return out, slots, nil
}

// calls returns the indices of m's tool request parts.
func calls(m *ai.Message) []int {
	var out []int
	for k, p := range m.Content {
		if p != nil && p.IsToolRequest() {
			out = append(out, k)
		}
	}
	return out
}

// toMessage converts a system, user or model message.
func toMessage(m *ai.Message, i int) (history.Message, error) {
	h := history.Message{Role: history.RoleUser}
	switch m.Role {
	case ai.RoleSystem:
		h.Role = history.RoleSystem
	case ai.RoleModel:
		h.Role = history.RoleAssistant
	}
	for k, p := range m.Content {
		switch {
		case p == nil:
			return h, errors.New("part " + strconv.Itoa(k) + " is nil")
		case p.IsToolRequest():
			if m.Role != ai.RoleModel {
				return h, errors.New("a tool request in a " + string(m.Role) + " message")
			}
			if p.ToolRequest == nil {
				return h, errors.New("tool request " + strconv.Itoa(k) + " has no payload (ToolRequest is nil)")
			}
			args, err := json.Marshal(p.ToolRequest.Input)
			if err != nil {
				return h, errors.New("tool request " + strconv.Itoa(k) + ": " + err.Error())
			}
			h.ToolCalls = append(h.ToolCalls, history.ToolCall{ID: callID(i, k), Name: p.ToolRequest.Name, Arguments: string(args)})
		case p.IsToolResponse():
			return h, errors.New("a tool response in a " + string(m.Role) + " message")
		case p.IsText() && len(m.Content) == 1:
			h.Content = p.Text // the common shape, and the one notices are read in
		default:
			h.Parts = append(h.Parts, toPart(p))
		}
	}
	return h, nil
}

// callID is the id a converted call gets: its message and part.
func callID(msg, part int) string { return "#c" + strconv.Itoa(msg) + "." + strconv.Itoa(part) }

// toolMessages converts a tool message: one tool message per response,
// paired with the open calls of the model message before it, and one user
// message of history.KindNudge for its other parts.
func toolMessages(m *ai.Message, i int, open *[]history.ToolCall) ([]history.Message, []regroup.Slot, error) {
	var out []history.Message
	var slots []regroup.Slot
	other := []int{}
	nudge := history.Message{Role: history.RoleUser, Kind: history.KindNudge}
	for k, p := range m.Content {
		switch {
		case p == nil:
			return nil, nil, errors.New("part " + strconv.Itoa(k) + " is nil")
		case p.IsToolRequest():
			return nil, nil, errors.New("a tool request in a tool message")
		case !p.IsToolResponse():
			other = append(other, k)
			nudge.Parts = append(nudge.Parts, toPart(p))
			continue
		}
		r := p.ToolResponse
		if r == nil {
			return nil, nil, errors.New("tool response " + strconv.Itoa(k) + " has no payload (ToolResponse is nil)")
		}
		h := history.Message{Role: history.RoleTool, ToolCallID: "#r" + strconv.Itoa(i) + "." + strconv.Itoa(k), Name: r.Name}
		if j := answers(*open, r); j >= 0 {
			h.ToolCallID = (*open)[j].ID
			if j == 0 {
				*open = (*open)[1:] // the usual order: no copy, so that n responses cost O(n)
			} else {
				*open = slices.Delete(*open, j, j+1) // open is the converter's own copy
			}
		}
		if s, ok := r.Output.(string); ok {
			h.Content = s
		} else if b, err := json.Marshal(r.Output); err == nil {
			h.Content = string(b)
		}
		for _, c := range r.Content {
			if c != nil {
				h.Parts = append(h.Parts, toPart(c))
			}
		}
		out = append(out, h)
		slots = append(slots, regroup.Slot{Native: i, Parts: []int{k}})
	}
	out, slots = adapt.WithNudge(out, slots, i, other, nudge)
	return out, slots, nil
}

// answers returns the index in open of the first call with r's name, the
// call a response answers as Gemini pairs them (by name and order: the
// googlegenai plugin sends no ids, and r.Ref is Genkit's own); -1 when
// none.
func answers(open []history.ToolCall, r *ai.ToolResponse) int {
	for j, c := range open {
		if c.Name == r.Name {
			return j
		}
	}
	return -1
}

// toPart converts a part that is not a tool request or response: text
// and data as text, reasoning as reasoning, media as an image (its
// dimensions read from an inline data URL) or a file, anything else as
// the text of its JSON.
func toPart(p *ai.Part) history.Part {
	switch {
	case p.IsReasoning():
		return history.Part{Type: history.PartReasoning, Text: p.Text}
	case p.IsText(), p.IsData():
		return history.Part{Type: history.PartText, Text: p.Text}
	case p.IsMedia():
		return media(p.ContentType, p.Text)
	}
	b, _ := json.Marshal(p) // a part that does not encode counts as nothing
	return history.Part{Type: history.PartText, Text: string(b)}
}

// media converts a media part: an image of the size its inline data
// states, or priced at its largest; other media by its size.
func media(contentType, url string) history.Part {
	return mediapart.URL(url, contentType, "", false)
}

// fromNotice renders the notice b as a message of its role (a user
// message for an assistant notice: the latest turn always opens with a
// user message, and a model message before it would make two in a row)
// holding one text part.
func fromNotice(b history.Message) *ai.Message {
	role := ai.RoleUser
	if b.Role == history.RoleSystem {
		role = ai.RoleSystem
	}
	return ai.NewMessage(role, nil, ai.NewTextPart(b.Content))
}

// Trim trims msgs to budget tokens with history.TrimToRecentTurns and
// returns the caller's messages the trim kept, in order, with the notices
// it inserted as messages holding one text part. res is the core's Result
// over ToHistory(msgs).
//
// Kept messages are the caller's pointers; a message the trim changed is
// a new message of the same role and metadata over the caller's remaining
// parts, in their order: a tool message some of whose responses were
// swept (they answered nothing) or elided (a copy of the part whose
// response's output is the placeholder), a model message whose unanswered
// requests were stripped (or whose inputs
// history.ElideOptions.ClearArguments cleared: copies of those parts with
// the core's arguments as input). When nothing needs trimming or
// sweeping, the result is msgs itself, clipped.
//
// Errors: a *MessageError when msgs cannot be converted; otherwise the
// core's, with nil messages, except a *history.BudgetError (the latest
// turn alone exceeds the budget), which comes with the trimmed messages
// and res, as the core returns it.
func Trim(msgs []*ai.Message, budget int, opts ...history.Option) ([]*ai.Message, history.Result, error) {
	return codec.Trim(struct{}{}, msgs, budget, opts)
}

// RecoverOverflow trims msgs after the provider rejected them for their
// length (for Gemini, HTTP 400 INVALID_ARGUMENT, "The input token count
// (N) exceeds the maximum number of tokens allowed (M)."), below the
// sizes the error states, so that the request can be retried; attempt is
// 1 for the first retry of a request and grows by one with each further
// rejection of it. Results and errors are history.RecoverOverflow's,
// mapped back as Trim maps them: history.ErrNotOverflow with msgs itself,
// clipped, a *history.RecoverError with what is left when nothing more
// can be dropped.
func RecoverOverflow(msgs []*ai.Message, providerErr error, attempt int, opts ...history.Option) ([]*ai.Message, history.Result, error) {
	return codec.RecoverOverflow(struct{}{}, msgs, providerErr, attempt, opts)
}

// cut returns a new message of m's role and metadata holding the parts of
// m that g keeps, in their order: elided responses replaced by copies
// holding the placeholder, the requests whose arguments g clears carrying
// the new input; false if none is left.
func cut(m *ai.Message, g *regroup.Group) (*ai.Message, bool) {
	parts := regroup.KeptParts(g, regroup.WithArgs(g, m.Content, withArguments), elide)
	return &ai.Message{Role: m.Role, Metadata: m.Metadata, Content: parts}, len(parts) > 0
}

// elide returns a copy of p, a tool response, with text as its output.
func elide(p *ai.Part, text string) *ai.Part {
	if !p.IsToolResponse() {
		return p // not reached: only responses are elided
	}
	c := *p
	c.ToolResponse = &ai.ToolResponse{Name: p.ToolResponse.Name, Ref: p.ToolResponse.Ref, Output: text}
	return &c
}

// withArguments returns a copy of p, a tool request, with args, a JSON
// object, as its input; p itself when args does not decode to one.
func withArguments(p *ai.Part, args string) *ai.Part {
	var input map[string]any
	if !p.IsToolRequest() || json.Unmarshal([]byte(args), &input) != nil {
		return p
	}
	c, r := *p, *p.ToolRequest
	r.Input = input
	c.ToolRequest = &r
	return &c
}
