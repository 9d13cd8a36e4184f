package openai

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// legacyCallID is the tool call ID given to the deprecated function_call of
// an assistant message and to the function-role message that answers it, so
// that the core pairs them like any tool call and its result.
const legacyCallID = "legacy_function_call"

// MessageError reports a native message the adapter cannot convert: a union
// with no variant set, a tool call without an ID, two tool calls with the same
// ID in one message, a tool message without a tool_call_id. It wraps
// [history.ErrInvalidMessage], so errors.Is(err, history.ErrInvalidMessage)
// holds for it as for the core's own validation errors.
type MessageError struct {
	// Index is the position of the offending message in the caller's slice.
	Index int
	// Reason says what is wrong with it.
	Reason string
}

func (e *MessageError) Error() string {
	return "history/openai: invalid message at index " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Unwrap returns history.ErrInvalidMessage.
func (e *MessageError) Unwrap() error { return history.ErrInvalidMessage }

// ToHistory converts msgs to the library's message model: one
// history.Message for each element of msgs, in order (see the package
// documentation for the mapping). The result is what the library counts and
// trims; it holds no payloads (image and file data are reduced to their
// size) and is only meant for deciding, never for sending.
//
// ToHistory never modifies msgs. A message it cannot convert yields a nil
// slice and a *MessageError naming its index.
func ToHistory(msgs []openai.ChatCompletionMessageParamUnion) ([]history.Message, error) {
	out := make([]history.Message, len(msgs))
	lead := true // still inside the leading system/developer messages
	for i := range msgs {
		m, err := toMessage(&msgs[i])
		if err != nil {
			return nil, &MessageError{Index: i, Reason: err.Error()}
		}
		if lead && m.Role != history.RoleSystem {
			lead = false
			if isBreadcrumb(&msgs[i], &m) {
				m.Kind = history.KindBreadcrumb
			}
		}
		out[i] = m
	}
	return out, nil
}

// isBreadcrumb reports whether the native user message u, converted to m, is
// the default breadcrumb: exactly BreadcrumbText as a plain string, no name.
func isBreadcrumb(u *openai.ChatCompletionMessageParamUnion, m *history.Message) bool {
	return u.OfUser != nil && m.Role == history.RoleUser && m.Name == "" && len(m.Parts) == 0 &&
		m.Content == history.BreadcrumbText
}

// Trim trims msgs to budget tokens with [history.TrimToRecentTurns] and
// returns the caller's own messages that the trim kept, in order, with the
// breadcrumb inserted as a native message when turns were dropped. res is
// the core Result: its Messages and Kept describe the converted history,
// whose indices are those of msgs (one history.Message per native message).
//
// Kept messages are the caller's values themselves (shallow copies of the
// union, sharing its pointers), so nothing is lost in the round trip. The
// exception is an assistant message from which the orphan sweep stripped
// tool calls that no tool message answers: Trim returns a new message with
// the remaining calls, leaving the caller's message untouched; every other
// field, extra fields included, is kept (a message built with
// param.Override is rewritten at the JSON level, keeping its unknown keys).
// When nothing needs trimming or sweeping, the result is msgs itself,
// clipped to its length.
//
// Errors: a *MessageError when msgs cannot be converted; the core's errors
// unchanged otherwise (history.ErrInvalidBudget for budget <= 0, a
// *history.MessageError for an invalid option). When the latest turn alone
// exceeds the budget, Trim returns the trimmed messages, res, and a
// *history.BudgetError wrapping history.ErrLatestTurnTooLarge, as the core
// does. On any other error the messages are nil.
func Trim(msgs []openai.ChatCompletionMessageParamUnion, budget int, opts ...history.Option) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
	hist, err := ToHistory(msgs)
	if err != nil {
		return nil, history.Result{Budget: budget}, err
	}
	res, err := history.TrimToRecentTurns(hist, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, res, err
	}
	out := history.Apply(msgs, res, func() openai.ChatCompletionMessageParamUnion {
		for j, k := range res.Kept {
			if k < 0 {
				return fromBreadcrumb(res.Messages[j])
			}
		}
		return openai.UserMessage(history.BreadcrumbText) // unreachable: Apply calls us only for a -1
	})
	if res.OrphansRemoved > 0 {
		// Apply returned originals; put back what the sweep stripped.
		for j, k := range res.Kept {
			if k >= 0 && len(res.Messages[j].ToolCalls) < len(hist[k].ToolCalls) {
				out[j] = stripCalls(msgs[k], res.Messages[j].ToolCalls)
			}
		}
	}
	return out, res, err
}

