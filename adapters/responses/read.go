package responses

// This file reads one input item from its typed fields: what the conversion
// needs of it (its class, ids, text and media). Items built, wholly or in
// part, with param.Override are read from their JSON form (wire.go).

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/mediapart"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// Item is the type this package trims: one input item of a Responses API
// request.
type Item = responses.ResponseInputItemUnionParam

// class is the part an item plays in the conversation.
type class uint8

const (
	// clsUser is a user message: it opens a turn.
	clsUser class = iota + 1
	// clsSystem is a system or developer message, or an additional_tools
	// item.
	clsSystem
	// clsOutput is model output that pairs with nothing: an output or
	// assistant message, a hosted tool call (web search, file search, code
	// interpreter, image generation, MCP call and list), a tool search
	// without a call_id.
	clsOutput
	// clsCall is a tool call that an output item answers by its call id.
	clsCall
	// clsResult is the output of a tool call.
	clsResult
	// clsReasoning is a reasoning item.
	clsReasoning
	// clsOpaque is an item the adapter cannot see into: an item_reference,
	// or an item of a type this SDK version does not model.
	clsOpaque
	// clsCompaction is a compaction item: a pinned summary.
	clsCompaction
	// clsNudge is a compaction_trigger.
	clsNudge
)

// view is what the conversion reads of one item.
type view struct {
	cls class
	// typ is the item's type, as the API names it.
	typ string
	// id is the item's id, when it has one.
	id string
	// callID pairs a call and its output: the call's call_id, the call_id
	// (local_shell_call_output: id; mcp_approval_response:
	// approval_request_id) an output answers.
	callID string
	// name and args are a call's tool name and arguments.
	name, args string
	// content and parts are the item's text and media.
	content string
	parts   []history.Part
	// fixed marks an output with no text form a placeholder could take
	// (a screenshot, loaded tools, an approval): it is never elided.
	fixed bool
	// keepArgs marks a call whose arguments Trim cannot replace by the
	// ones history.ElideOptions.ClearArguments leaves (see rewritable):
	// its exchange is marked as holding reasoning, which the core never
	// clears.
	keepArgs bool
	// plain marks an assistant message holding one string: the form a
	// notice takes when Trim renders it in the assistant role.
	plain bool
}

// read returns what the conversion needs of u.
func read(u *Item) (view, error) {
	if needsJSON(u) {
		return readJSON(u)
	}
	return readTyped(u)
}

// readTyped reads u from its typed fields.
func readTyped(u *Item) (view, error) {
	if v, ok, err := readModel(u); ok {
		return v, err
	}
	if v, ok, err := readTool(u); ok {
		return v, err
	}
	return readOther(u)
}

// readModel reads a message or a reasoning item; ok is false for any
// other item.
func readModel(u *Item) (v view, ok bool, err error) {
	switch {
	case u.OfMessage != nil:
		m := u.OfMessage
		if m.Content.OfString.Valid() {
			return found(message(string(m.Role), m.Content.OfString.Value, nil, true))
		}
		return found(message(string(m.Role), "", inputParts(m.Content.OfInputItemContentList), false))
	case u.OfInputMessage != nil:
		return found(message(u.OfInputMessage.Role, "", inputParts(u.OfInputMessage.Content), false))
	case u.OfOutputMessage != nil:
		m := u.OfOutputMessage
		v := view{cls: clsOutput, typ: "message", id: m.ID}
		for i := range m.Content {
			c := &m.Content[i]
			switch {
			case c.OfOutputText != nil:
				v.parts = append(v.parts, textPart(c.OfOutputText.Text))
			case c.OfRefusal != nil:
				v.parts = append(v.parts, textPart(c.OfRefusal.Refusal))
			}
		}
		return found(v, nil)
	case u.OfReasoning != nil:
		r := u.OfReasoning
		v := view{cls: clsReasoning, typ: "reasoning", id: r.ID}
		for i := range r.Summary {
			v.parts = append(v.parts, history.Part{Type: history.PartReasoning, Text: r.Summary[i].Text})
		}
		for i := range r.Content {
			v.parts = append(v.parts, history.Part{Type: history.PartReasoning, Text: r.Content[i].Text})
		}
		if r.EncryptedContent.Value != "" {
			// Encrypted: its length is the only size there is.
			v.parts = append(v.parts, history.Part{Type: history.PartReasoning, Text: r.EncryptedContent.Value})
		}
		return found(v, nil)
	}
	return view{}, false, nil
}

