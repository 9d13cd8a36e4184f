package langchaingo

import (
	"context"
	"errors"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/pins"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/schema"
)

// Memory is a LangChainGo memory (schema.Memory) that holds a conversation
// within a token budget without ever losing the latest exchange. It is a
// memory.ConversationBuffer (its fields configure the store, the keys,
// the prefixes and ReturnMessages, as they do there) whose stored messages
// are trimmed with Trim: after every SaveContext the store is trimmed to
// Budget, and LoadMemoryVariables returns the stored messages trimmed to
// Budget again (for a store filled or a Budget changed elsewhere).
//
// Trim keeps the conversation's leading system messages and the most
// recent whole turns (a human message and everything up to the next one),
// drops older turns whole and puts a notice (a human message,
// history.BreadcrumbText by default) where they were, which the next trim
// recognises and replaces. The latest turn is always kept whole, even
// when it alone exceeds Budget: the latest human message and the reply to
// it are never dropped. (memory.ConversationTokenBuffer drops the oldest
// messages one by one until the rest fits, so a large exchange empties it
// completely, the latest request included, and a tool call can lose its
// result.) Tool calls and their results stay paired, and
// history.WithElision and history.WithStepTrim in Options apply.
//
// Budget bounds the history, not the request: leave room in the model's
// window for the prompt and the input, or wrap the model with NewModel,
// which trims the whole request. A Memory is not safe for concurrent use,
// as ConversationBuffer is not.
type Memory struct {
	memory.ConversationBuffer
	// Budget is the token budget of the stored history. A Budget of zero
	// or less makes SaveContext and LoadMemoryVariables fail with
	// history.ErrInvalidBudget.
	Budget int
	// Options are the trim's options (history.WithCounter,
	// history.WithElision, history.WithLowWater, history.WithOnTrim, ...).
	// history.WithPin names stored messages by their index in the store
	// when the Memory first trims with those pins; from then on the Memory
	// follows each pinned message across its own rewrites of the store, so
	// a pin stays on its message when older turns are dropped before it.
	// Changing the pins in Options starts again from the new indices.
	// (A store rewritten by someone else does not move the pins.)
	Options []history.Option

	// pinned are the store indices of the pinned messages now; from is
	// the WithPin indices of Options they were followed from.
	pinned, from []int
}

var _ schema.Memory = (*Memory)(nil)

// NewMemory returns a Memory with the defaults of
// memory.NewConversationBuffer (an in-memory store, the memory key
// "history", the prefixes "Human" and "AI", the history rendered as one
// string) that trims to budget with opts. opts is copied.
func NewMemory(budget int, opts ...history.Option) *Memory {
	return &Memory{ConversationBuffer: *memory.NewConversationBuffer(), Budget: budget, Options: slices.Clone(opts)}
}

// LoadMemoryVariables returns the stored messages trimmed to Budget under
// MemoryKey: as a []llms.ChatMessage when ReturnMessages is set, otherwise
// rendered as one string by llms.GetBufferString with HumanPrefix and
// AIPrefix. Kept messages are the stored values; a notice is a
// llms.HumanChatMessage (or the role the notice option gives), an AI
// message whose unanswered tool calls the trim stripped a copy without
// them, one whose calls' arguments history.ElideOptions.ClearArguments
// cleared a copy with the new arguments, and an elided tool result a
// llms.ToolChatMessage holding the placeholder. The store is not
// modified. inputs are not read.
//
// Errors: the store's, a stored message that cannot be converted (a
// legacy llms.FunctionChatMessage, see Trim), or the trim's
// (history.ErrInvalidBudget, an invalid option).
func (m *Memory) LoadMemoryVariables(ctx context.Context, _ map[string]any) (map[string]any, error) {
	msgs, err := m.ChatHistory.Messages(ctx)
	if err != nil {
		return nil, err
	}
	kept, _, _, err := m.trim(msgs)
	if err != nil {
		return nil, err
	}
	if m.ReturnMessages {
		return map[string]any{m.MemoryKey: kept}, nil
	}
	text, err := llms.GetBufferString(kept, m.HumanPrefix, m.AIPrefix)
	if err != nil {
		return nil, err
	}
	return map[string]any{m.MemoryKey: text}, nil
}

// SaveContext stores the input as a human message and the output as an
// AI message, as memory.ConversationBuffer does (same keys and errors),
// then trims the stored messages to Budget and replaces them when the
// trim dropped or changed anything. The exchange just saved is the latest
// turn: it is always kept.
func (m *Memory) SaveContext(ctx context.Context, inputs, outputs map[string]any) error {
	if err := m.ConversationBuffer.SaveContext(ctx, inputs, outputs); err != nil {
		return err
	}
	msgs, err := m.ChatHistory.Messages(ctx)
	if err != nil {
		return err
	}
	kept, changed, moved, err := m.trim(msgs)
	if err != nil || !changed {
		return err
	}
	if err := m.ChatHistory.SetMessages(ctx, kept); err != nil {
		return err
	}
	m.pinned = moved
	return nil
}

