package openai

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/mediapart"
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
// holds for it as for the core's own validation errors. Index is the
// position of the offending message in the caller's slice, Reason says what
// is wrong with it.
type MessageError = adapt.MessageError

// each is the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways, one message for one.
var each = &adapt.Each[openai.ChatCompletionMessageParamUnion]{
	Name: "openai", Noun: "message",
	To: toMessage, Notice: fromBreadcrumb, Elide: elide, Calls: rebuildCalls,
}

var codec = each.Codec()

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
func NewTrimmer(opts ...history.Option) *Trimmer {
	return &Trimmer{t: codec.NewTrimmer(struct{}{}, opts)}
}

//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system struct{} -message openai.ChatCompletionMessageParamUnion -params openai.ChatCompletionNewParams -usage openai.CompletionUsage -conversations Conversations

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
	*adapt.Conversations[struct{}, openai.ChatCompletionMessageParamUnion]
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
func Positions(msgs []openai.ChatCompletionMessageParamUnion, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// ToHistory converts msgs to the library's message model: one
// history.Message for each element of msgs, in order (see the package
// documentation for the mapping). The result is what the library counts and
// trims; it holds no payloads (image and file data are reduced to their
// size) and is only meant for deciding, never for sending.
//
// The notices a trim with default options inserts are marked
// history.KindBreadcrumb (see the package documentation); [Trim] also
// recognises the notices its options configure.
//
// ToHistory never modifies msgs. A message it cannot convert yields a nil
// slice and a *MessageError naming its index.
func ToHistory(msgs []openai.ChatCompletionMessageParamUnion) ([]history.Message, error) {
	return each.Convert(msgs, nil)
}

// Trim trims msgs to budget tokens with [history.TrimToRecentTurns] and
// returns the caller's own messages that the trim kept, in order, with the
// notices the core inserted (for dropped turns, and for dropped steps under
// history.WithStepTrim) rendered as native messages. res is the core
// Result: its Messages and Kept describe the converted history, whose
// indices are those of msgs (one history.Message per native message).
//
// Kept messages are the caller's values themselves (shallow copies of the
// union, sharing its pointers), so nothing is lost in the round trip. Two
// kinds of kept message are new values, built from a copy of the original
// (extra fields included; one built with param.Override is rewritten at the
// JSON level, keeping its unknown keys), the caller's message untouched:
//
//   - an assistant message from which the orphan sweep stripped tool calls
//     that no tool message answers holds the remaining calls, and one whose
//     calls' arguments history.ElideOptions.ClearArguments cleared holds
//     them with the core's arguments (a function call's arguments, a custom
//     call's input, the deprecated function_call's arguments);
//   - a tool result that history.WithElision elided holds the placeholder
//     as its content, a plain string, with its tool_call_id.
//
// When nothing needs trimming or sweeping, the result is msgs itself,
// clipped to its length. The result converts back (ToHistory) to messages
// that count exactly as res.Messages, so it fits the budget whenever res
// does.
//
// Errors: a *MessageError when msgs cannot be converted; the core's errors
// unchanged otherwise (history.ErrInvalidBudget for budget <= 0, a
// *history.MessageError for an invalid option). When the latest turn alone
// exceeds the budget, Trim returns the trimmed messages, res, and a
// *history.BudgetError wrapping history.ErrLatestTurnTooLarge, as the core
// does. On any other error the messages are nil.
func Trim(msgs []openai.ChatCompletionMessageParamUnion, budget int, opts ...history.Option) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
	return codec.Trim(struct{}{}, msgs, budget, opts)
}