// fromBreadcrumb renders the breadcrumb b as a native message of its role.
func fromBreadcrumb(b history.Message) openai.ChatCompletionMessageParamUnion {
	var u openai.ChatCompletionMessageParamUnion
	switch b.Role {
	case history.RoleSystem:
		u = openai.SystemMessage(b.Content)
		if b.Name != "" {
			u.OfSystem.Name = param.NewOpt(b.Name)
		}
	case history.RoleAssistant:
		u = openai.AssistantMessage(b.Content)
		if b.Name != "" {
			u.OfAssistant.Name = param.NewOpt(b.Name)
		}
	default:
		u = openai.UserMessage(b.Content)
		if b.Name != "" {
			u.OfUser.Name = param.NewOpt(b.Name)
		}
	}
	return u
}

// stripCalls returns a copy of the assistant message u keeping only the tool
// calls whose IDs are in keep. u itself is not modified.
func stripCalls(u openai.ChatCompletionMessageParamUnion, keep []history.ToolCall) openai.ChatCompletionMessageParamUnion {
	kept := func(id string) bool {
		for i := range keep {
			if keep[i].ID == id {
				return true
			}
		}
		return false
	}
	if needsJSON(&u) {
		if v, ok := stripCallsJSON(u, kept); ok {
			return v
		}
		return u
	}
	a := *u.OfAssistant
	calls := make([]openai.ChatCompletionMessageToolCallUnionParam, 0, len(keep))
	for _, c := range a.ToolCalls {
		if kept(callID(&c)) {
			calls = append(calls, c)
		}
	}
	if len(calls) == 0 {
		calls = nil
	}
	a.ToolCalls = calls
	if !kept(legacyCallID) {
		clearLegacyCall(&a)
	}
	u.OfAssistant = &a
	return u
}

// stripCallsJSON is stripCalls for a message built (wholly or in part) with
// param.Override: it filters the "tool_calls" array of its JSON form and
// returns the result as an override, so unknown keys survive.
func stripCallsJSON(u openai.ChatCompletionMessageParamUnion, kept func(string) bool) (openai.ChatCompletionMessageParamUnion, bool) {
	raw, err := json.Marshal(u)
	if err != nil {
		return u, false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return u, false
	}
	var calls []json.RawMessage
	if c, ok := obj["tool_calls"]; ok {
		if err := json.Unmarshal(c, &calls); err != nil {
			return u, false
		}
	}
	var keptCalls []json.RawMessage
	for _, c := range calls {
		var id struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(c, &id) == nil && kept(id.ID) {
			keptCalls = append(keptCalls, c)
		}
	}
	if len(keptCalls) == 0 {
		delete(obj, "tool_calls")
	} else if b, err := json.Marshal(keptCalls); err == nil {
		obj["tool_calls"] = b
	}
	if !kept(legacyCallID) {
		delete(obj, "function_call")
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return u, false
	}
	return param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(b)), true
}

// callID returns the ID of a tool call param (typed fields only).
func callID(c *openai.ChatCompletionMessageToolCallUnionParam) string {
	if id := c.GetID(); id != nil {
		return *id
	}
	return ""
}

// overridden reports whether p was built with param.Override or
// param.SetJSON, so that its typed fields are not what it sends.
func overridden(p interface{ Overrides() (any, bool) }) bool {
	_, ok := p.Overrides()
	return ok
}

