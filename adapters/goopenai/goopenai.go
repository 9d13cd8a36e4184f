package goopenai

import (
	"errors"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/media"
	openai "github.com/sashabaranov/go-openai"
)

// legacyCallID pairs the deprecated function_call of an assistant message
// with the function-role message that answers it, as any tool call and
// its result.
const legacyCallID = "legacy_function_call"

// MessageError reports a message the adapter cannot convert: an unknown
// role, a tool call without an id or with an id its message already has,
// a tool message without a tool_call_id, Content and MultiContent both
// set. It wraps [history.ErrInvalidMessage]. Index is the position of the
// message in the caller's slice, Reason says what is wrong with it.
type MessageError = adapt.MessageError

// each is the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways, one message for one.
var each = &adapt.Each[openai.ChatCompletionMessage]{
	Name: "goopenai", Noun: "message",
	To: toMessage, Notice: fromNotice, Elide: elide, Calls: rebuildCalls,
}

var codec = each.Codec()

// NewTrimmer returns a Trimmer for one conversation that trims with opts,
// fixed for its life.
func NewTrimmer(opts ...history.Option) *Trimmer {
	return &Trimmer{t: codec.NewTrimmer(struct{}{}, opts)}
}

//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system struct{} -message openai.ChatCompletionMessage -params openai.ChatCompletionRequest -usage openai.Usage -conversations Conversations

// Conversations trims many conversations, each with its own Trimmer, whose
// state it keeps in a history.StateStore shared by a runtime's replicas
// (history.Conversations over this package's messages): a conversation's
// requests send the prompts of one process wherever they land. Its
// methods are Fit(ctx, key, params) and Observe(params, res, usage) (the
// door), Trim(ctx, key, transcript, budget), RecoverOverflow(ctx,
// key, transcript, providerErr, attempt), Reset, Forget, Close and
// RecallStore; its fields OnState, MaxConversations and IdleAfter. See
// docs/replicas.md.
type Conversations struct {
	*adapt.Conversations[struct{}, openai.ChatCompletionMessage]
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
func Positions(msgs []openai.ChatCompletionMessage, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// ToHistory converts msgs to the library's messages, one for one, so that
// indices into the result are indices into msgs (see the package
// documentation for the mapping). The result is for deciding, not for
// sending: image data is reduced to the image's dimensions. The notices a
// trim with default options inserts are marked history.KindBreadcrumb.
// ToHistory never modifies msgs; a message it cannot convert gives a nil
// slice and a *MessageError.
func ToHistory(msgs []openai.ChatCompletionMessage) ([]history.Message, error) {
	return each.Convert(msgs, nil)
}

// toMessage converts one message.
func toMessage(u *openai.ChatCompletionMessage) (history.Message, error) {
	if u.Content != "" && len(u.MultiContent) > 0 {
		return history.Message{}, errors.New("both Content and MultiContent are set (the client refuses to send it)")
	}
	m := history.Message{Content: u.Content, Name: u.Name}
	for _, p := range u.MultiContent {
		switch {
		case p.Type == openai.ChatMessagePartTypeImageURL && p.ImageURL != nil:
			w, h := imageSize(p.ImageURL.URL)
			m.Parts = append(m.Parts, history.Part{Type: history.PartImage, Width: w, Height: h, Detail: string(p.ImageURL.Detail)})
		default:
			m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: p.Text})
		}
	}
	switch u.Role {
	case openai.ChatMessageRoleSystem, openai.ChatMessageRoleDeveloper:
		m.Role = history.RoleSystem
	case openai.ChatMessageRoleUser:
		m.Role = history.RoleUser
	case openai.ChatMessageRoleAssistant:
		m.Role = history.RoleAssistant
		if u.Refusal != "" {
			m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: u.Refusal})
		}
		if u.ReasoningContent != "" {
			m.Parts = append(m.Parts, history.Part{Type: history.PartReasoning, Text: u.ReasoningContent})
		}
		for k, c := range u.ToolCalls {
			if c.ID == "" {
				return m, errors.New("tool call " + strconv.Itoa(k) + " has no id")
			}
			for _, d := range m.ToolCalls {
				if d.ID == c.ID {
					return m, errors.New("two tool calls with id " + strconv.Quote(c.ID))
				}
			}
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		if f := u.FunctionCall; f != nil {
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: legacyCallID, Name: f.Name, Arguments: f.Arguments})
		}
	case openai.ChatMessageRoleTool:
		if u.ToolCallID == "" {
			return m, errors.New("tool message without tool_call_id")
		}
		m.Role, m.ToolCallID = history.RoleTool, u.ToolCallID
	case openai.ChatMessageRoleFunction:
		m.Role, m.ToolCallID = history.RoleTool, legacyCallID
	default:
		return m, errors.New("unknown role " + strconv.Quote(u.Role))
	}
	return m, nil
}

