package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicmsg"
	"github.com/histrim/history/internal/media"
)

// errInput is wrapped by every error about the input's content.
var errInput = errors.New("invalid input")

// The input formats.
const (
	formatAuto      = "auto"
	formatJSONL     = "jsonl"
	formatOpenAI    = "openai"
	formatAnthropic = "anthropic"
)

// parse converts data in the given format (auto: detected) to messages and
// returns the format it used.
func parse(data []byte, format string) ([]history.Message, string, error) {
	if format == formatAuto {
		format = detect(data)
	}
	var msgs []history.Message
	var err error
	switch format {
	case formatJSONL:
		msgs, err = parseJSONL(data)
	case formatOpenAI:
		msgs, err = parseOpenAI(data)
	case formatAnthropic:
		msgs, err = parseAnthropic(data)
	default:
		return nil, format, fmt.Errorf("unknown format %q (want auto, jsonl, openai or anthropic)", format)
	}
	if err != nil {
		return nil, format, fmt.Errorf("%w: %s: %v", errInput, format, err)
	}
	return msgs, format, nil
}

// detect tells a request object (one JSON object with "messages") from a
// JSONL transcript, and an Anthropic request from an OpenAI one: a
// top-level "system" or content blocks only Anthropic has (tool_use,
// tool_result, thinking) mean Anthropic; anything else with "messages" is
// read as OpenAI, which also covers plain user/assistant text.
//
// One JSON object with a "messages" key is a request even when "messages"
// is not an array: the request's parser then says what is wrong with it.
func detect(data []byte) string {
	var probe struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&probe); err != nil || probe.Messages == nil || dec.More() {
		return formatJSONL
	}
	if probe.System != nil {
		return formatAnthropic
	}
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(probe.Messages, &msgs) != nil {
		return formatOpenAI
	}
	for _, m := range msgs {
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use", "tool_result", "thinking", "redacted_thinking":
				return formatAnthropic
			}
		}
	}
	return formatOpenAI
}

// decodeRequest decodes data, a request whose "messages" field
// checkMessages accepts, into a T.
func decodeRequest[T any](data []byte) (T, error) {
	var req T
	if err := checkMessages(data); err != nil {
		return req, err
	}
	err := json.Unmarshal(data, &req)
	return req, err
}

// checkMessages reports a request whose "messages" field is missing or is
// not an array, naming the field and what it holds instead.
func checkMessages(data []byte) error {
	var probe struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return err
	}
	v := bytes.TrimSpace(probe.Messages)
	switch {
	case len(v) == 0:
		return errors.New(`the request has no "messages" field`)
	case v[0] != '[':
		kind := "a string"
		switch v[0] {
		case '{':
			kind = "an object"
		case 'n':
			kind = "null"
		case 't', 'f':
			kind = "a boolean"
		case '"':
		default:
			kind = "a number"
		}
		return fmt.Errorf(`field "messages" must be an array of messages, not %s`, kind)
	}
	return nil
}

// parseJSONL reads one history.Message per non-empty line.
func parseJSONL(data []byte) ([]history.Message, error) {
	var msgs []history.Message
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m history.Message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, sc.Err()
}

// openAIRequest is the part of an OpenAI chat-completion request the tool
// reads.
type openAIRequest struct {
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Name       string          `json:"name"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
}

func parseOpenAI(data []byte) ([]history.Message, error) {
	req, err := decodeRequest[openAIRequest](data)
	if err != nil {
		return nil, err
	}
	msgs := make([]history.Message, 0, len(req.Messages))
	for i, in := range req.Messages {
		m := history.Message{Name: in.Name, ToolCallID: in.ToolCallID}
		switch in.Role {
		case "system", "developer":
			m.Role = history.RoleSystem
		case "user", "assistant", "tool":
			m.Role = history.Role(in.Role)
		default:
			return nil, fmt.Errorf("message %d: unsupported role %q", i, in.Role)
		}
		if err := openAIContent(&m, in.Content); err != nil {
			return nil, fmt.Errorf("message %d: %v", i, err)
		}
		for _, tc := range in.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// openAIContent reads content as a string or an array of parts.
func openAIContent(m *history.Message, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		return json.Unmarshal(raw, &m.Content)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Refusal  string `json:"refusal"`
		ImageURL struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
		File struct {
			FileData string `json:"file_data"`
		} `json:"file"`
		InputAudio struct {
			Data string `json:"data"`
		} `json:"input_audio"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("content is neither a string nor an array of parts: %v", err)
	}
	for _, p := range parts {
		switch p.Type {
		case "text":
			appendText(m, p.Text)
		case "refusal":
			appendText(m, p.Refusal)
		case "image_url":
			hp := history.Part{Type: history.PartImage, Detail: p.ImageURL.Detail}
			if b64, mime, ok := media.DataURL(p.ImageURL.URL); ok {
				hp.MIMEType = mime
				hp.Width, hp.Height = media.ImageSizeBase64(b64)
			}
			m.Parts = append(m.Parts, hp)
		case "file":
			b64, mime, _ := media.DataURL(p.File.FileData)
			m.Parts = append(m.Parts, history.Part{Type: history.PartFile, MIMEType: mime, Size: int64(len(b64)) * 3 / 4})
		case "input_audio":
			m.Parts = append(m.Parts, history.Part{Type: history.PartFile, MIMEType: "audio", Size: int64(len(p.InputAudio.Data)) * 3 / 4})
		default:
			return fmt.Errorf("unsupported content part type %q", p.Type)
		}
	}
	return nil
}