// needsJSON reports whether any part of u that the conversion reads was
// built with param.Override, in which case u is read through its JSON form.
// Values returned by the SDK's ToParam methods are such overrides.
func needsJSON(u *openai.ChatCompletionMessageParamUnion) bool {
	if overridden(u) {
		return true
	}
	switch {
	case u.OfSystem != nil:
		return overridden(u.OfSystem) || overridden(u.OfSystem.Content) || textPartsOverridden(u.OfSystem.Content.OfArrayOfContentParts)
	case u.OfDeveloper != nil:
		return overridden(u.OfDeveloper) || overridden(u.OfDeveloper.Content) || textPartsOverridden(u.OfDeveloper.Content.OfArrayOfContentParts)
	case u.OfTool != nil:
		return overridden(u.OfTool) || overridden(u.OfTool.Content) || textPartsOverridden(u.OfTool.Content.OfArrayOfContentParts)
	case u.OfFunction != nil:
		return overridden(u.OfFunction)
	case u.OfUser != nil:
		if overridden(u.OfUser) || overridden(u.OfUser.Content) {
			return true
		}
		for i := range u.OfUser.Content.OfArrayOfContentParts {
			p := &u.OfUser.Content.OfArrayOfContentParts[i]
			if overridden(p) ||
				(p.OfText != nil && overridden(p.OfText)) ||
				(p.OfImageURL != nil && (overridden(p.OfImageURL) || overridden(p.OfImageURL.ImageURL))) ||
				(p.OfInputAudio != nil && (overridden(p.OfInputAudio) || overridden(p.OfInputAudio.InputAudio))) ||
				(p.OfFile != nil && (overridden(p.OfFile) || overridden(p.OfFile.File))) {
				return true
			}
		}
	case u.OfAssistant != nil:
		a := u.OfAssistant
		if overridden(a) || overridden(a.Content) || legacyOverridden(a) {
			return true
		}
		for i := range a.Content.OfArrayOfContentParts {
			p := &a.Content.OfArrayOfContentParts[i]
			if overridden(p) || (p.OfText != nil && overridden(p.OfText)) || (p.OfRefusal != nil && overridden(p.OfRefusal)) {
				return true
			}
		}
		for i := range a.ToolCalls {
			c := &a.ToolCalls[i]
			if overridden(c) ||
				(c.OfFunction != nil && (overridden(c.OfFunction) || overridden(c.OfFunction.Function))) ||
				(c.OfCustom != nil && (overridden(c.OfCustom) || overridden(c.OfCustom.Custom))) {
				return true
			}
		}
	}
	return false
}

func textPartsOverridden(parts []openai.ChatCompletionContentPartTextParam) bool {
	for i := range parts {
		if overridden(&parts[i]) {
			return true
		}
	}
	return false
}

// toMessage converts one native message. Messages with overridden parts
// are decoded from their JSON form first.
func toMessage(u *openai.ChatCompletionMessageParamUnion) (history.Message, error) {
	if needsJSON(u) {
		raw, err := json.Marshal(u)
		if err != nil {
			return history.Message{}, errors.New("cannot encode overridden message: " + err.Error())
		}
		var typed openai.ChatCompletionMessageParamUnion
		if err := json.Unmarshal(raw, &typed); err != nil {
			return history.Message{}, errors.New("cannot decode overridden message: " + err.Error())
		}
		if needsJSON(&typed) {
			return history.Message{}, errors.New("overridden message does not decode to a known message type")
		}
		u = &typed
	}
	var m history.Message
	switch {
	case u.OfSystem != nil:
		m.Role = history.RoleSystem
		m.Name = u.OfSystem.Name.Value
		m.Content, m.Parts = textContent(u.OfSystem.Content.OfString, u.OfSystem.Content.OfArrayOfContentParts)
	case u.OfDeveloper != nil:
		m.Role = history.RoleSystem
		m.Name = u.OfDeveloper.Name.Value
		m.Content, m.Parts = textContent(u.OfDeveloper.Content.OfString, u.OfDeveloper.Content.OfArrayOfContentParts)
	case u.OfUser != nil:
		m.Role = history.RoleUser
		m.Name = u.OfUser.Name.Value
		m.Content = u.OfUser.Content.OfString.Value
		m.Parts = userParts(u.OfUser.Content.OfArrayOfContentParts)
	case u.OfAssistant != nil:
		return assistantMessage(u.OfAssistant)
	case u.OfTool != nil:
		if u.OfTool.ToolCallID == "" {
			return m, errors.New("tool message without tool_call_id")
		}
		m.Role = history.RoleTool
		m.ToolCallID = u.OfTool.ToolCallID
		m.Content, m.Parts = textContent(u.OfTool.Content.OfString, u.OfTool.Content.OfArrayOfContentParts)
	case u.OfFunction != nil:
		m.Role = history.RoleTool
		m.ToolCallID = legacyCallID
		m.Name = u.OfFunction.Name
		m.Content = u.OfFunction.Content.Value
	default:
		return m, errors.New("no message variant is set")
	}
	return m, nil
}