// imageSize reads the dimensions of a base64 PNG, JPEG or GIF data URL
// from its header; 0, 0 for a remote URL or data it cannot read (the core
// then prices the image at its largest).
func imageSize(url string) (w, h int) {
	b64, _, ok := media.DataURL(url)
	if !ok {
		return 0, 0
	}
	return media.ImageSizeBase64(b64)
}

// fromNotice renders the notice b as a plain message of its role.
func fromNotice(b history.Message) openai.ChatCompletionMessage {
	role := adapt.ByRole(b.Role, openai.ChatMessageRoleSystem, openai.ChatMessageRoleUser, openai.ChatMessageRoleAssistant)
	return openai.ChatCompletionMessage{Role: role, Content: b.Content, Name: b.Name}
}

// Trim trims msgs to budget tokens with history.TrimToRecentTurns and
// returns the caller's messages the trim kept, in order, with the notices
// it inserted (dropped turns; dropped steps under history.WithStepTrim)
// as plain messages of their role. res is the core's Result over
// ToHistory(msgs), so res.Kept indexes msgs.
//
// Kept messages are the caller's values (sharing their MultiContent and
// ToolCalls slices); only two kinds are copies, the caller's untouched: an
// assistant message whose unanswered tool calls the orphan sweep stripped
// (or whose calls' arguments history.ElideOptions.ClearArguments cleared)
// holds the remaining calls, and a tool result history.WithElision elided
// holds the placeholder as its Content. When nothing needs trimming or
// sweeping, the result is msgs itself, clipped to its length.
//
// Errors: a *MessageError when msgs cannot be converted; otherwise the
// core's (history.ErrInvalidBudget, *history.OptionError, ...), with nil
// messages, except a *history.BudgetError (the latest turn alone exceeds
// the budget), which comes with the trimmed messages and res, as the core
// returns it.
func Trim(msgs []openai.ChatCompletionMessage, budget int, opts ...history.Option) ([]openai.ChatCompletionMessage, history.Result, error) {
	return codec.Trim(struct{}{}, msgs, budget, opts)
}

// elide returns a copy of the tool (or function) message u holding the
// placeholder of e, the elided result the core kept in its place: the
// placeholder as its Content, MultiContent nil. u is not modified.
func elide(u openai.ChatCompletionMessage, e *history.Message) openai.ChatCompletionMessage {
	u.Content, u.MultiContent = e.Content, nil
	return u
}

// rebuildCalls returns a copy of the assistant message u holding the tool
// calls of m, the message the core kept in its place (matched by id): the
// calls the orphan sweep left, each with m's arguments, which differ from
// the caller's only where history.ElideOptions.ClearArguments cleared
// them. u is not modified.
func rebuildCalls(u openai.ChatCompletionMessage, m *history.Message) openai.ChatCompletionMessage {
	u.ToolCalls = adapt.KeepCalls(u.ToolCalls, m, func(c *openai.ToolCall) string { return c.ID },
		func(c *openai.ToolCall, args string) { c.Function.Arguments = args })
	args := make(map[string]string, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		args[c.ID] = c.Arguments
	}
	if u.FunctionCall != nil {
		if a, ok := args[legacyCallID]; ok {
			f := *u.FunctionCall
			f.Arguments = a
			u.FunctionCall = &f
		} else {
			u.FunctionCall = nil
		}
	}
	return u
}
