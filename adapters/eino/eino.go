package eino

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/mediapart"
	"github.com/histrim/history/internal/notice"
)

// KindKey is the key in schema.Message.Extra that carries a history.Kind:
// "breadcrumb", "summary" or "nudge" (a string), or "elided" on a tool
// message whose content Trim replaced by a placeholder. Any other value is
// rejected by Trim with an error wrapping history.ErrInvalidMessage.
const KindKey = "histrim_kind"

// Sentinel errors. Test with errors.Is; errors.As with *PairingError gives
// the position of a pairing violation.
var (
	// ErrInvalidMessage is wrapped by the errors ToHistory and Trim return
	// for messages they cannot convert: a nil message, an unknown role, or
	// an Extra[KindKey] that is not a string.
	ErrInvalidMessage = errors.New("history/eino: invalid message")
	// ErrUnpaired is wrapped by *PairingError, which Validate returns.
	ErrUnpaired = errors.New("history/eino: tool calls and results are not paired")
)

// MessageError reports a message the adapter cannot convert: a nil message,
// an unknown role, or an Extra[KindKey] that is not a string. It wraps
// [history.ErrInvalidMessage] and ErrInvalidMessage. Index is the position
// of the offending message, Reason says what is wrong with it.
type MessageError = adapt.MessageError

// codec is the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways.
var codec = &adapt.Codec[struct{}, *schema.Message]{
	Name: "eino", Noun: "message",
	Convert: func(_ struct{}, msgs []*schema.Message, opts []history.Option) (*adapt.View[*schema.Message], error) {
		hist, err := toHistory(msgs, opts)
		if err != nil {
			return nil, err
		}
		return adapt.OneForOne(msgs, hist, breadcrumb, elide, calls), nil
	},
}

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
func NewTrimmer(opts ...history.Option) *Trimmer {
	return &Trimmer{t: codec.NewTrimmer(struct{}{}, opts)}
}

//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system struct{} -message *schema.Message

// Conversations trims many conversations, each with its own Trimmer, whose
// state it keeps in a history.StateStore shared by a runtime's replicas
// (history.Conversations over this package's messages): a conversation's
// requests send the prompts of one process wherever they land. Its
// methods are Fit and Observe (the door), Trim(ctx, key, transcript, budget), RecoverOverflow(ctx,
// key, transcript, providerErr, attempt), Reset, Forget, Close and
// RecallStore; its fields OnState, MaxConversations and IdleAfter. See
// docs/replicas.md.
type Conversations struct {
	*adapt.Conversations[struct{}, *schema.Message]
}

// NewConversations returns Conversations that keep their state in store
// and trim with opts (those of NewTrimmer, the same on every replica).
func NewConversations(store history.StateStore, opts ...history.Option) *Conversations {
	return &Conversations{adapt.NewConversations(codec, struct{}{}, store, opts)}
}

