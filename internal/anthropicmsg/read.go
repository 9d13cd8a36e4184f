package anthropicmsg

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/mediapart"
)

// ReadMessage returns the role and blocks of m, reading it through its
// JSON form when the SDK's accessor does not read it.
func (s *SDK[R, M, B]) ReadMessage(m *M) (string, []Block[B], error) {
	role, blocks, _, err := s.readMessage(m)
	return role, blocks, err
}

// readMessage is ReadMessage that also returns the blocks s.Message gave
// (nil when m was read through its JSON), so that a caller that needs
// both reads m once.
func (s *SDK[R, M, B]) readMessage(m *M) (string, []Block[B], []B, error) {
	if s.Message != nil {
		if role, content, ok := s.Message(m); ok {
			blocks := make([]Block[B], len(content))
			for j := range content {
				b := &content[j]
				if s.Overridden != nil && s.Overridden(b) {
					raw, err := json.Marshal(b)
					if err != nil {
						return "", nil, nil, errors.New("cannot encode overridden block " + strconv.Itoa(j) + ": " + err.Error())
					}
					blocks[j] = s.rawBlock(raw)
					continue
				}
				blocks[j] = Block[B]{Typed: b}
			}
			return role, blocks, content, nil
		}
	}
	role, blocks, err := s.readJSON(m)
	return role, blocks, nil, err
}

// readJSON reads m through its JSON form.
func (s *SDK[R, M, B]) readJSON(m *M) (string, []Block[B], error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return "", nil, errors.New("cannot encode overridden message: " + err.Error())
	}
	var wire struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return "", nil, errors.New("cannot decode overridden message: " + err.Error())
	}
	var text string
	if json.Unmarshal(wire.Content, &text) == nil {
		raw, _ := json.Marshal(map[string]string{"type": TypeText, "text": text})
		return wire.Role, []Block[B]{s.rawBlock(raw)}, nil
	}
	var raws []json.RawMessage
	if len(wire.Content) > 0 && string(wire.Content) != "null" {
		if err := json.Unmarshal(wire.Content, &raws); err != nil {
			return "", nil, errors.New("cannot decode overridden message content: " + err.Error())
		}
	}
	blocks := make([]Block[B], len(raws))
	for j, r := range raws {
		blocks[j] = s.rawBlock(r)
	}
	return wire.Role, blocks, nil
}

// rawBlock decodes the JSON of one block into a typed block when the SDK
// models its type, keeping the raw JSON otherwise.
func (s *SDK[R, M, B]) rawBlock(raw json.RawMessage) Block[B] {
	if s.Decode != nil {
		if t, ok := s.Decode(raw); ok && (s.Overridden == nil || !s.Overridden(&t)) {
			return Block[B]{Typed: &t}
		}
	}
	return Block[B]{Raw: raw}
}

// BlockType returns the "type" of a content block: the typed variant's,
// or the one its raw JSON states.
func (s *SDK[R, M, B]) BlockType(b *Block[B]) string {
	if b.Typed != nil {
		return s.Type(b.Typed)
	}
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b.Raw, &v)
	return v.Type
}

// Info reads one block: through the SDK's typed accessor, or its JSON.
func (s *SDK[R, M, B]) Info(b *Block[B]) Info {
	if b.Typed != nil {
		if s.Describe != nil {
			if in, ok := s.Describe(b.Typed); ok {
				return in
			}
		}
		raw, err := json.Marshal(b.Typed)
		if err != nil {
			return Info{Type: s.Type(b.Typed)}
		}
		return DescribeJSON(raw)
	}
	return DescribeJSON(b.Raw)
}

// WireBlock is the fields of a content block that the rules read, as the
// API sends them (JSON); the fake Messages server (internal/anthropicserver)
// reads requests with it too.
type WireBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	Thinking     string          `json:"thinking"`
	Signature    *string         `json:"signature"`
	Data         string          `json:"data"`
	Source       json.RawMessage `json:"source"`
	Title        *string         `json:"title"`
	Context      *string         `json:"context"`
	CacheControl json.RawMessage `json:"cache_control"`
	Encrypted    *string         `json:"encrypted_content"`
	ToolChanges  json.RawMessage `json:"tool_changes"`
}

// DescribeJSON reads one block from its JSON, the API's wire format.
// Server-tool blocks, search results, container uploads and types this
// package does not know count their whole JSON as text.
func DescribeJSON(raw json.RawMessage) Info {
	var w WireBlock
	if json.Unmarshal(raw, &w) != nil {
		return Info{Parts: []history.Part{{Type: history.PartText, Text: string(raw)}}}
	}
	in := Info{Type: w.Type, Cache: present(w.CacheControl)}
	switch w.Type {
	case TypeText:
		in.Parts = []history.Part{{Type: history.PartText, Text: w.Text}}
	case "image":
		in.Parts = []history.Part{imageJSON(w.Source)}
	case "document":
		in.Parts = documentJSON(nil, &w)
	case TypeThinking:
		sig := ""
		if w.Signature != nil {
			sig = *w.Signature
		}
		in.Parts = ThinkingParts(nil, w.Thinking, sig)
	case TypeRedactedThinking:
		in.Parts = []history.Part{{Type: history.PartReasoning, Text: w.Data}}
	case TypeToolUse:
		in.ID, in.Name, in.Input = w.ID, w.Name, inputText(w.Input)
	case TypeToolResult:
		in.ResultFor = w.ToolUseID
		in.Parts = resultJSON(w.Content)
	case TypeCompaction:
		in.Compaction, in.Parts = compactionJSON(&w)
	default:
		in.Parts = []history.Part{{Type: history.PartText, Text: string(raw)}}
	}
	return in
}