// anthropicBlock is one content block of an Anthropic message: the wire
// fields the adapters' rules read.
type anthropicBlock = anthropicmsg.WireBlock

// anthropicRequest is the part of an Anthropic Messages request the tool
// reads.
type anthropicRequest struct {
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func parseAnthropic(data []byte) ([]history.Message, error) {
	req, err := decodeRequest[anthropicRequest](data)
	if err != nil {
		return nil, err
	}
	var msgs []history.Message
	if len(req.System) > 0 && string(req.System) != "null" {
		sys := history.Message{Role: history.RoleSystem}
		blocks, err := blocksOf(req.System)
		if err != nil {
			return nil, fmt.Errorf("system: %v", err)
		}
		for _, b := range blocks {
			appendText(&sys, b.Text)
		}
		msgs = append(msgs, sys)
	}
	for i, in := range req.Messages {
		if in.Role != "user" && in.Role != "assistant" {
			return nil, fmt.Errorf("message %d: unsupported role %q", i, in.Role)
		}
		blocks, err := blocksOf(in.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d: %v", i, err)
		}
		results := 0
		for _, b := range blocks {
			if b.Type == "tool_result" {
				results++
			}
		}
		// A user message with tool results becomes one tool message per
		// result; its other blocks become a nudge, which neither opens a
		// turn nor separates results from their calls.
		m := history.Message{Role: history.Role(in.Role)}
		if results > 0 {
			m.Kind = history.KindNudge
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				if in.Role != "user" {
					return nil, fmt.Errorf("message %d: tool_result in an assistant message", i)
				}
				t := history.Message{Role: history.RoleTool, ToolCallID: b.ToolUseID}
				inner, err := blocksOf(b.Content)
				if err != nil {
					return nil, fmt.Errorf("message %d: tool_result content: %v", i, err)
				}
				for _, ib := range inner {
					if err := anthropicBlockInto(&t, ib); err != nil {
						return nil, fmt.Errorf("message %d: %v", i, err)
					}
				}
				msgs = append(msgs, t)
				continue
			}
			if err := anthropicBlockInto(&m, b); err != nil {
				return nil, fmt.Errorf("message %d: %v", i, err)
			}
		}
		if results == 0 || m.Content != "" || len(m.Parts) > 0 {
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// blocksOf reads content given as a string or an array of blocks.
func blocksOf(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content is neither a string nor an array of blocks: %v", err)
	}
	return blocks, nil
}

func anthropicBlockInto(m *history.Message, b anthropicBlock) error {
	switch b.Type {
	case "text":
		appendText(m, b.Text)
	case "thinking":
		m.Parts = append(m.Parts, history.Part{Type: history.PartReasoning, Text: b.Thinking})
	case "redacted_thinking":
		m.Parts = append(m.Parts, history.Part{Type: history.PartReasoning, Text: b.Data})
	case "tool_use":
		if m.Role != history.RoleAssistant {
			return errors.New("tool_use in a user message")
		}
		m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
	case "image", "document":
		var src struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		}
		if len(b.Source) > 0 {
			if err := json.Unmarshal(b.Source, &src); err != nil {
				return fmt.Errorf("%s block: source: %v", b.Type, err)
			}
		}
		if b.Type == "document" {
			m.Parts = append(m.Parts, history.Part{Type: history.PartFile, MIMEType: src.MediaType, Size: int64(len(src.Data)) * 3 / 4})
			break
		}
		p := history.Part{Type: history.PartImage, MIMEType: src.MediaType}
		if src.Type == "base64" {
			p.Width, p.Height = media.ImageSizeBase64(src.Data)
		}
		m.Parts = append(m.Parts, p)
	default:
		return fmt.Errorf("unsupported content block type %q", b.Type)
	}
	return nil
}

func appendText(m *history.Message, s string) {
	if s == "" {
		return
	}
	if m.Content != "" {
		m.Content += "\n"
	}
	m.Content += s
}

// quote is strconv.Quote, cut to n runes of s.
func quote(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return strconv.Quote(s)
}
