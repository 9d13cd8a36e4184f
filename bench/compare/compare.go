// Package compare runs history.TrimToRecentTurns and the closest Go peer,
// the HeadOut tailoring strategy of trpc-agent-go's model package (v1.11.2),
// on identical inputs with identical token counts, so that only the
// trimming algorithm differs, and checks both outputs side by side.
package compare

import (
	"context"
	"unicode/utf8"

	history "github.com/histrim/history"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// RunesPer4 is our mirror of the peer's model.SimpleTokenCounter (default
// 4 runes per token): the runes of the content, of text and reasoning parts,
// and of each tool call's type ("function"), id, name and arguments,
// divided by 4 and rounded down, at least 1 for a non-empty message. Tool
// messages' tool_call_id is not counted, as the peer does not count its
// ToolID. Both trimmers therefore see the same number for every message.
var RunesPer4 = history.CounterFunc(func(m history.Message) int {
	n := utf8.RuneCountInString(m.Content)
	for i := range m.Parts {
		if p := &m.Parts[i]; p.Type == history.PartText || p.Type == history.PartReasoning {
			n += utf8.RuneCountInString(p.Text)
		}
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		n += len("function") + utf8.RuneCountInString(c.ID) + utf8.RuneCountInString(c.Name) + utf8.RuneCountInString(c.Arguments)
	}
	t := n / 4
	if t < 1 && (m.Content != "" || len(m.ToolCalls) > 0) {
		t = 1
	}
	return t
})

// BytesPer4 is RunesPer4 with bytes instead of runes: the same fields,
// len() instead of a rune count, so it costs O(1) per field. With it (and
// PeerBytesPer4 on the peer's side) the benchmark measures the trimming
// algorithms alone, without the O(content) scan that a rune count adds to
// both sides equally.
var BytesPer4 = history.CounterFunc(func(m history.Message) int {
	n := len(m.Content)
	for i := range m.Parts {
		if p := &m.Parts[i]; p.Type == history.PartText || p.Type == history.PartReasoning {
			n += len(p.Text)
		}
	}
	for i := range m.ToolCalls {
		c := &m.ToolCalls[i]
		n += len("function") + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	t := n / 4
	if t < 1 && (m.Content != "" || len(m.ToolCalls) > 0) {
		t = 1
	}
	return t
})

// PeerBytesPer4 is BytesPer4 for the peer: a model.TokenCounter that
// counts the fields model.SimpleTokenCounter counts, by length in bytes.
type PeerBytesPer4 struct{}

// CountTokens returns the bytes/4 estimate of one message.
func (PeerBytesPer4) CountTokens(_ context.Context, m model.Message) (int, error) {
	n := len(m.Content) + len(m.ReasoningContent)
	for _, p := range m.ContentParts {
		if p.Text != nil {
			n += len(*p.Text)
		}
	}
	for _, c := range m.ToolCalls {
		n += len(c.Type) + len(c.ID) + len(c.Function.Name) + len(c.Function.Description) + len(c.Function.Arguments)
	}
	t := n / 4
	if t < 1 && (m.Content != "" || m.ReasoningContent != "" || len(m.ToolCalls) > 0) {
		t = 1
	}
	return t, nil
}

// CountTokensRange returns the sum of CountTokens over messages[start:end].
func (c PeerBytesPer4) CountTokensRange(ctx context.Context, messages []model.Message, start, end int) (int, error) {
	total := 0
	for i := start; i < end && i < len(messages); i++ {
		n, _ := c.CountTokens(ctx, messages[i])
		total += n
	}
	return total, nil
}

// ToPeer converts msgs to the peer's message type, once, before timing:
// tool calls become "function" calls with byte arguments, tool_call_id
// becomes ToolID, text parts become content parts and reasoning parts
// ReasoningContent.
func ToPeer(msgs []history.Message) []model.Message {
	out := make([]model.Message, len(msgs))
	for i, m := range msgs {
		p := model.Message{
			Role:    model.Role(m.Role),
			Content: m.Content,
			ToolID:  m.ToolCallID,
		}
		if m.Role == history.RoleTool {
			p.ToolName = m.Name
		}
		for _, c := range m.ToolCalls {
			p.ToolCalls = append(p.ToolCalls, model.ToolCall{
				Type: "function",
				ID:   c.ID,
				Function: model.FunctionDefinitionParam{
					Name:      c.Name,
					Arguments: []byte(c.Arguments),
				},
			})
		}
		for _, part := range m.Parts {
			switch part.Type {
			case history.PartText:
				text := part.Text
				p.ContentParts = append(p.ContentParts, model.ContentPart{Type: model.ContentTypeText, Text: &text})
			case history.PartReasoning:
				p.ReasoningContent += part.Text
			}
		}
		out[i] = p
	}
	return out
}

// FromPeer converts the peer's messages back, to check their pairing with
// the same rules as ours.
func FromPeer(msgs []model.Message) []history.Message {
	out := make([]history.Message, len(msgs))
	for i, p := range msgs {
		m := history.Message{Role: history.Role(p.Role), Content: p.Content, ToolCallID: p.ToolID}
		for _, c := range p.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: string(c.Function.Arguments)})
		}
		out[i] = m
	}
	return out
}

