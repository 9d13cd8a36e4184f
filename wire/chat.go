package wire

// OpenAI Chat Completions (and the servers that speak it: vLLM,
// llama.cpp, Ollama's /v1, LM Studio, OpenRouter): a request's
// "messages", each kept as the bytes it came in, converted one for one as
// the openai adapter converts the SDK's messages (adapters/openai), and
// mapped back with the shape every adapter shares (internal/adapt.Each):
// a kept message is its own bytes; an elided tool result is its own
// object with "content" replaced; an assistant message whose calls the
// orphan sweep stripped or whose arguments were cleared is its own object
// with "tool_calls" (and the legacy "function_call") rewritten; a notice
// is a new {"role","content"} object.

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/media"
	"github.com/histrim/history/internal/mediapart"
)

// legacyCallID is the call id the openai adapter gives the deprecated
// function_call and the function-role message answering it.
const legacyCallID = "legacy_function_call"

// chatMessage is what the conversion reads of a chat message.
type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCallID       string          `json:"tool_call_id"`
	ToolCalls        []chatCall      `json:"tool_calls"`
	FunctionCall     *chatFunction   `json:"function_call"`
	ReasoningContent string          `json:"reasoning_content"`
	Refusal          string          `json:"refusal"`
	Audio            *struct {
		ID string `json:"id"`
	} `json:"audio"`
}