// elide returns a copy of the tool (or legacy function) message u holding
// the placeholder of e, the elided message the core kept in its place: the
// tool_call_id (or function name) and extra fields are kept, the content
// becomes that one string. A message built with param.Override is
// rewritten at the JSON level, keeping unknown keys. u is not modified.
func elide(u openai.ChatCompletionMessageParamUnion, e *history.Message) openai.ChatCompletionMessageParamUnion {
	if needsJSON(&u) {
		if v, ok := elideJSON(u, e.Content); ok {
			return v
		}
		// u was read through its JSON form, so this does not happen; if it
		// did, send the placeholder alone rather than the full result.
		obj := map[string]string{"role": "tool", "tool_call_id": e.ToolCallID, "content": e.Content}
		if e.ToolCallID == legacyCallID {
			obj = map[string]string{"role": "function", "name": e.Name, "content": e.Content}
		}
		raw, _ := json.Marshal(obj) // a map of strings always encodes
		return param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(raw))
	}
	switch {
	case u.OfTool != nil:
		t := *u.OfTool
		t.Content = openai.ChatCompletionToolMessageParamContentUnion{OfString: param.NewOpt(e.Content)}
		u.OfTool = &t
	case u.OfFunction != nil:
		f := *u.OfFunction
		f.Content = param.NewOpt(e.Content)
		u.OfFunction = &f
	}
	return u
}

// elideJSON is elide for a message built with param.Override: it replaces
// the "content" of its JSON form and returns the result as an override.
func elideJSON(u openai.ChatCompletionMessageParamUnion, text string) (openai.ChatCompletionMessageParamUnion, bool) {
	return rewriteJSON(u, func(obj map[string]json.RawMessage) (err error) {
		obj["content"], err = json.Marshal(text)
		return err
	})
}

