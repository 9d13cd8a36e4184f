package langchaingo

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/mediapart"
	"github.com/histrim/history/internal/regroup"
	"github.com/tmc/langchaingo/llms"
)

// Sentinel errors. Test with errors.Is; errors.As with *PairingError gives
// the position of a pairing violation.
var (
	// ErrInvalidMessage is wrapped by the errors ToHistory and Trim return
	// for messages they cannot convert: an unknown or legacy function role,
	// a nil part, tool calls outside AI messages, or tool responses outside
	// tool messages.
	ErrInvalidMessage = errors.New("history/langchaingo: invalid message")
	// ErrUnpaired is wrapped by *PairingError, which Validate returns.
	ErrUnpaired = errors.New("history/langchaingo: tool calls and responses are not paired")
)

// ToHistory converts msgs to the messages the core trimmer works on: one per
// message, except that a tool message becomes one message per response (and
// one nudge for its other parts). See the package documentation for the
// mapping. The result carries what the trimmer needs to count and pair, not
// the payload, so converting back is done with Trim, which returns the
// caller's originals. Notices a trim with default options inserts are
// marked history.KindBreadcrumb (see the package documentation); Trim also
// recognises the notices its options configure. ToHistory never modifies
// msgs.
func ToHistory(msgs []llms.MessageContent) ([]history.Message, error) {
	out, _, err := convert(msgs, nil)
	return out, err
}

// Trim trims msgs to budget tokens as history.TrimToRecentTurns decides it
// (the longest suffix of whole turns that fits together with the leading
// system messages and a breadcrumb, and under history.WithElision and
// history.WithStepTrim the rest of the degradation ladder), mapped back
// onto the caller's own messages (see the package documentation). opts are
// the core's options (history.WithCounter, history.WithOnTrim, ...);
// history.WithPin takes indices into msgs, and Trim pins every message a
// pinned native message converts to (see Pins in the package
// documentation).
//
// The Result is the core's, computed on ToHistory(msgs): Result.Kept
// indexes those messages (-1 for a notice), which are one for one with msgs
// unless a tool message holds several responses, and Result.Messages
// follows the order of the returned messages. The returned messages convert
// back (ToHistory) to messages that count exactly as Result.Messages, so
// they fit the budget whenever the Result does.
//
// Errors: a conversion error wraps ErrInvalidMessage and comes with an empty
// Result, and so does a *history.OptionError for a pin Trim cannot honour
// (its reason names the index in msgs); otherwise the error is the core's (history.ErrInvalidBudget,
// *history.MessageError, or a *history.BudgetError wrapping
// history.ErrLatestTurnTooLarge that comes with usable messages and Result).
// When nothing needs trimming or sweeping, Trim returns msgs itself, clipped
// to its length.
func Trim(msgs []llms.MessageContent, budget int, opts ...history.Option) ([]llms.MessageContent, history.Result, error) {
	return codec.Trim(struct{}{}, msgs, budget, opts)
}

// MessageError reports a message the adapter cannot convert: an unknown or
// legacy function role, a nil part, tool calls outside AI messages, or
// tool responses outside tool messages. It wraps
// [history.ErrInvalidMessage] and ErrInvalidMessage. Index is the position
// of the message, Reason says what is wrong with it (and in which part).
type MessageError = adapt.MessageError

// codec is the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways, and the reader of the
// errors LangChainGo's models return (see IsContextOverflow).
var codec = &adapt.Codec[struct{}, llms.MessageContent]{
	Name: "langchaingo", Noun: "message",
	Convert: func(_ struct{}, msgs []llms.MessageContent, opts []history.Option) (*adapt.View[llms.MessageContent], error) {
		conv, slots, err := convert(msgs, opts)
		if err != nil {
			return nil, err
		}
		notice := func(b history.Message, _ *regroup.Group) llms.MessageContent { return breadcrumb(b) }
		return adapt.Grouped(msgs, conv, 0, slots, notice, cutDown), nil
	},
	Overflow: forClassifier,
}

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
func NewTrimmer(opts ...history.Option) *Trimmer {
	return &Trimmer{t: codec.NewTrimmer(struct{}{}, opts)}
}