// readTool reads a tool call or its output; ok is false for any other
// item.
func readTool(u *Item) (v view, ok bool, err error) {
	switch {
	case u.OfFunctionCall != nil:
		c := u.OfFunctionCall
		v, err := call("function_call", c.ID.Value, c.CallID, c.Name, c.Arguments)
		v.keepArgs = c.Caller.OfDirect == nil && !param.IsOmitted(c.Caller)
		return found(v, err)
	case u.OfFunctionCallOutput != nil:
		o := u.OfFunctionCallOutput
		v := view{typ: "function_call_output", content: o.Output.OfString.Value, parts: outputParts(o.Output.OfResponseFunctionCallOutputItemArray)}
		return found(result(v, o.CallID))
	case u.OfCustomToolCall != nil:
		c := u.OfCustomToolCall
		v, err := call("custom_tool_call", c.ID.Value, c.CallID, c.Name, c.Input)
		v.keepArgs = c.Caller.OfDirect == nil && !param.IsOmitted(c.Caller)
		return found(v, err)
	case u.OfCustomToolCallOutput != nil:
		o := u.OfCustomToolCallOutput
		v := view{typ: "custom_tool_call_output", content: o.Output.OfString.Value}
		for i := range o.Output.OfOutputContentList {
			p := &o.Output.OfOutputContentList[i]
			v.parts = appendInput(v.parts, p.OfInputText, p.OfInputImage, p.OfInputFile)
		}
		return found(result(v, o.CallID))
	case u.OfComputerCall != nil:
		c := u.OfComputerCall
		return found(call("computer_call", c.ID, c.CallID, "computer", jsonText(c)))
	case u.OfComputerCallOutput != nil:
		o := u.OfComputerCallOutput
		v := view{typ: "computer_call_output", fixed: true, parts: []history.Part{screenshot(o.Output.ImageURL.Value)}}
		return found(result(v, o.CallID))
	case u.OfLocalShellCall != nil:
		c := u.OfLocalShellCall
		return found(call("local_shell_call", c.ID, c.CallID, "local_shell", jsonText(c.Action)))
	case u.OfLocalShellCallOutput != nil:
		o := u.OfLocalShellCallOutput
		return found(result(view{typ: "local_shell_call_output", content: o.Output}, o.ID))
	case u.OfShellCall != nil:
		c := u.OfShellCall
		return found(call("shell_call", c.ID.Value, c.CallID, "shell", jsonText(c.Action)))
	case u.OfShellCallOutput != nil:
		o := u.OfShellCallOutput
		var out []string
		for i := range o.Output {
			out = append(out, o.Output[i].Stdout, o.Output[i].Stderr)
		}
		return found(result(view{typ: "shell_call_output", content: joinText(out)}, o.CallID))
	case u.OfApplyPatchCall != nil:
		c := u.OfApplyPatchCall
		return found(call("apply_patch_call", c.ID.Value, c.CallID, "apply_patch", jsonText(c.Operation)))
	case u.OfApplyPatchCallOutput != nil:
		o := u.OfApplyPatchCallOutput
		return found(result(view{typ: "apply_patch_call_output", content: o.Output.Value}, o.CallID))
	case u.OfProgram != nil:
		c := u.OfProgram
		return found(call("program", c.ID, c.CallID, "program", c.Code))
	case u.OfProgramOutput != nil:
		o := u.OfProgramOutput
		return found(result(view{typ: "program_output", content: o.Result}, o.CallID))
	case u.OfToolSearchCall != nil:
		c := u.OfToolSearchCall
		if c.CallID.Value == "" {
			return found(hosted("tool_search_call", c.ID.Value, u), nil)
		}
		return found(call("tool_search_call", c.ID.Value, c.CallID.Value, "tool_search", jsonText(c.Arguments)))
	case u.OfToolSearchOutput != nil:
		o := u.OfToolSearchOutput
		if o.CallID.Value == "" {
			return found(hosted("tool_search_output", o.ID.Value, u), nil)
		}
		return found(result(view{typ: "tool_search_output", fixed: true, parts: []history.Part{textPart(jsonText(o.Tools))}}, o.CallID.Value))
	case u.OfMcpApprovalRequest != nil:
		c := u.OfMcpApprovalRequest
		return found(call("mcp_approval_request", c.ID, c.ID, c.Name, c.Arguments))
	case u.OfMcpApprovalResponse != nil:
		o := u.OfMcpApprovalResponse
		return found(result(view{typ: "mcp_approval_response", fixed: true, content: o.Reason.Value}, o.ApprovalRequestID))
	}
	return view{}, false, nil
}

