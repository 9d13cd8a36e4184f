package anthropicserver

import (
	"encoding/json"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicmsg"
)

// request is what the server reads of a Messages API request body.
type request struct {
	Model             string          `json:"model"`
	System            json.RawMessage `json:"system"`
	Messages          []message       `json:"messages"`
	Tools             json.RawMessage `json:"tools"`
	CacheControl      json.RawMessage `json:"cache_control"`
	ContextManagement *struct {
		Edits []edit `json:"edits"`
	} `json:"context_management"`
	Thread *struct {
		Type              string `json:"type"`
		PreviousMessageID string `json:"previous_message_id"`
	} `json:"thread"`
}

// edit is one entry of context_management.edits.
type edit struct {
	Type    string `json:"type"`
	Trigger *struct {
		Type  string `json:"type"`
		Value int    `json:"value"`
	} `json:"trigger"`
}

// message is one message as sent: its content a string or blocks.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// p is the content read (see read), set on first use or from the
	// server's reading of the previous request.
	p *parsed
}

// parsed is a message's content read once: a function of its bytes
// alone, so that a message a conversation sends again (every request
// resends the history) is read only once (Server.remember), not at each
// of the server's checks. Shared: nothing changes it once read.
type parsed struct {
	raws   []json.RawMessage // the blocks as sent
	blocks []block           // each block's fields
	texts  []string          // each block's text (block.text)
	canon  []string          // each block canonical, set on first use
}

// read returns m's content read.
func (m *message) read() *parsed {
	if m.p == nil {
		m.p = parse(m.Content)
	}
	return m.p
}

// parse reads content: its blocks (a string content is one text block),
// each block's fields and text.
func parse(content json.RawMessage) *parsed {
	p := &parsed{}
	var s string
	if json.Unmarshal(content, &s) == nil {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		p.raws = []json.RawMessage{b}
	} else {
		_ = json.Unmarshal(content, &p.raws)
	}
	p.blocks = make([]block, len(p.raws))
	p.texts = make([]string, len(p.raws))
	for i, raw := range p.raws {
		p.blocks[i] = readBlock(raw)
		p.texts[i] = p.blocks[i].text()
	}
	return p
}

// canonical returns the blocks of p with their object keys sorted.
func (p *parsed) canonical() []string {
	if p.canon == nil {
		p.canon = make([]string, len(p.raws))
		for i, raw := range p.raws {
			p.canon[i] = canonical(raw)
		}
	}
	return p.canon
}

// blocks returns the content blocks of m (a string content is one text
// block).
func (m *message) blocks() []json.RawMessage { return m.read().raws }

// block is what the server reads of one content block: the fields the
// adapters' rules read.
type block struct{ anthropicmsg.WireBlock }

func readBlock(raw json.RawMessage) block {
	var b block
	_ = json.Unmarshal(raw, &b)
	return b
}

// compactionContent returns a compaction block's content and whether it
// is a string (not null or absent).
func (b *block) compactionContent() (string, bool) {
	var s string
	if len(b.Content) == 0 || string(b.Content) == "null" || json.Unmarshal(b.Content, &s) != nil {
		return "", false
	}
	return s, true
}

// text returns what a block holds as text, for counting and for the
// script: a text block's text, a tool_result's content, a thinking
// block's thinking, a compaction's summary.
func (b *block) text() string {
	switch b.Type {
	case "text":
		return b.Text
	case "thinking":
		return b.Thinking
	case "tool_result", "compaction":
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			return s
		}
		var parts []block
		_ = json.Unmarshal(b.Content, &parts)
		var out []string
		for i := range parts {
			out = append(out, parts[i].Text)
		}
		return strings.Join(out, "\n")
	}
	return ""
}

// toHistory converts the messages as the server reads them, its own
// reading of the wire format (independent of the adapters): text and
// thinking count as text, tool_use blocks are tool calls, each tool_result
// a tool message, a compaction its summary.
func toHistory(msgs []message) []history.Message {
	var out []history.Message
	for i := range msgs {
		m := history.Message{Role: history.Role(msgs[i].Role)}
		var texts []string
		p := msgs[i].read()
		for j := range p.blocks {
			b := &p.blocks[j]
			switch b.Type {
			case "tool_use":
				m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			case "tool_result":
				out = append(out, history.Message{Role: history.RoleTool, ToolCallID: b.ToolUseID, Content: p.texts[j]})
			default:
				texts = append(texts, p.texts[j])
			}
		}
		m.Content = strings.Join(texts, "\n")
		if m.Role == history.RoleUser && m.Content == "" {
			continue // tool results only
		}
		out = append(out, m)
	}
	return out
}

// canonical returns raw with its object keys sorted.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// prompt returns the canonical form of a request's system prompt and
// messages, block by block: what a prompt cache keys on, in order.
func prompt(system json.RawMessage, msgs []message) []string {
	out := []string{canonical(system)}
	for i := range msgs {
		out = append(out, "role:"+msgs[i].Role)
		out = append(out, msgs[i].read().canonical()...)
	}
	return out
}

// hasPrefix reports whether p starts with prefix.
func hasPrefix(p, prefix []string) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i := range prefix {
		if p[i] != prefix[i] {
			return false
		}
	}
	return true
}