// Positions returns where msgs[i], for each index i, landed in the output
// of the Trim or RecoverOverflow of msgs that returned res: the index to
// pin it at (history.WithPin) when that output is trimmed again; -1 for a
// message the output does not hold.
func Positions(msgs []*schema.Message, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// ToHistory converts msgs to the messages the core trimmer works on, one for
// one. The result carries what the trimmer needs to count and pair, not the
// payload (base64 data is reduced to its size and an image's dimensions), so
// converting back is done with Trim, which returns the caller's originals.
// A message without Extra[KindKey] that holds exactly the text of a default
// notice is marked history.KindBreadcrumb (see the package documentation);
// Trim also recognises the notices its options configure. ToHistory never
// modifies msgs.
func ToHistory(msgs []*schema.Message) ([]history.Message, error) {
	return toHistory(msgs, nil)
}

// toHistory implements ToHistory, recognising the notices a trim with opts
// inserts.
func toHistory(msgs []*schema.Message, opts []history.Option) ([]history.Message, error) {
	out := make([]history.Message, len(msgs))
	for i, m := range msgs {
		if m == nil {
			return nil, adapt.Invalid("eino", "message", ErrInvalidMessage, i, "nil message")
		}
		var err error
		if out[i], err = convert(m); err != nil {
			return nil, adapt.Invalid("eino", "message", ErrInvalidMessage, i, err.Error())
		}
	}
	// Notices carry Extra[KindKey]; one stored without it is recognised by
	// how it converts (see notice.Mark).
	notice.Mark(out, opts, readNotice, func(i int) bool {
		_, marked := msgs[i].Extra[KindKey]
		return !marked
	})
	return out, nil
}

// readNotice returns the notice b as ToHistory reads it once Trim has
// rendered it and a runtime has stored it without its Extra.
func readNotice(b history.Message) []history.Message {
	n := breadcrumb(b)
	n.Extra = nil
	m, _ := convert(n) // a rendered notice always converts
	return []history.Message{m}
}

// Trim trims msgs to budget tokens as history.TrimToRecentTurns decides it
// (the longest suffix of whole turns that fits together with the leading
// system messages, pinned summaries and a breadcrumb, and under
// history.WithElision and history.WithStepTrim the rest of the degradation
// ladder), applied to the caller's own messages with history.Apply (see the
// package documentation). opts are the core's options
// (history.WithCounter, history.WithOnTrim, ...).
//
// The Result is the core's: Result.Kept indexes msgs (-1 for a notice) and
// Result.Messages corresponds element for element to the returned
// messages, which convert back (ToHistory) to messages that count exactly
// as Result.Messages, so they fit the budget whenever the Result does.
//
// Errors: a conversion error is a *MessageError (wrapping
// history.ErrInvalidMessage and ErrInvalidMessage) and comes with an empty
// Result; otherwise the error is the core's (history.ErrInvalidBudget,
// *history.MessageError, or a *history.BudgetError wrapping
// history.ErrLatestTurnTooLarge that comes with usable messages and Result).
// When nothing needs trimming or sweeping, Trim returns msgs itself, clipped
// to its length.
func Trim(msgs []*schema.Message, budget int, opts ...history.Option) ([]*schema.Message, history.Result, error) {
	return codec.Trim(struct{}{}, msgs, budget, opts)
}

// elide returns a shallow copy of the tool message m whose Content is the
// placeholder of e, the elided message the core kept, and which holds no
// other content (multi-content parts, reasoning): its ToolCallID,
// ToolName, Name and ResponseMeta are kept, and its Extra is a copy with
// Extra[KindKey] = "elided", so a later trim knows it. m is not modified.
func elide(m *schema.Message, e *history.Message) *schema.Message {
	c := *m
	c.Content = e.Content
	c.MultiContent = nil
	c.UserInputMultiContent = nil
	c.AssistantGenMultiContent = nil
	c.ReasoningContent = ""
	c.Extra = make(map[string]any, len(m.Extra)+1)
	for k, v := range m.Extra {
		c.Extra[k] = v
	}
	c.Extra[KindKey] = string(history.KindElided)
	return &c
}

// calls returns a shallow copy of m holding the tool calls of e, the
// message the core kept (matched by ID): the calls the orphan sweep left,
// as the caller's ToolCall values (Extra, Index and Type kept), each with
// e's arguments, which differ from the caller's only where
// history.ElideOptions.ClearArguments cleared them.
func calls(m *schema.Message, e *history.Message) *schema.Message {
	keep := make(map[string]string, len(e.ToolCalls)) // arguments by call ID
	for _, k := range e.ToolCalls {
		keep[k.ID] = k.Arguments
	}
	c := *m
	c.ToolCalls = make([]schema.ToolCall, 0, len(e.ToolCalls))
	for _, tc := range m.ToolCalls {
		if args, ok := keep[tc.ID]; ok {
			tc.Function.Arguments = args // tc is a copy
			c.ToolCalls = append(c.ToolCalls, tc)
			delete(keep, tc.ID) // the first call of an ID, as the core pairs it
		}
	}
	if len(c.ToolCalls) == 0 {
		c.ToolCalls = nil
	}
	return &c
}

// breadcrumb renders the breadcrumb message the trimmer inserted.
func breadcrumb(m history.Message) *schema.Message {
	return &schema.Message{
		Role:    schema.RoleType(m.Role),
		Content: m.Content,
		Name:    m.Name,
		Extra:   map[string]any{KindKey: string(history.KindBreadcrumb)},
	}
}

func convert(m *schema.Message) (history.Message, error) {
	h := history.Message{Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
	switch m.Role {
	case schema.System, schema.User, schema.Assistant, schema.Tool:
		h.Role = history.Role(m.Role)
	default:
		return h, errors.New("unknown role " + strconv.Quote(string(m.Role)))
	}
	if m.Role == schema.Tool && m.ToolName != "" {
		h.Name = m.ToolName
	}
	if v, ok := m.Extra[KindKey]; ok {
		s, ok := v.(string)
		if !ok {
			return h, fmt.Errorf("value of Extra key %q is a %T, not a string", KindKey, v)
		}
		h.Kind = history.Kind(s)
	}
	if m.ReasoningContent != "" {
		h.Parts = append(h.Parts, history.Part{Type: history.PartReasoning, Text: m.ReasoningContent})
	}
	for _, p := range m.MultiContent {
		switch {
		case p.ImageURL != nil:
			h.Parts = append(h.Parts, mediapart.URL(p.ImageURL.URL, p.ImageURL.MIMEType, string(p.ImageURL.Detail), true))
		case p.AudioURL != nil:
			h.Parts = append(h.Parts, mediapart.URL(p.AudioURL.URL, p.AudioURL.MIMEType, "", false))
		case p.VideoURL != nil:
			h.Parts = append(h.Parts, mediapart.URL(p.VideoURL.URL, p.VideoURL.MIMEType, "", false))
		case p.FileURL != nil:
			h.Parts = append(h.Parts, mediapart.URL(p.FileURL.URL, p.FileURL.MIMEType, "", false))
		case p.Text != "":
			h.Parts = append(h.Parts, history.Part{Type: history.PartText, Text: p.Text})
		}
	}
	for _, p := range m.UserInputMultiContent {
		switch {
		case p.Image != nil:
			h.Parts = append(h.Parts, commonPart(p.Image.MessagePartCommon, string(p.Image.Detail), true))
		case p.Audio != nil:
			h.Parts = append(h.Parts, commonPart(p.Audio.MessagePartCommon, "", false))
		case p.Video != nil:
			h.Parts = append(h.Parts, commonPart(p.Video.MessagePartCommon, "", false))
		case p.File != nil:
			h.Parts = append(h.Parts, commonPart(p.File.MessagePartCommon, "", false))
		case p.Text != "":
			h.Parts = append(h.Parts, history.Part{Type: history.PartText, Text: p.Text})
		}
	}
	for _, p := range m.AssistantGenMultiContent {
		switch {
		case p.Image != nil:
			h.Parts = append(h.Parts, commonPart(p.Image.MessagePartCommon, "", true))
		case p.Audio != nil:
			h.Parts = append(h.Parts, commonPart(p.Audio.MessagePartCommon, "", false))
		case p.Video != nil:
			h.Parts = append(h.Parts, commonPart(p.Video.MessagePartCommon, "", false))
		case p.Text != "":
			h.Parts = append(h.Parts, history.Part{Type: history.PartText, Text: p.Text})
		}
	}
	if len(m.ToolCalls) > 0 {
		h.ToolCalls = make([]history.ToolCall, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			h.ToolCalls[i] = history.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
	return h, nil
}

// commonPart describes a multi-content part of eino's newer kind: inline
// base64 data, a URL (a data URL read as inline data) or neither.
func commonPart(c schema.MessagePartCommon, detail string, image bool) history.Part {
	switch {
	case c.Base64Data != nil:
		return mediapart.Base64(c.MIMEType, *c.Base64Data, detail, image)
	case c.URL != nil:
		return mediapart.URL(*c.URL, c.MIMEType, detail, image)
	}
	return mediapart.URL("", c.MIMEType, detail, image)
}
