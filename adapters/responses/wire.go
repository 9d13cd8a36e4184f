package responses

// This file reads an item built, wholly or in part, with param.Override
// (what the SDK's ToParam methods return, and what an application that
// keeps the raw JSON of output items sends) from its JSON form. It decodes
// the JSON once, into the fields the conversion reads, with encoding/json:
// the SDK's own decoder tries the union's variants one by one and costs
// two orders of magnitude more, and cannot tell an output message from an
// input one.

import (
	"encoding/json"
	"errors"
	"reflect"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/mediapart"
)

// wire is the union of the fields the conversion reads, over every item
// type. Fields whose JSON type depends on the item type are raw.
type wire struct {
	Type              string          `json:"type"`
	Role              string          `json:"role"`
	ID                string          `json:"id"`
	CallID            string          `json:"call_id"`
	Name              string          `json:"name"`
	Arguments         json.RawMessage `json:"arguments"` // a string, or any JSON (tool_search_call)
	Input             string          `json:"input"`
	Output            json.RawMessage `json:"output"`  // a string, a content list, chunks, a screenshot
	Content           json.RawMessage `json:"content"` // a string or a content list
	Summary           []wireText      `json:"summary"`
	EncryptedContent  string          `json:"encrypted_content"`
	ApprovalRequestID string          `json:"approval_request_id"`
	Reason            string          `json:"reason"`
	Result            json.RawMessage `json:"result"` // a string, or null
	Code              json.RawMessage `json:"code"`
	Action            json.RawMessage `json:"action"`
	Operation         json.RawMessage `json:"operation"`
	Tools             json.RawMessage `json:"tools"`
	Caller            json.RawMessage `json:"caller"` // what made a call: the model ("direct") or a program
}

type wireText struct {
	Text string `json:"text"`
}