//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system struct{} -message llms.MessageContent

// Conversations trims many conversations, each with its own Trimmer, whose
// state it keeps in a history.StateStore shared by a runtime's replicas
// (history.Conversations over this package's messages): a conversation's
// requests send the prompts of one process wherever they land. Its
// methods are Fit and Observe (the door), Trim(ctx, key, transcript, budget), RecoverOverflow(ctx,
// key, transcript, providerErr, attempt), Reset, Forget, Close and
// RecallStore; its fields OnState, MaxConversations and IdleAfter. See
// docs/replicas.md.
type Conversations struct {
	*adapt.Conversations[struct{}, llms.MessageContent]
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
func Positions(msgs []llms.MessageContent, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// cutDown returns a new message with the parts of m that g keeps, in their
// original order, the responses g elided replaced by their placeholder and
// the calls whose arguments g clears carrying the new arguments; false if
// none is left.
func cutDown(m llms.MessageContent, g *regroup.Group) (llms.MessageContent, bool) {
	parts := regroup.KeptParts(g, regroup.WithArgs(g, m.Parts, withArguments), elide)
	return llms.MessageContent{Role: m.Role, Parts: parts}, len(parts) > 0
}

// withArguments returns part, an llms.ToolCall possibly wrapped in
// llms.CachedContent, with its function's Arguments replaced by args: a
// new FunctionCall (the caller's is not modified), its ID, Type, Name and
// cache-control wrappers kept.
func withArguments(part llms.ContentPart, args string) llms.ContentPart {
	return inside(part, func(p llms.ContentPart) llms.ContentPart {
		x, ok := p.(llms.ToolCall)
		if !ok {
			return p // not reached: only calls have arguments
		}
		fc := llms.FunctionCall{Arguments: args}
		if x.FunctionCall != nil {
			fc.Name = x.FunctionCall.Name
		}
		x.FunctionCall = &fc
		return x
	})
}

// inside returns part with the part it wraps in llms.CachedContent, or
// part itself when it wraps none, replaced by f of it.
func inside(part llms.ContentPart, f func(llms.ContentPart) llms.ContentPart) llms.ContentPart {
	if c, ok := part.(llms.CachedContent); ok {
		c.ContentPart = inside(c.ContentPart, f)
		return c
	}
	return f(part)
}

// elide returns part, an llms.ToolCallResponse possibly wrapped in
// llms.CachedContent, with the response's Content replaced by text: its
// ToolCallID, Name and cache-control wrappers are kept.
func elide(part llms.ContentPart, text string) llms.ContentPart {
	return inside(part, func(p llms.ContentPart) llms.ContentPart {
		if x, ok := p.(llms.ToolCallResponse); ok {
			x.Content = text
			return x
		}
		return p // not reached: only responses are elided
	})
}

// breadcrumb renders a notice the trimmer inserted.
func breadcrumb(m history.Message) llms.MessageContent {
	role := adapt.ByRole(m.Role, llms.ChatMessageTypeSystem, llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI)
	return llms.MessageContent{Role: role, Parts: []llms.ContentPart{llms.TextContent{Text: m.Content}}}
}

// convert maps msgs to messages and their slots, recognising the notices a
// trim with opts inserts (see notice.Mark): a message of the notice's role
// holding one text part with exactly its text (a cache-control wrapper is
// allowed).
func convert(msgs []llms.MessageContent, opts []history.Option) ([]history.Message, []regroup.Slot, error) {
	return adapt.Marked(msgs, opts, convertMessages, breadcrumb, func(m llms.MessageContent) bool { return len(m.Parts) == 1 })
}

// convertMessages is convert without the recognition of notices.
func convertMessages(msgs []llms.MessageContent) ([]history.Message, []regroup.Slot, error) {
	out := make([]history.Message, 0, len(msgs))
	slots := make([]regroup.Slot, 0, len(msgs))
	for i, mc := range msgs {
		var role history.Role
		switch mc.Role {
		case llms.ChatMessageTypeSystem:
			role = history.RoleSystem
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			role = history.RoleUser
		case llms.ChatMessageTypeAI:
			role = history.RoleAssistant
		case llms.ChatMessageTypeTool:
			role = history.RoleTool
		case llms.ChatMessageTypeFunction:
			return nil, nil, msgErr(i, -1, "legacy function messages carry no call id; use tool calls")
		default:
			return nil, nil, msgErr(i, -1, "unknown role "+strconv.Quote(string(mc.Role)))
		}
		if role != history.RoleTool {
			m := history.Message{Role: role}
			s := regroup.Slot{Native: i} // every part
			for p, part := range mc.Parts {
				if isCall(part) {
					s.Calls = append(s.Calls, p)
				}
				if err := addPart(&m, part, i, p); err != nil {
					return nil, nil, err
				}
			}
			out = append(out, m)
			slots = append(slots, s)
			continue
		}
		// A tool message: one tool message per response, the other parts
		// as a nudge placed where its first part stands.
		nudge := -1
		for p, part := range mc.Parts {
			if r, ok := unwrap(part).(llms.ToolCallResponse); ok {
				out = append(out, history.Message{Role: history.RoleTool, ToolCallID: r.ToolCallID, Name: r.Name, Content: r.Content})
				slots = append(slots, regroup.Slot{Native: i, Parts: []int{p}})
				continue
			}
			if nudge < 0 {
				nudge = len(out)
				out = append(out, history.Message{Role: history.RoleUser, Kind: history.KindNudge})
				slots = append(slots, regroup.Slot{Native: i, Parts: []int{}})
			}
			if err := addPart(&out[nudge], part, i, p); err != nil {
				return nil, nil, err
			}
			slots[nudge].Parts = append(slots[nudge].Parts, p)
		}
	}
	return out, slots, nil
}

// unwrap returns the part a CachedContent wraps, or part itself.
func unwrap(part llms.ContentPart) llms.ContentPart {
	for {
		c, ok := part.(llms.CachedContent)
		if !ok {
			return part
		}
		part = c.ContentPart
	}
}

func isCall(part llms.ContentPart) bool {
	_, ok := unwrap(part).(llms.ToolCall)
	return ok
}

// addPart adds what part costs to m.
func addPart(m *history.Message, part llms.ContentPart, i, p int) error {
	switch x := unwrap(part).(type) {
	case nil:
		return msgErr(i, p, "nil part")
	case llms.TextContent:
		if x.Text != "" {
			if m.Content != "" {
				m.Content += "\n"
			}
			m.Content += x.Text
		}
	case llms.ImageURLContent:
		m.Parts = append(m.Parts, mediapart.URL(x.URL, "", x.Detail, true))
	case llms.BinaryContent:
		m.Parts = append(m.Parts, mediapart.Blob(x.MIMEType, x.Data))
	case llms.ToolCall:
		if m.Role != history.RoleAssistant {
			return msgErr(i, p, "tool call in a "+string(m.Role)+" message")
		}
		tc := history.ToolCall{ID: x.ID}
		if x.FunctionCall != nil {
			tc.Name, tc.Arguments = x.FunctionCall.Name, x.FunctionCall.Arguments
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	case llms.ToolCallResponse:
		return msgErr(i, p, "tool response in a "+string(m.Role)+" message")
	default:
		// A part type this package does not know: count what its
		// String method shows, if it has one.
		if s, ok := x.(fmt.Stringer); ok {
			m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: s.String()})
		}
	}
	return nil
}

// msgErr is the *MessageError for part p of message i (p < 0: the
// message).
func msgErr(i, p int, reason string) error {
	if p >= 0 {
		reason = "part " + strconv.Itoa(p) + ": " + reason
	}
	return adapt.Invalid("langchaingo", "message", ErrInvalidMessage, i, reason)
}