// chatCall is a tool call of an assistant message: a function call, or a
// custom tool's call.
type chatCall struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function *chatFunction `json:"function"`
	Custom   *struct {
		Name  string `json:"name"`
		Input string `json:"input"`
	} `json:"custom"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatPart is a content part.
type chatPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
	File *struct {
		FileData string `json:"file_data"`
	} `json:"file"`
}

// chatEach is the chat conversion in the shape every adapter shares.
var chatEach = &adapt.Each[json.RawMessage]{
	Name: "wire/chat", Noun: "message",
	To: chatToMessageCached, Notice: chatNotice, Elide: chatElide, Calls: chatCalls,
}

var chatCodec = chatEach.Codec()

// chatToMessage converts one chat message.
func chatToMessage(u *json.RawMessage) (history.Message, error) {
	var c chatMessage
	if err := json.Unmarshal(*u, &c); err != nil {
		return history.Message{}, err
	}
	m := history.Message{Name: c.Name}
	text, parts, err := chatContent(c.Content)
	if err != nil {
		return m, err
	}
	m.Content, m.Parts = text, parts
	switch c.Role {
	case "system", "developer":
		m.Role = history.RoleSystem
	case "user":
		m.Role = history.RoleUser
	case "assistant":
		m.Role = history.RoleAssistant
		if c.ReasoningContent != "" {
			m.Parts = append([]history.Part{{Type: history.PartReasoning, Text: c.ReasoningContent}}, m.Parts...)
		}
		if c.Refusal != "" {
			m.Parts = append(m.Parts, history.Part{Type: history.PartText, Text: c.Refusal})
		}
		if c.Audio != nil && c.Audio.ID != "" {
			m.Parts = append(m.Parts, history.Part{Type: history.PartFile, MIMEType: "audio"})
		}
		for i, call := range c.ToolCalls {
			var tc history.ToolCall
			switch {
			case call.Function != nil:
				tc = history.ToolCall{ID: call.ID, Name: call.Function.Name, Arguments: call.Function.Arguments}
			case call.Custom != nil:
				tc = history.ToolCall{ID: call.ID, Name: call.Custom.Name, Arguments: call.Custom.Input}
			default:
				return m, errors.New("tool call " + strconv.Itoa(i) + " has neither function nor custom")
			}
			if tc.ID == "" {
				return m, errors.New("tool call " + strconv.Itoa(i) + " has an empty id")
			}
			m.ToolCalls = append(m.ToolCalls, tc)
		}
		if c.FunctionCall != nil && c.FunctionCall.Name != "" {
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: legacyCallID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments})
		}
		for j := range m.ToolCalls {
			for k := range j {
				if m.ToolCalls[k].ID == m.ToolCalls[j].ID {
					return m, errors.New("tool call id " + strconv.Quote(m.ToolCalls[j].ID) + " used twice in one message")
				}
			}
		}
	case "tool":
		if c.ToolCallID == "" {
			return m, errors.New("tool message without tool_call_id")
		}
		m.Role, m.ToolCallID = history.RoleTool, c.ToolCallID
	case "function":
		m.Role, m.ToolCallID = history.RoleTool, legacyCallID
	default:
		return m, errors.New("unknown role " + strconv.Quote(c.Role))
	}
	return m, nil
}

// chatContent reads a content: a string, an array of parts, or nothing.
func chatContent(raw json.RawMessage) (string, []history.Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	}
	var ps []chatPart
	if err := json.Unmarshal(raw, &ps); err != nil {
		return "", nil, err
	}
	out := make([]history.Part, 0, len(ps))
	for _, p := range ps {
		switch {
		case p.Type == "text":
			out = append(out, history.Part{Type: history.PartText, Text: p.Text})
		case p.Type == "refusal":
			out = append(out, history.Part{Type: history.PartText, Text: p.Refusal})
		case p.ImageURL != nil:
			detail := p.ImageURL.Detail
			if detail == "original" {
				detail = "high"
			}
			out = append(out, mediapart.URL(p.ImageURL.URL, "", detail, true))
		case p.InputAudio != nil:
			mime := ""
			if p.InputAudio.Format != "" {
				mime = "audio/" + p.InputAudio.Format
			}
			out = append(out, mediapart.Base64(mime, p.InputAudio.Data, "", false))
		case p.File != nil:
			data, mime := p.File.FileData, ""
			if b64, m, ok := media.DataURL(data); ok {
				data, mime = b64, m
			}
			out = append(out, history.Part{Type: history.PartFile, MIMEType: mime, Size: media.Base64Size(data)})
		default: // a part this package does not know: its text, if any, counts
			out = append(out, history.Part{Type: history.PartText, Text: p.Text})
		}
	}
	return "", out, nil
}

// chatNotice renders a notice the core inserted.
func chatNotice(b history.Message) json.RawMessage {
	role := adapt.ByRole(b.Role, "system", "user", "assistant")
	out := []byte(`{"role":"` + role + `","content":`)
	out = appendString(out, b.Content)
	if b.Name != "" {
		out = append(out, `,"name":`...)
		out = appendString(out, b.Name)
	}
	return append(out, '}')
}

// appendString appends s as a JSON string, byte for byte as json.Marshal
// encodes it (its escapes: the HTML characters, control characters,
// invalid UTF-8 as \ufffd, U+2028 and U+2029; FuzzAppendString holds it
// to Marshal), without Marshal's allocations: placeholders carry a
// result's excerpt, and one is written per elided result per request.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = slices.Grow(b, len(s)+2)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// chatElide returns the tool message orig with the placeholder of e as
// its content, every other member as it came.
func chatElide(orig json.RawMessage, e *history.Message) json.RawMessage {
	// A client resends its transcript, and a plan elides the same results
	// to the same placeholders from one request to the next: the message
	// written is kept by orig's exact bytes with the placeholder it holds.
	if el, ok := chatElided.lookup(orig); ok && el.content == e.Content {
		return el.out
	}
	out := slices.Clip(chatElideOnce(orig, e))
	chatElided.add(orig, chatElision{e.Content, out}, len(orig)+len(out))
	return out
}

// chatElided keeps chatElide's messages (see there).
var chatElided convCache[chatElision]

// chatElision is a tool message elided: the placeholder's text, and the
// message that holds it (never written to: Request.Body copies it).
type chatElision struct {
	content string
	out     json.RawMessage
}

// chatElideOnce is chatElide without its cache.
func chatElideOnce(orig json.RawMessage, e *history.Message) json.RawMessage {
	content := appendString(nil, e.Content)
	if ms, err := objectMembers(orig); err == nil {
		if out, ok := replaceMember(orig, ms, "content", content); ok {
			return out
		}
	}
	// Converted, so an object with a content; if not, the placeholder
	// alone rather than the whole result.
	if e.ToolCallID == legacyCallID {
		return json.RawMessage(`{"role":"function","name":` + string(appendString(nil, e.Name)) + `,"content":` + string(content) + `}`)
	}
	return json.RawMessage(`{"role":"tool","tool_call_id":` + string(appendString(nil, e.ToolCallID)) + `,"content":` + string(content) + `}`)
}

// chatCalls returns the assistant message orig holding the calls of m
// (matched by id), each with m's arguments: a call whose arguments did
// not change is its own bytes; "tool_calls" goes when none is left, and
// "function_call" when the legacy call is not among them.
func chatCalls(orig json.RawMessage, m *history.Message) json.RawMessage {
	keep := make(map[string]string, len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		keep[c.ID] = c.Arguments
	}
	ms, err := objectMembers(orig)
	if err != nil {
		return orig
	}
	out := orig
	if tc, ok := find(ms, "tool_calls"); ok {
		calls, err := arrayElements(orig[tc.val.start:tc.val.end])
		if err != nil {
			return orig
		}
		arr := []byte{'['}
		n := 0
		for _, s := range calls {
			raw := orig[tc.val.start+s.start : tc.val.start+s.end]
			var call chatCall
			if json.Unmarshal(raw, &call) != nil {
				continue
			}
			args, ok := keep[call.ID]
			if !ok {
				continue
			}
			switch {
			case call.Function != nil && call.Function.Arguments != args:
				raw = setNested(raw, "function", "arguments", args)
			case call.Function == nil && call.Custom != nil && call.Custom.Input != args:
				raw = setNested(raw, "custom", "input", args)
			}
			if n > 0 {
				arr = append(arr, ',')
			}
			arr = append(arr, raw...)
			n++
		}
		arr = append(arr, ']')
		if n == 0 {
			arr = nil // remove the member
		}
		out, _ = replaceMember(orig, ms, "tool_calls", arr)
	}
	if fc, ok := find(ms, "function_call"); ok && string(orig[fc.val.start:fc.val.end]) != "null" {
		if ms, err = objectMembers(out); err != nil {
			return out
		}
		fc, _ = find(ms, "function_call")
		if args, ok := keep[legacyCallID]; !ok {
			out, _ = replaceMember(out, ms, "function_call", nil)
		} else {
			var f chatFunction
			if json.Unmarshal(out[fc.val.start:fc.val.end], &f) == nil && f.Arguments != args {
				v := setNested(out[fc.val.start:fc.val.end], "", "arguments", args)
				out, _ = replaceMember(out, ms, "function_call", v)
			}
		}
	}
	return out
}

// setNested returns the JSON object obj with the string value at
// obj[field][key] (obj[key] when field is ""), every other byte as it
// came; obj itself when it has no such member.
func setNested(obj []byte, field, key, value string) []byte {
	ms, err := objectMembers(obj)
	if err != nil {
		return obj
	}
	if field == "" {
		out, ok := replaceMember(obj, ms, key, appendString(nil, value))
		if !ok {
			return obj
		}
		return out
	}
	f, ok := find(ms, field)
	if !ok {
		return obj
	}
	inner := setNested(obj[f.val.start:f.val.end], "", key, value)
	out, _ := replaceMember(obj, ms, field, inner)
	return out
}