// wirePart is one element of a content list: a message's content, a
// function or custom tool output, a shell output chunk.
type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	Detail   string `json:"detail"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// readJSON reads u through its JSON form.
func readJSON(u *Item) (view, error) {
	raw, err := rawJSON(u)
	if err != nil {
		return view{}, errors.New("cannot encode overridden item: " + err.Error())
	}
	var w wire
	if err := json.Unmarshal(raw, &w); err != nil {
		var head struct{}
		if json.Unmarshal(raw, &head) != nil {
			return view{}, errors.New("overridden item is not a JSON object: " + err.Error())
		}
		return opaque(raw, "", ""), nil // an object whose fields are not what its type says
	}
	return w.view(raw)
}

// rawJSON returns the JSON u sends: the raw JSON it, or its variant, was
// built from with param.Override when there is one, its encoding
// otherwise.
func rawJSON(u *Item) ([]byte, error) {
	if v, ok := u.Overrides(); ok {
		if raw, ok := v.(json.RawMessage); ok {
			return raw, nil
		}
		return json.Marshal(u)
	}
	if p := variant(u); p != nil {
		if v, ok := p.Overrides(); ok {
			if raw, ok := v.(json.RawMessage); ok {
				return raw, nil
			}
		}
	}
	return json.Marshal(u)
}

// variant returns the variant set in u, or nil.
func variant(u *Item) interface{ Overrides() (any, bool) } {
	v := reflect.ValueOf(u).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			if p, ok := f.Interface().(interface{ Overrides() (any, bool) }); ok {
				return p
			}
		}
	}
	return nil
}

// view reads the item w decoded from raw, as readTyped reads a typed one.
func (w *wire) view(raw []byte) (view, error) {
	if w.Type == "" && w.Role == "" && w.ID != "" {
		w.Type = "item_reference" // its type is optional
	}
	if v, ok, err := w.viewModel(raw); ok {
		return v, err
	}
	if v, ok, err := w.viewOutput(raw); ok {
		return v, err
	}
	switch w.Type {
	case "image_generation_call":
		v := view{cls: clsOutput, typ: w.Type, id: w.ID}
		if b64 := rawText(w.Result); b64 != "" {
			v.parts = []history.Part{mediapart.Base64("", b64, "", true)}
		}
		return v, nil
	case "file_search_call", "web_search_call", "code_interpreter_call", "mcp_call", "mcp_list_tools":
		return opaqueOutput(w, raw), nil
	case "additional_tools":
		return view{cls: clsSystem, typ: w.Type, id: w.ID, parts: []history.Part{textPart(string(w.Tools))}}, nil
	case "compaction":
		v := view{cls: clsCompaction, typ: w.Type, id: w.ID}
		if w.EncryptedContent != "" {
			v.parts = []history.Part{{Type: history.PartReasoning, Text: w.EncryptedContent}}
		}
		return v, nil
	case "compaction_trigger":
		return view{cls: clsNudge, typ: w.Type}, nil
	case "item_reference":
		if w.ID == "" {
			return view{}, errors.New("item_reference without an id")
		}
	}
	return opaque(raw, w.Type, w.ID), nil
}

// programCaller reports whether the call w was made by something other
// than the model itself: a caller that is set and not of type "direct" (a
// program, whose replay may depend on the call's arguments).
func (w *wire) programCaller() bool {
	if rawText(w.Caller) == "" {
		return false
	}
	var c struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(w.Caller, &c) != nil || c.Type != "direct"
}

// opaqueOutput is model output counted by its JSON form raw.
func opaqueOutput(w *wire, raw []byte) view {
	return view{cls: clsOutput, typ: w.Type, id: w.ID, parts: []history.Part{textPart(string(raw))}}
}

// opaque reads an item the adapter cannot see into from its JSON form
// raw: an item_reference, or an item of a type it does not know. It is
// model output of unknown size, counted by its JSON.
func opaque(raw []byte, typ, id string) view {
	return view{cls: clsOpaque, typ: typ, id: id, parts: []history.Part{textPart(string(raw))}}
}

// rawText returns the string raw encodes, or raw itself when it is no
// JSON string ("" for null or nothing).
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// contentParts reads a content list: input and output text, refusals,
// images, files; other elements count as their JSON.
func contentParts(raw json.RawMessage) []history.Part {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	parts := make([]history.Part, 0, len(list))
	for _, c := range list {
		var p wirePart
		if json.Unmarshal(c, &p) != nil {
			parts = append(parts, textPart(string(c)))
			continue
		}
		switch p.Type {
		case "input_text", "output_text":
			parts = append(parts, textPart(p.Text))
		case "refusal":
			parts = append(parts, textPart(p.Refusal))
		case "input_image":
			parts = append(parts, mediapart.URL(p.ImageURL, "", p.Detail, true))
		case "input_file":
			parts = append(parts, filePart(p.FileData, p.FileURL))
		default:
			parts = append(parts, textPart(string(c)))
		}
	}
	return parts
}

// viewModel reads messages, reasoning and tool calls; ok is false for any
// other type.
func (w *wire) viewModel(raw []byte) (v view, ok bool, err error) {
	switch w.Type {
	case "", "message":
		var text string
		if json.Unmarshal(w.Content, &text) == nil {
			v, err := message(w.Role, text, nil, true)
			v.id = w.ID
			return found(v, err)
		}
		v, err := message(w.Role, "", contentParts(w.Content), false)
		v.id = w.ID
		return found(v, err)
	case "reasoning":
		v := view{cls: clsReasoning, typ: w.Type, id: w.ID}
		var content []wireText
		_ = json.Unmarshal(w.Content, &content) // absent or not a list: no content
		for _, t := range append(w.Summary, content...) {
			v.parts = append(v.parts, history.Part{Type: history.PartReasoning, Text: t.Text})
		}
		if w.EncryptedContent != "" {
			v.parts = append(v.parts, history.Part{Type: history.PartReasoning, Text: w.EncryptedContent})
		}
		return found(v, nil)
	case "function_call":
		v, err := call(w.Type, w.ID, w.CallID, w.Name, rawText(w.Arguments))
		v.keepArgs = w.programCaller()
		return found(v, err)
	case "custom_tool_call":
		v, err := call(w.Type, w.ID, w.CallID, w.Name, w.Input)
		v.keepArgs = w.programCaller()
		return found(v, err)
	case "computer_call":
		return found(call(w.Type, w.ID, w.CallID, "computer", string(raw)))
	case "local_shell_call":
		return found(call(w.Type, w.ID, w.CallID, "local_shell", string(w.Action)))
	case "shell_call":
		return found(call(w.Type, w.ID, w.CallID, "shell", string(w.Action)))
	case "apply_patch_call":
		return found(call(w.Type, w.ID, w.CallID, "apply_patch", string(w.Operation)))
	case "program":
		return found(call(w.Type, w.ID, w.CallID, "program", rawText(w.Code)))
	case "mcp_approval_request":
		return found(call(w.Type, w.ID, w.ID, w.Name, rawText(w.Arguments)))
	case "tool_search_call":
		if w.CallID == "" {
			return found(opaqueOutput(w, raw), nil)
		}
		return found(call(w.Type, w.ID, w.CallID, "tool_search", string(w.Arguments)))
	}
	return view{}, false, nil
}

// viewOutput reads the outputs of tool calls; ok is false for any other
// type.
func (w *wire) viewOutput(raw []byte) (v view, ok bool, err error) {
	switch w.Type {
	case "function_call_output", "custom_tool_call_output":
		var text string
		if json.Unmarshal(w.Output, &text) == nil {
			return found(result(view{typ: w.Type, content: text}, w.CallID))
		}
		return found(result(view{typ: w.Type, parts: contentParts(w.Output)}, w.CallID))
	case "local_shell_call_output":
		return found(result(view{typ: w.Type, content: rawText(w.Output)}, w.ID))
	case "shell_call_output":
		var chunks []wirePart
		_ = json.Unmarshal(w.Output, &chunks) // not a list: no output
		var out []string
		for _, c := range chunks {
			out = append(out, c.Stdout, c.Stderr)
		}
		return found(result(view{typ: w.Type, content: joinText(out)}, w.CallID))
	case "apply_patch_call_output":
		return found(result(view{typ: w.Type, content: rawText(w.Output)}, w.CallID))
	case "program_output":
		return found(result(view{typ: w.Type, content: rawText(w.Result)}, w.CallID))
	case "computer_call_output":
		var shot wirePart
		_ = json.Unmarshal(w.Output, &shot) // not an object: a screenshot of unknown size
		return found(result(view{typ: w.Type, fixed: true, parts: []history.Part{screenshot(shot.ImageURL)}}, w.CallID))
	case "tool_search_output":
		if w.CallID == "" {
			return found(opaqueOutput(w, raw), nil)
		}
		return found(result(view{typ: w.Type, fixed: true, parts: []history.Part{textPart(string(w.Tools))}}, w.CallID))
	case "mcp_approval_response":
		return found(result(view{typ: w.Type, fixed: true, content: w.Reason}, w.ApprovalRequestID))
	}
	return view{}, false, nil
}