// Counting selects the counter pair both sides use.
type Counting int

// The counter pairs.
const (
	// Runes is the peer's own model.NewSimpleTokenCounter() (runes/4) and
	// our mirror RunesPer4: what a runtime gets out of the box.
	Runes Counting = iota
	// Bytes is PeerBytesPer4 and BytesPer4: O(1) per message, so the
	// trimming algorithms alone are measured.
	Bytes
)

// String returns "runes/4" or "bytes/4".
func (c Counting) String() string {
	if c == Bytes {
		return "bytes/4"
	}
	return "runes/4"
}

// Counter returns our side's counter for c.
func (c Counting) Counter() history.Counter {
	if c == Bytes {
		return BytesPer4
	}
	return RunesPer4
}

// Ours trims msgs with history.TrimToRecentTurns and the counter of c. It
// is what the benchmarks time for our side.
func Ours(msgs []history.Message, budget int, c Counting) (history.Result, error) {
	return history.TrimToRecentTurns(msgs, budget, history.WithCounter(c.Counter()))
}

// Peer returns a HeadOut strategy with the peer's counter for c; for Runes
// it is built exactly as the peer's documentation shows,
// model.NewHeadOutStrategy(model.NewSimpleTokenCounter()).
func Peer(c Counting) model.TailoringStrategy {
	if c == Bytes {
		return model.NewHeadOutStrategy(PeerBytesPer4{})
	}
	return model.NewHeadOutStrategy(model.NewSimpleTokenCounter())
}

// PeerTrim trims msgs with s. It is what the benchmarks time for the peer.
func PeerTrim(s model.TailoringStrategy, msgs []model.Message, budget int) ([]model.Message, error) {
	return s.TailorMessages(context.Background(), msgs, budget)
}

// Check is what one trimmer's output looks like, side by side.
type Check struct {
	// Messages and Tokens are the size of the output.
	Messages int
	Tokens   int
	// Fits reports Tokens <= budget.
	Fits bool
	// Paired reports that every tool result answers a call of the nearest
	// preceding assistant message and every call is answered: what the
	// providers require (history.SweepOrphans finds nothing to remove).
	Paired bool
	// Broken counts the orphans SweepOrphans would remove.
	Broken int
	// KeepsLast reports that the output ends with the input's last message.
	KeepsLast bool
	// KeptTurns counts the user messages that open a turn in the output.
	KeptTurns int
}

// Inspect checks out, the output of a trim of in to budget.
func Inspect(in, out []history.Message, budget int, counter history.Counter) Check {
	_, rep := history.SweepOrphans(out)
	c := Check{
		Messages: len(out),
		Tokens:   history.Estimate(out, counter),
		Broken:   rep.Total() + rep.Messages,
	}
	c.Fits = c.Tokens <= budget
	c.Paired = c.Broken == 0
	if len(in) > 0 && len(out) > 0 {
		a, b := in[len(in)-1], out[len(out)-1]
		c.KeepsLast = a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && len(a.ToolCalls) == len(b.ToolCalls)
	}
	for _, m := range out {
		if m.Role == history.RoleUser && m.Kind == "" {
			c.KeptTurns++
		}
	}
	return c
}
