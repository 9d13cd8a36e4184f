package genkit

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	_ "image/gif" // image headers: the dimensions of inline images
	_ "image/jpeg"
	_ "image/png"
	"strconv"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/histrim/history"
)

// MessageError reports a message the adapter cannot convert: a nil
// message or part, an unknown role, a tool request outside a model
// message, a tool response outside a tool message. It wraps
// [history.ErrInvalidMessage].
type MessageError struct {
	// Index is the position of the message in the caller's slice.
	Index int
	// Reason says what is wrong with it.
	Reason string
}

func (e *MessageError) Error() string {
	return "history/genkit: invalid message at index " + strconv.Itoa(e.Index) + ": " + e.Reason
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
func convert(msgs []*ai.Message, opts []history.Option) ([]history.Message, []slot, error) {
	out := make([]history.Message, 0, len(msgs))
	slots := make([]slot, 0, len(msgs))
	var open []history.ToolCall // the unanswered calls of the latest model message
	for i, m := range msgs {
		if m == nil {
			return nil, nil, &MessageError{Index: i, Reason: "nil message"}
		}
		var hs []history.Message
		var ss []slot
		var err error
		switch m.Role {
		case ai.RoleTool:
			hs, ss, err = toolMessages(m, i, &open)
		case ai.RoleSystem, ai.RoleUser, ai.RoleModel:
			var h history.Message
			h, err = toMessage(m, i)
			hs, ss = []history.Message{h}, []slot{{msg: i, parts: indices(len(m.Content))}}
			if m.Role == ai.RoleModel {
				open = append(open[:0], h.ToolCalls...)
			} else {
				open = open[:0]
			}
		default:
			err = errors.New("unknown role " + strconv.Quote(string(m.Role)))
		}
		if err != nil {
			return nil, nil, &MessageError{Index: i, Reason: err.Error()}
		}
		out, slots = append(out, hs...), append(slots, ss...)
	}
	markNotices(out, opts)
	return out, slots, nil
}

func indices(n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = k
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
func toolMessages(m *ai.Message, i int, open *[]history.ToolCall) ([]history.Message, []slot, error) {
	var out []history.Message
	var slots []slot
	var other []int
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
		h := history.Message{Role: history.RoleTool, ToolCallID: "#r" + strconv.Itoa(i) + "." + strconv.Itoa(k), Name: r.Name}
		if j := answers(*open, r); j >= 0 {
			h.ToolCallID = (*open)[j].ID
			*open = append((*open)[:j:j], (*open)[j+1:]...)
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
		slots = append(slots, slot{msg: i, parts: []int{k}})
	}
	if len(other) > 0 || len(out) == 0 {
		out = append(out, nudge)
		slots = append(slots, slot{msg: i, parts: other})
	}
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
	var data []byte
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if meta, b64, ok := strings.Cut(rest, ","); ok && strings.HasSuffix(meta, ";base64") {
			data, _ = base64.StdEncoding.DecodeString(b64)
			if contentType == "" {
				contentType = strings.TrimSuffix(meta, ";base64")
			}
		}
	}
	if strings.HasPrefix(contentType, "image/") {
		p := history.Part{Type: history.PartImage, MIMEType: contentType}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			p.Width, p.Height = cfg.Width, cfg.Height
		}
		return p
	}
	return history.Part{Type: history.PartFile, MIMEType: contentType, Size: int64(len(data))}
}

// markNotices marks as history.KindBreadcrumb the messages that read
// exactly as a notice a trim with opts (or with the defaults) renders: a
// message of the notice's role holding one text part with its text. The
// turn notice is recognised only in the leading block of system messages
// and right after it, where trims put it; the step notice anywhere.
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
	hist, slots, err := convert(msgs, opts)
	if err != nil {
		return nil, history.Result{}, err
	}
	res, err := history.RecoverOverflow(hist, providerErr, attempt, opts...)
	var cannot *history.RecoverError
	switch {
	case errors.Is(err, history.ErrNotOverflow):
		return msgs[:len(msgs):len(msgs)], res, err
	case err != nil && !errors.As(err, &cannot):
		return nil, res, err
	}
	return apply(msgs, slots, res), res, err
}

// apply maps res, a Result over the conversion of msgs whose slots are
// slots, back onto msgs: a native message whose converted messages are all
// kept unchanged, in a row, is the caller's pointer; one of which only
// some are kept, or changed, is a new message over the caller's parts; a
// notice is rendered.
func apply(msgs []*ai.Message, slots []slot, res history.Result) []*ai.Message {
	if res.Kept == nil {
		return msgs[:len(msgs):len(msgs)]
	}
	count := make([]int, len(msgs))
	for _, s := range slots {
		count[s.msg]++
	}
	modified := make(map[int]bool, len(res.Modified))
	for _, j := range res.Modified {
		modified[j] = true
	}
	out := make([]*ai.Message, 0, len(res.Kept))
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
			out = append(out, rebuild(msgs[n], n, slots, res, j, end, modified))
			same = false
		}
		j = end
	}
	if same && len(out) == len(msgs) {
		return msgs[:len(msgs):len(msgs)]
	}
	return out
}

// rebuild returns a new message of u's role and metadata holding the
// parts of u (msgs[n]) that res.Messages[j:end] kept, in their order.
func rebuild(u *ai.Message, n int, slots []slot, res history.Result, j, end int, modified map[int]bool) *ai.Message {
	out := &ai.Message{Role: u.Role, Metadata: u.Metadata}
	for ; j < end; j++ {
		m := &res.Messages[j]
		for _, k := range slots[res.Kept[j]].parts {
			p := u.Content[k]
			if modified[j] {
				var keep bool
				if p, keep = change(p, m, callID(n, k)); !keep {
					continue
				}
			}
			out.Content = append(out.Content, p)
		}
	}
	return out
}

// change returns the part p of a message the core changed into m: an
// elided response holding m's placeholder as its output, the tool request
// converted with the id id with m's arguments as its input, or dropped
// (keep false) when m no longer holds it.
func change(p *ai.Part, m *history.Message, id string) (*ai.Part, bool) {
	if p.IsToolResponse() && m.Kind == history.KindElided {
		c := *p
		c.ToolResponse = &ai.ToolResponse{Name: p.ToolResponse.Name, Ref: p.ToolResponse.Ref, Output: m.Content}
		return &c, true
	}
	if !p.IsToolRequest() {
		return p, true
	}
	for _, call := range m.ToolCalls {
		if call.ID != id {
			continue
		}
		args, _ := json.Marshal(p.ToolRequest.Input) // it encoded when converted
		var input map[string]any
		if string(args) == call.Arguments || json.Unmarshal([]byte(call.Arguments), &input) != nil {
			return p, true
		}
		c, r := *p, *p.ToolRequest
		r.Input = input
		c.ToolRequest = &r
		return &c, true
	}
	return nil, false
}