// rewriteJSON returns u rewritten at the JSON level: edit changes the keys
// of its JSON object, and the result is an override of that object, so
// unknown keys survive. ok is false, and u is returned, when u does not
// encode to an object or edit fails.
func rewriteJSON(u openai.ChatCompletionMessageParamUnion, edit func(obj map[string]json.RawMessage) error) (openai.ChatCompletionMessageParamUnion, bool) {
	raw, err := json.Marshal(u)
	if err != nil {
		return u, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil || edit(obj) != nil {
		return u, false
	}
	if raw, err = json.Marshal(obj); err != nil {
		return u, false
	}
	return param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(raw)), true
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

// rebuildCalls returns a copy of the assistant message u holding the tool
// calls of m, the message the core kept in its place (matched by ID): the
// calls the orphan sweep left, each with m's arguments, which differ from
// the caller's only where history.ElideOptions.ClearArguments cleared them
// (a function call's arguments, a custom call's input, the deprecated
// function_call's arguments). Everything else of u and of each kept call
// (extra fields included) is kept; u itself is not modified.
func rebuildCalls(u openai.ChatCompletionMessageParamUnion, m *history.Message) openai.ChatCompletionMessageParamUnion {
	keep := make(map[string]string, len(m.ToolCalls)) // arguments by call ID
	for _, c := range m.ToolCalls {
		keep[c.ID] = c.Arguments
	}
	if needsJSON(&u) {
		if v, ok := rebuildCallsJSON(u, keep); ok {
			return v
		}
		// u was read through its JSON form, so this does not happen.
		return u
	}
	a := *u.OfAssistant
	calls := make([]openai.ChatCompletionMessageToolCallUnionParam, 0, len(keep))
	for _, c := range a.ToolCalls {
		args, ok := keep[callID(&c)]
		if !ok {
			continue
		}
		switch {
		case c.OfFunction != nil && c.OfFunction.Function.Arguments != args:
			f := *c.OfFunction
			f.Function.Arguments = args
			c.OfFunction = &f // c is a copy: the caller's call is untouched
		case c.OfCustom != nil && c.OfCustom.Custom.Input != args:
			k := *c.OfCustom
			k.Custom.Input = args
			c.OfCustom = &k
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		calls = nil
	}
	a.ToolCalls = calls
	if args, ok := keep[legacyCallID]; ok {
		setLegacyArguments(&a, args)
	} else {
		clearLegacyCall(&a)
	}
	u.OfAssistant = &a
	return u
}

// rebuildCallsJSON is rebuildCalls for a message built (wholly or in part)
// with param.Override: it filters the "tool_calls" array of its JSON form
// and sets the arguments of the calls it keeps to keep's (by call ID),
// rewriting only the calls whose arguments change, and returns the result
// as an override, so that unknown keys survive, in the message, its calls
// and their function objects.
func rebuildCallsJSON(u openai.ChatCompletionMessageParamUnion, keep map[string]string) (openai.ChatCompletionMessageParamUnion, bool) {
	return rewriteJSON(u, func(obj map[string]json.RawMessage) error {
		var calls []json.RawMessage
		if c, ok := obj["tool_calls"]; ok {
			if err := json.Unmarshal(c, &calls); err != nil {
				return err
			}
		}
		var keptCalls []json.RawMessage
		for _, c := range calls {
			// Decoded as the conversion decodes it, so that the variant,
			// and with it the field holding the arguments, is the one
			// that was counted.
			var tc openai.ChatCompletionMessageToolCallUnionParam
			if json.Unmarshal(c, &tc) != nil {
				continue
			}
			args, ok := keep[callID(&tc)]
			if !ok {
				continue
			}
			field, key := "", ""
			switch {
			case tc.OfFunction != nil && tc.OfFunction.Function.Arguments != args:
				field, key = "function", "arguments"
			case tc.OfCustom != nil && tc.OfCustom.Custom.Input != args:
				field, key = "custom", "input"
			}
			if field != "" {
				var call map[string]json.RawMessage
				if err := json.Unmarshal(c, &call); err != nil {
					return err
				}
				if err := setNested(call, field, key, args); err != nil {
					return err
				}
				var err error
				if c, err = json.Marshal(call); err != nil {
					return err
				}
			}
			keptCalls = append(keptCalls, c)
		}
		if len(keptCalls) == 0 {
			delete(obj, "tool_calls")
		} else if b, err := json.Marshal(keptCalls); err == nil {
			obj["tool_calls"] = b
		}
		args, ok := keep[legacyCallID]
		if !ok {
			delete(obj, "function_call")
			return nil
		}
		var legacy struct {
			Arguments string `json:"arguments"`
		}
		if err := json.Unmarshal(obj["function_call"], &legacy); err != nil || legacy.Arguments == args {
			return err
		}
		return setNested(obj, "function_call", "arguments", args)
	})
}

// setNested sets, in the JSON object obj, the key of its object field to
// the string value, keeping every other key of both; an error when the
// field is not a JSON object.
func setNested(obj map[string]json.RawMessage, field, key, value string) error {
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(obj[field], &inner); err != nil {
		return err
	}
	if inner == nil {
		return errors.New(field + " is not a JSON object")
	}
	var err error
	if inner[key], err = json.Marshal(value); err != nil {
		return err
	}
	obj[field], err = json.Marshal(inner)
	return err
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
	var reasoning string // reasoning_content of an assistant message
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
		// Decoding keeps no unknown keys: read reasoning_content here.
		var rc struct {
			ReasoningContent string `json:"reasoning_content"`
		}
		_ = json.Unmarshal(raw, &rc) // a string or nothing; anything else is not counted
		reasoning = rc.ReasoningContent
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
		if reasoning == "" {
			reasoning = reasoningContent(u.OfAssistant.ExtraFields()["reasoning_content"])
		}
		m, err := assistantMessage(u.OfAssistant)
		if reasoning != "" {
			m.Parts = append([]history.Part{{Type: history.PartReasoning, Text: reasoning}}, m.Parts...)
		}
		return m, err
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

// reasoningContent returns the text of a reasoning_content extra field set
// as a string or as the raw JSON of one (json.RawMessage, as copied from a
// response's JSON.ExtraFields), or "".
func reasoningContent(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.RawMessage:
		var s string
		_ = json.Unmarshal(v, &s) // not a string: nothing to count
		return s
	}
	return ""
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
			detail := img.Detail
			if detail == "original" {
				detail = "high"
			}
			out = append(out, mediapart.URL(img.URL, "", detail, true))
		case p.OfInputAudio != nil:
			a := &p.OfInputAudio.InputAudio
			mime := ""
			if a.Format != "" {
				mime = "audio/" + a.Format
			}
			out = append(out, mediapart.Base64(mime, a.Data, "", false))
		case p.OfFile != nil:
			out = append(out, filePart(p.OfFile.File.FileData.Value))
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