// textContent maps a string-or-text-parts content union.
func textContent(s param.Opt[string], parts []openai.ChatCompletionContentPartTextParam) (string, []history.Part) {
	if len(parts) == 0 {
		return s.Value, nil
	}
	out := make([]history.Part, len(parts))
	for i := range parts {
		out[i] = history.Part{Type: history.PartText, Text: parts[i].Text}
	}
	return s.Value, out
}

func userParts(parts []openai.ChatCompletionContentPartUnionParam) []history.Part {
	if len(parts) == 0 {
		return nil
	}
	out := make([]history.Part, 0, len(parts))
	for i := range parts {
		p := &parts[i]
		switch {
		case p.OfText != nil:
			out = append(out, history.Part{Type: history.PartText, Text: p.OfText.Text})
		case p.OfImageURL != nil:
			img := &p.OfImageURL.ImageURL
			w, h, mime := imageInfo(img.URL)
			detail := img.Detail
			if detail == "original" {
				detail = "high"
			}
			out = append(out, history.Part{Type: history.PartImage, Width: w, Height: h, Detail: detail, MIMEType: mime})
		case p.OfInputAudio != nil:
			a := &p.OfInputAudio.InputAudio
			mime := ""
			if a.Format != "" {
				mime = "audio/" + a.Format
			}
			out = append(out, history.Part{Type: history.PartFile, MIMEType: mime, Size: base64Size(a.Data)})
		case p.OfFile != nil:
			mime, size := dataInfo(p.OfFile.File.FileData.Value)
			out = append(out, history.Part{Type: history.PartFile, MIMEType: mime, Size: size})
		}
	}
	return out
}

func assistantMessage(a *openai.ChatCompletionAssistantMessageParam) (history.Message, error) {
	m := history.Message{Role: history.RoleAssistant, Name: a.Name.Value, Content: a.Content.OfString.Value}
	for i := range a.Content.OfArrayOfContentParts {
		p := &a.Content.OfArrayOfContentParts[i]
		switch {
		case p.OfText != nil:
			m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: p.OfText.Text})
		case p.OfRefusal != nil:
			m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: p.OfRefusal.Refusal})
		}
	}
	if a.Refusal.Value != "" {
		m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: a.Refusal.Value})
	}
	if a.Audio.ID != "" {
		// A reference to an earlier audio response: its size is unknown here.
		m.Parts = append(m.Parts, history.Part{Type: history.PartFile, MIMEType: "audio"})
	}
	legacy, hasLegacy := legacyCall(a)
	n := len(a.ToolCalls)
	if hasLegacy {
		n++
	}
	if n > 0 {
		m.ToolCalls = make([]history.ToolCall, 0, n)
	}
	for i := range a.ToolCalls {
		c := &a.ToolCalls[i]
		var tc history.ToolCall
		switch {
		case c.OfFunction != nil:
			tc = history.ToolCall{ID: c.OfFunction.ID, Name: c.OfFunction.Function.Name, Arguments: c.OfFunction.Function.Arguments}
		case c.OfCustom != nil:
			tc = history.ToolCall{ID: c.OfCustom.ID, Name: c.OfCustom.Custom.Name, Arguments: c.OfCustom.Custom.Input}
		default:
			return m, errors.New("tool call " + strconv.Itoa(i) + " has no variant set")
		}
		if tc.ID == "" {
			return m, errors.New("tool call " + strconv.Itoa(i) + " has an empty id")
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	if hasLegacy {
		m.ToolCalls = append(m.ToolCalls, legacy)
	}
	for j := range m.ToolCalls {
		for k := range j {
			if m.ToolCalls[k].ID == m.ToolCalls[j].ID {
				return m, errors.New("tool call id " + strconv.Quote(m.ToolCalls[j].ID) + " used twice in one message")
			}
		}
	}
	return m, nil
}