// found returns v and err of an item the reader knows.
func found(v view, err error) (view, bool, error) { return v, true, err }

// readOther reads hosted tool calls, additional tools, compaction items
// and references, and items of a variant this adapter does not know.
func readOther(u *Item) (view, error) {
	switch {
	case u.OfImageGenerationCall != nil:
		g := u.OfImageGenerationCall
		v := view{cls: clsOutput, typ: "image_generation_call", id: g.ID}
		if g.Result.Value != "" {
			v.parts = []history.Part{mediapart.Base64("", g.Result.Value, "", true)}
		}
		return v, nil
	case u.OfFileSearchCall != nil:
		return hosted("file_search_call", u.OfFileSearchCall.ID, u), nil
	case u.OfWebSearchCall != nil:
		return hosted("web_search_call", u.OfWebSearchCall.ID, u), nil
	case u.OfCodeInterpreterCall != nil:
		return hosted("code_interpreter_call", u.OfCodeInterpreterCall.ID, u), nil
	case u.OfMcpCall != nil:
		return hosted("mcp_call", u.OfMcpCall.ID, u), nil
	case u.OfMcpListTools != nil:
		return hosted("mcp_list_tools", u.OfMcpListTools.ID, u), nil
	case u.OfAdditionalTools != nil:
		t := u.OfAdditionalTools
		return view{cls: clsSystem, typ: "additional_tools", id: t.ID.Value, parts: []history.Part{textPart(jsonText(t.Tools))}}, nil
	case u.OfCompaction != nil:
		c := u.OfCompaction
		v := view{cls: clsCompaction, typ: "compaction", id: c.ID.Value}
		if c.EncryptedContent != "" {
			v.parts = []history.Part{{Type: history.PartReasoning, Text: c.EncryptedContent}}
		}
		return v, nil
	case u.OfCompactionTrigger != nil:
		return view{cls: clsNudge, typ: "compaction_trigger"}, nil
	case u.OfItemReference != nil:
		r := u.OfItemReference
		if r.ID == "" {
			return view{}, errors.New("item_reference without an id")
		}
		return view{cls: clsOpaque, typ: "item_reference", id: r.ID, parts: []history.Part{textPart(jsonText(u))}}, nil
	}
	// No variant this adapter knows: one that a newer SDK added, or none.
	raw, err := json.Marshal(u)
	if err != nil || len(raw) == 0 || raw[0] != '{' {
		return view{}, errors.New("no item variant is set")
	}
	var w wire
	if json.Unmarshal(raw, &w) != nil {
		return opaque(raw, "", ""), nil
	}
	return w.view(raw)
}

// message reads a message of role with text (the string content, when str)
// and parts.
func message(role, text string, parts []history.Part, str bool) (view, error) {
	v := view{typ: "message", content: text, parts: parts}
	switch role {
	case "user":
		v.cls = clsUser
	case "system", "developer":
		v.cls = clsSystem
	case "assistant":
		// Model output: its text joins the parts of its exchange.
		v.cls, v.content, v.plain = clsOutput, "", str
		if str {
			v.parts = append([]history.Part{textPart(text)}, parts...)
		}
	default:
		return v, errors.New("message with unknown role " + quote(role))
	}
	return v, nil
}