// compactionJSON reads a compaction block: it counts its summary, the
// text the model reads; its encrypted content and signature are metadata
// carried back verbatim.
func compactionJSON(w *WireBlock) (*Compaction, []history.Part) {
	c := &Compaction{}
	var content *string
	if present(w.Content) {
		var s string
		if json.Unmarshal(w.Content, &s) == nil {
			content = &s
		}
	}
	switch {
	case content == nil:
		c.Null = true
	case *content == "":
		c.Empty = true
	}
	if w.Encrypted != nil {
		c.Payload = *w.Encrypted
	}
	if w.Signature != nil {
		c.Payload += "\x00" + *w.Signature
	}
	if content == nil || *content == "" {
		return c, nil
	}
	return c, []history.Part{{Type: history.PartText, Text: *content}}
}

// present reports whether a JSON field was sent with a value.
func present(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// ThinkingParts appends the parts of a thinking block: its text, and its
// signature too when the signature is the longer. The signature carries
// the full thinking, encrypted; models that keep earlier thinking read it
// as input, and a summarised or omitted ("display": "omitted") text
// understates it.
func ThinkingParts(parts []history.Part, thinking, signature string) []history.Part {
	parts = append(parts, history.Part{Type: history.PartReasoning, Text: thinking})
	if len(signature) > len(thinking) {
		parts = append(parts, history.Part{Type: history.PartReasoning, Text: signature})
	}
	return parts
}

// inputText returns the JSON text of a tool_use input, as the model sees it.
func inputText(v json.RawMessage) string {
	if !present(v) {
		return ""
	}
	return string(v)
}

// InputJSON returns the JSON text of a tool_use input given as a Go value,
// as the model sees it.
func InputJSON(v any) string {
	switch in := v.(type) {
	case nil:
		return ""
	case json.RawMessage:
		return string(in)
	case []byte:
		return string(in)
	case string:
		return in
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// wireSource is an image's or a document's source.
type wireSource struct {
	Type      string          `json:"type"`
	MediaType string          `json:"media_type"`
	Data      string          `json:"data"`
	Content   json.RawMessage `json:"content"`
}

// imageJSON returns the part of an image block's source.
func imageJSON(raw json.RawMessage) history.Part {
	var src wireSource
	_ = json.Unmarshal(raw, &src)
	if src.Type == "base64" {
		return ImagePart(src.MediaType, src.Data)
	}
	return ImagePart("", "")
}

// ImagePart returns the part of an image: read from its base64 data when
// it is given (mediaType and b64), charged the maximum otherwise.
func ImagePart(mediaType, b64 string) history.Part {
	p := history.Part{Type: history.PartImage}
	if b64 != "" {
		p = mediapart.Base64(mediaType, b64, "", true)
	}
	p.Tokens = ImageTokens(p.Width, p.Height)
	return p
}

// documentJSON appends the parts of a document block.
func documentJSON(parts []history.Part, w *WireBlock) []history.Part {
	title, context := "", ""
	if w.Title != nil {
		title = *w.Title
	}
	if w.Context != nil {
		context = *w.Context
	}
	if title != "" || context != "" {
		parts = append(parts, history.Part{Type: history.PartText, Text: title + "\n" + context})
	}
	var src wireSource
	_ = json.Unmarshal(w.Source, &src)
	switch src.Type {
	case "text":
		return append(parts, history.Part{Type: history.PartText, Text: src.Data})
	case "base64":
		return append(parts, mediapart.Base64("application/pdf", src.Data, "", false))
	case "content":
		var s string
		if json.Unmarshal(src.Content, &s) == nil {
			return append(parts, history.Part{Type: history.PartText, Text: s})
		}
		var items []WireBlock
		_ = json.Unmarshal(src.Content, &items)
		for k := range items {
			switch items[k].Type {
			case TypeText:
				parts = append(parts, history.Part{Type: history.PartText, Text: items[k].Text})
			case "image":
				parts = append(parts, imageJSON(items[k].Source))
			}
		}
		return parts
	}
	return append(parts, history.Part{Type: history.PartFile, MIMEType: "application/pdf"})
}

// resultJSON returns the parts of a tool_result's content: a string, or
// an array of text, image, document and other blocks (the others counted
// by their JSON).
func resultJSON(content json.RawMessage) []history.Part {
	if !present(content) {
		return nil
	}
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []history.Part{{Type: history.PartText, Text: s}}
	}
	var items []json.RawMessage
	if json.Unmarshal(content, &items) != nil {
		return []history.Part{{Type: history.PartText, Text: string(content)}}
	}
	var parts []history.Part
	for _, item := range items {
		var w WireBlock
		_ = json.Unmarshal(item, &w)
		switch w.Type {
		case TypeText:
			parts = append(parts, history.Part{Type: history.PartText, Text: w.Text})
		case "image":
			parts = append(parts, imageJSON(w.Source))
		case "document":
			parts = documentJSON(parts, &w)
		default:
			parts = append(parts, history.Part{Type: history.PartText, Text: string(item)})
		}
	}
	return parts
}