// trim trims msgs to m.Budget with Trim and returns the stored values it
// keeps, rebuilt where Trim rebuilt them, whether anything changed, and
// where the pinned messages are among the values kept. A history whose
// latest turn alone exceeds the budget is not an error: the smallest
// history is returned.
func (m *Memory) trim(msgs []llms.ChatMessage) ([]llms.ChatMessage, bool, []int, error) {
	native := make([]llms.MessageContent, len(msgs))
	for i, cm := range msgs {
		native[i] = contentOf(cm)
	}
	opts := m.Options
	if from := pins.Read(opts); !slices.Equal(from, m.from) {
		m.pinned, m.from = from, from // new pins in Options: start from them
	}
	if m.pinned != nil {
		opts = append(slices.Clip(opts), history.WithPin(m.pinned...))
	}
	out, _, from, err := codec.Decide(struct{}{}, native, m.Budget, opts, func(conv []history.Message, opts []history.Option) (history.Result, error) {
		return history.TrimToRecentTurns(conv, m.Budget, opts...)
	})
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, false, nil, err
	}
	changed := len(from) != len(msgs)
	kept := make([]llms.ChatMessage, len(from))
	for j, k := range from {
		// A message kept whole is the caller's value, its parts unshared
		// with nothing new; a cut-down one holds a new slice of parts.
		whole := k >= 0 && sameParts(out[j].Parts, native[k].Parts)
		switch {
		case whole:
			kept[j] = msgs[k]
		case k < 0:
			kept[j] = chatNotice(out[j])
		default:
			kept[j] = rebuild(msgs[k], out[j])
		}
		changed = changed || !whole || k != j
	}
	return kept, changed, adapt.Follow(from, m.pinned), nil
}

// contentOf converts a stored message to the message Trim counts: its
// text, and an AI message's tool calls (a legacy function call as text,
// since it has no id to pair) or a tool message's response. A legacy
// function message becomes one that Trim rejects.
func contentOf(cm llms.ChatMessage) llms.MessageContent {
	text := func(role llms.ChatMessageType, s string, parts ...llms.ContentPart) llms.MessageContent {
		if s != "" {
			parts = append([]llms.ContentPart{llms.TextContent{Text: s}}, parts...)
		}
		return llms.MessageContent{Role: role, Parts: parts}
	}
	switch x := cm.(type) {
	case llms.AIChatMessage:
		var parts []llms.ContentPart
		if x.FunctionCall != nil {
			parts = append(parts, llms.TextContent{Text: x.FunctionCall.Name + " " + x.FunctionCall.Arguments})
		}
		for _, c := range x.ToolCalls {
			parts = append(parts, c)
		}
		return text(llms.ChatMessageTypeAI, x.Content, parts...)
	case llms.ToolChatMessage:
		return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: x.ID, Content: x.Content}}}
	case llms.FunctionChatMessage:
		return llms.MessageContent{Role: llms.ChatMessageTypeFunction, Parts: []llms.ContentPart{llms.ToolCallResponse{Name: x.Name, Content: x.Content}}}
	case nil:
		return llms.MessageContent{Role: llms.ChatMessageTypeGeneric, Parts: []llms.ContentPart{nil}} // Trim rejects the nil part
	}
	return text(cm.GetType(), cm.GetContent())
}

// chatNotice returns the stored form of a notice Trim inserted.
func chatNotice(m llms.MessageContent) llms.ChatMessage {
	var s string
	if len(m.Parts) > 0 {
		if t, ok := m.Parts[0].(llms.TextContent); ok {
			s = t.Text
		}
	}
	switch m.Role {
	case llms.ChatMessageTypeAI:
		return llms.AIChatMessage{Content: s}
	case llms.ChatMessageTypeSystem:
		return llms.SystemChatMessage{Content: s}
	}
	return llms.HumanChatMessage{Content: s}
}

// rebuild returns orig as Trim changed it into m: an AI message with only
// the tool calls m holds (with the arguments m gives them, cleared ones
// included), or a tool message with the elided content m holds.
func rebuild(orig llms.ChatMessage, m llms.MessageContent) llms.ChatMessage {
	switch x := orig.(type) {
	case llms.AIChatMessage:
		var calls []llms.ToolCall
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok {
				calls = append(calls, c)
			}
		}
		x.ToolCalls = calls
		return x
	case llms.ToolChatMessage:
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				x.Content = r.Content
			}
		}
		return x
	}
	return orig // not reached: only AI and tool messages are cut down
}

// sameParts reports whether a and b are the same slice of parts.
func sameParts(a, b []llms.ContentPart) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