// call reads a tool call; its call id must not be empty. Only a function
// call's arguments and a custom tool call's input can be rewritten (see
// rewritable); the caller of call marks those a program made (their
// caller field) as kept too.
func call(typ, id, callID, name, args string) (view, error) {
	if callID == "" {
		return view{}, errors.New(typ + " item without a call_id")
	}
	return view{cls: clsCall, typ: typ, id: id, callID: callID, name: name, args: args, keepArgs: !rewritable(typ)}, nil
}

// rewritable reports whether Trim can send a call of type typ with the
// arguments history.ElideOptions.ClearArguments leaves, a JSON object as
// text, so that it converts back to exactly those: a function call's
// arguments and a custom tool call's input are free strings the model
// wrote, plain strings in the API's schema. The other calls' arguments, as
// the conversion reads them, are the JSON of a structured field of the
// schema (a shell or local shell action, an apply_patch operation, a
// computer action, tool search arguments), which the placeholder object is
// not and which no rewrite of one of its fields would make count as the
// core counted; a program's code, bound to its replay fingerprint; an MCP
// approval request the server issued. The core must not clear them.
func rewritable(typ string) bool {
	return typ == "function_call" || typ == "custom_tool_call"
}

// result completes the view v of a tool output answering callID, which
// must not be empty.
func result(v view, callID string) (view, error) {
	if callID == "" {
		return view{}, errors.New(v.typ + " item without the id of its call")
	}
	v.cls, v.callID = clsResult, callID
	return v, nil
}

// hosted reads an item of model output counted by its JSON form.
func hosted(typ, id string, u *Item) view {
	return view{cls: clsOutput, typ: typ, id: id, parts: []history.Part{textPart(jsonText(u))}}
}

func textPart(s string) history.Part { return history.Part{Type: history.PartText, Text: s} }

