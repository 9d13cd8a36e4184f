package goopenai

import (
	"encoding/base64"
	"errors"
	"image"
	_ "image/gif" // image headers: the dimensions of data-URL images
	_ "image/jpeg"
	_ "image/png"
	"strconv"
	"strings"

	"github.com/histrim/history"
	openai "github.com/sashabaranov/go-openai"
)

// legacyCallID pairs the deprecated function_call of an assistant message
// with the function-role message that answers it, as any tool call and
// its result.
const legacyCallID = "legacy_function_call"

// MessageError reports a message the adapter cannot convert: an unknown
// role, a tool call without an id or with an id its message already has,
// a tool message without a tool_call_id, Content and MultiContent both
// set. It wraps [history.ErrInvalidMessage].
type MessageError struct {
	// Index is the position of the message in the caller's slice.
	Index int
	// Reason says what is wrong with it.
	Reason string
}

func (e *MessageError) Error() string {
	return "history/goopenai: invalid message at index " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns history.ErrInvalidMessage.
func (e *MessageError) Unwrap() error { return history.ErrInvalidMessage }

// ToHistory converts msgs to the library's messages, one for one, so that
// indices into the result are indices into msgs (see the package
// documentation for the mapping). The result is for deciding, not for
// sending: image data is reduced to the image's dimensions. The notices a
// trim with default options inserts are marked history.KindBreadcrumb.
// ToHistory never modifies msgs; a message it cannot convert gives a nil
// slice and a *MessageError.
func ToHistory(msgs []openai.ChatCompletionMessage) ([]history.Message, error) {
	return convert(msgs, nil)
}

// convert is ToHistory, recognising the notices a trim with opts inserts.
func convert(msgs []openai.ChatCompletionMessage, opts []history.Option) ([]history.Message, error) {
	out := make([]history.Message, len(msgs))
	for i := range msgs {
		m, err := toMessage(&msgs[i])
		if err != nil {
			return nil, &MessageError{Index: i, Reason: err.Error()}
		}
		out[i] = m
	}
	markNotices(out, opts)
	return out, nil
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
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return 0, 0
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return 0, 0
	}
	const prefix = 1 << 16 // base64 characters: 48 KiB, past a JPEG's usual EXIF block
	if len(data) > prefix {
		data = data[:prefix]
	}
	raw, err := base64.StdEncoding.DecodeString(data[:len(data)/4*4])
	if err != nil {
		return 0, 0
	}
	cfg, _, err := image.DecodeConfig(strings.NewReader(string(raw)))
	if err != nil {
		return 0, 0
	}
	return cfg.Width, cfg.Height
}

// markNotices marks as history.KindBreadcrumb the messages that read
// exactly as a notice a trim with opts (or with the defaults) renders: a
// plain message of the notice's role, text and name. The turn notice is
// recognised only right after the leading system messages, where trims put
// it; the step notice anywhere, since later turns leave it behind.
func markNotices(msgs []history.Message, opts []history.Option) {
	turn, step, on := history.Breadcrumbs(opts...)
	dturn, dstep, _ := history.Breadcrumbs()
	var turns, steps []history.Message
	if on {
		turns, steps = append(turns, rendered(turn)), append(steps, rendered(step))
	}
	turns, steps = append(turns, rendered(dturn)), append(steps, rendered(dstep))
	lead := true
	for i := range msgs {
		m := &msgs[i]
		if lead && matches(m, turns) || matches(m, steps) {
			m.Kind = history.KindBreadcrumb
		}
		lead = lead && m.Role == history.RoleSystem
	}
}

// rendered is the notice b as ToHistory reads it once Trim rendered it.
func rendered(b history.Message) history.Message {
	m, _ := toMessage(ptr(fromNotice(b))) // a rendered notice always converts
	return m
}

func ptr[T any](v T) *T { return &v }

func matches(m *history.Message, notices []history.Message) bool {
	if len(m.Parts) > 0 || len(m.ToolCalls) > 0 || m.Kind != "" {
		return false
	}
	for _, n := range notices {
		if m.Role == n.Role && m.Content == n.Content && m.Name == n.Name {
			return true
		}
	}
	return false
}

// fromNotice renders the notice b as a plain message of its role.
func fromNotice(b history.Message) openai.ChatCompletionMessage {
	role := openai.ChatMessageRoleUser
	switch b.Role {
	case history.RoleSystem:
		role = openai.ChatMessageRoleSystem
	case history.RoleAssistant:
		role = openai.ChatMessageRoleAssistant
	}
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
	hist, err := convert(msgs, opts)
	if err != nil {
		return nil, history.Result{Budget: budget}, err
	}
	res, err := history.TrimToRecentTurns(hist, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, res, err
	}
	return apply(msgs, res), res, err
}

// apply maps the Result res over ToHistory(msgs) back onto msgs: the
// caller's values where the trim kept a message unchanged, a rendered
// notice where it inserted one, a copy of the original with the core's
// changes where it changed one (see Trim).
func apply(msgs []openai.ChatCompletionMessage, res history.Result) []openai.ChatCompletionMessage {
	if res.Kept == nil {
		return msgs[:len(msgs):len(msgs)]
	}
	if len(res.Kept) == len(msgs) && len(res.Modified) == 0 && identity(res.Kept) {
		return msgs[:len(msgs):len(msgs)]
	}
	out := make([]openai.ChatCompletionMessage, len(res.Kept))
	mod := res.Modified
	for j, i := range res.Kept {
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
// message it kept in u's place: an elided result's placeholder, or the
// tool calls the sweep left with the core's arguments.
func rebuild(u openai.ChatCompletionMessage, m *history.Message) openai.ChatCompletionMessage {
	if m.Kind == history.KindElided {
		u.Content, u.MultiContent = m.Content, nil
		return u
	}
	args := make(map[string]string, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		args[c.ID] = c.Arguments
	}
	calls := make([]openai.ToolCall, 0, len(m.ToolCalls))
	for _, c := range u.ToolCalls {
		if a, ok := args[c.ID]; ok {
			c.Function.Arguments = a // c is a copy: the caller's call is untouched
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		calls = nil
	}
	u.ToolCalls = calls
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