// joinText joins the non-empty texts with line breaks.
func joinText(texts []string) string {
	var b strings.Builder
	for _, t := range texts {
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	return b.String()
}

// jsonText returns the JSON text of v, or "" when it does not encode.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// inputParts reads the content list of an input message.
func inputParts(list responses.ResponseInputMessageContentListParam) []history.Part {
	var parts []history.Part
	for i := range list {
		p := &list[i]
		parts = appendInput(parts, p.OfInputText, p.OfInputImage, p.OfInputFile)
	}
	return parts
}

// appendInput appends the part of one input_text, input_image or
// input_file content (at most one is set).
func appendInput(parts []history.Part, text *responses.ResponseInputTextParam, img *responses.ResponseInputImageParam, file *responses.ResponseInputFileParam) []history.Part {
	switch {
	case text != nil:
		return append(parts, textPart(text.Text))
	case img != nil:
		return append(parts, mediapart.URL(img.ImageURL.Value, "", string(img.Detail), true))
	case file != nil:
		return append(parts, filePart(file.FileData.Value, file.FileURL.Value))
	}
	return parts
}

// outputParts reads the content list of a function_call_output.
func outputParts(list responses.ResponseFunctionCallOutputItemListParam) []history.Part {
	var parts []history.Part
	for i := range list {
		p := &list[i]
		switch {
		case p.OfInputText != nil:
			parts = append(parts, textPart(p.OfInputText.Text))
		case p.OfInputImage != nil:
			parts = append(parts, mediapart.URL(p.OfInputImage.ImageURL.Value, "", string(p.OfInputImage.Detail), true))
		case p.OfInputFile != nil:
			parts = append(parts, filePart(p.OfInputFile.FileData.Value, p.OfInputFile.FileURL.Value))
		}
	}
	return parts
}

// filePart describes an input file from its file_data (a data URL or bare
// base64) or, failing that, its file_url (remote: unknown size). A file
// referenced by id has an unknown size too.
func filePart(data, url string) history.Part {
	if data == "" {
		return mediapart.URL(url, "", "", false)
	}
	if !strings.HasPrefix(data, "data:") {
		return mediapart.Base64("", data, "", false)
	}
	return mediapart.URL(data, "", "", false)
}

// screenshot describes a computer screenshot: an image, sized from a data
// URL, of unknown size when it is remote or a file id.
func screenshot(url string) history.Part {
	return mediapart.URL(url, "", "", true)
}

// overridden reports whether p was built with param.Override or
// param.SetJSON, so that its typed fields are not what it sends.
func overridden(p interface{ Overrides() (any, bool) }) bool {
	_, ok := p.Overrides()
	return ok
}

// needsJSON reports whether u, or a part of it that readTyped reads field
// by field, was built with param.Override; u is then read through its JSON
// form. Values returned by the SDK's ToParam methods are such overrides.
// Parts that readTyped encodes to JSON anyway need no check.
func needsJSON(u *Item) bool {
	if overridden(u) {
		return true
	}
	if v := variant(u); v != nil && overridden(v) {
		return true
	}
	return partsOverridden(u)
}

// partsOverridden reports whether a part of u that readTyped reads field by
// field, below its variant, was built with param.Override: the contents of
// messages, reasoning items and tool outputs.
func partsOverridden(u *Item) bool {
	switch {
	case u.OfMessage != nil:
		m := u.OfMessage
		return overridden(m.Content) || inputOverridden(m.Content.OfInputItemContentList)
	case u.OfInputMessage != nil:
		return inputOverridden(u.OfInputMessage.Content)
	case u.OfOutputMessage != nil:
		for i := range u.OfOutputMessage.Content {
			c := &u.OfOutputMessage.Content[i]
			if overridden(c) || (c.OfOutputText != nil && overridden(c.OfOutputText)) || (c.OfRefusal != nil && overridden(c.OfRefusal)) {
				return true
			}
		}
	case u.OfReasoning != nil:
		r := u.OfReasoning
		return slices.ContainsFunc(r.Summary, func(p responses.ResponseReasoningItemSummaryParam) bool { return overridden(&p) }) ||
			slices.ContainsFunc(r.Content, func(p responses.ResponseReasoningItemContentParam) bool { return overridden(&p) })
	case u.OfFunctionCallOutput != nil:
		o := u.OfFunctionCallOutput
		if overridden(o.Output) {
			return true
		}
		for i := range o.Output.OfResponseFunctionCallOutputItemArray {
			p := &o.Output.OfResponseFunctionCallOutputItemArray[i]
			if overridden(p) || (p.OfInputText != nil && overridden(p.OfInputText)) ||
				(p.OfInputImage != nil && overridden(p.OfInputImage)) || (p.OfInputFile != nil && overridden(p.OfInputFile)) {
				return true
			}
		}
	case u.OfCustomToolCallOutput != nil:
		o := u.OfCustomToolCallOutput
		if overridden(o.Output) {
			return true
		}
		for i := range o.Output.OfOutputContentList {
			p := &o.Output.OfOutputContentList[i]
			if overridden(p) || partOverridden(p.OfInputText, p.OfInputImage, p.OfInputFile) {
				return true
			}
		}
	case u.OfComputerCallOutput != nil:
		return overridden(&u.OfComputerCallOutput.Output)
	case u.OfShellCallOutput != nil:
		o := u.OfShellCallOutput
		return slices.ContainsFunc(o.Output, func(c responses.ResponseFunctionShellCallOutputContentParam) bool { return overridden(&c) })
	}
	return false
}

func inputOverridden(list responses.ResponseInputMessageContentListParam) bool {
	for i := range list {
		p := &list[i]
		if overridden(p) || partOverridden(p.OfInputText, p.OfInputImage, p.OfInputFile) {
			return true
		}
	}
	return false
}

func partOverridden(text *responses.ResponseInputTextParam, img *responses.ResponseInputImageParam, file *responses.ResponseInputFileParam) bool {
	return (text != nil && overridden(text)) || (img != nil && overridden(img)) || (file != nil && overridden(file))
}

// newOverride returns an item that sends exactly raw.
func newOverride(raw []byte) Item {
	return param.Override[Item](json.RawMessage(raw))
}
