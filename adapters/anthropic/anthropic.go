package anthropic

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/mediapart"
	"github.com/histrim/history/internal/notice"
	"github.com/histrim/history/internal/regroup"
)

// MessageError reports a native message the adapter cannot convert: an
// unknown role, a tool_use block without an ID or in a user message, two
// tool_use blocks with one ID in a message, a tool_result block without a
// tool_use_id or in an assistant message. It wraps
// [history.ErrInvalidMessage], so errors.Is(err, history.ErrInvalidMessage)
// holds for it as for the core's own validation errors. Index is the
// position of the offending message in the caller's messages slice (the
// system prompt is never invalid), Reason says what is wrong with it.
type MessageError = adapt.MessageError

// codec is the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways, the system prompt taken
// separately.
var codec = &adapt.Codec[[]anthropic.TextBlockParam, anthropic.MessageParam]{
	Name: "anthropic", Noun: "message",
	Convert: func(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, opts []history.Option) (*adapt.View[anthropic.MessageParam], error) {
		hist, srcs, err := convert(system, msgs, true, opts)
		if err != nil {
			return nil, err
		}
		lead := len(hist) - len(srcs) // the system prompt, if any
		notice := func(b history.Message, next *regroup.Group) anthropic.MessageParam {
			if b.Role == history.RoleAssistant && next != nil && next.Native >= 0 && opensWithThinking(&msgs[next.Native]) {
				// The API joins consecutive assistant messages: the
				// notice's text would open the message before its
				// thinking, which the API rejects when thinking is
				// enabled.
				b.Role = history.RoleUser
			}
			return fromBreadcrumb(b)
		}
		return adapt.Grouped(msgs, hist, lead, srcs, notice, rebuild), nil
	},
}

// Trimmer is the stateful trimmer of a conversation's messages: a
// history.Trimmer (maintenance points, cold resume, summaries, the plan
// kept between requests so that the provider's prompt cache survives)
// over the caller's whole transcript, its decisions mapped back onto the
// caller's messages as [Trim] maps them. Its methods are
// Trim(transcript, budget), TrimContext(ctx, transcript, budget),
// RecoverOverflow(transcript, providerErr, attempt) and Reset; pins
// (history.WithPin) index the transcript. See docs/adapters.md, "The
// stateful trimmer".
type Trimmer = adapt.Trimmer[[]anthropic.TextBlockParam, anthropic.MessageParam]

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
func NewTrimmer(system []anthropic.TextBlockParam, opts ...history.Option) *Trimmer {
	return codec.NewTrimmer(system, opts)
}

// Positions returns where msgs[i], for each index i, landed in the output
// of the Trim or RecoverOverflow of msgs that returned res: the index to
// pin it at (history.WithPin) when that output is trimmed again; -1 for a
// message the output does not hold.
func Positions(msgs []anthropic.MessageParam, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// invalid is the *MessageError for msgs[i].
func invalid(i int, reason string) error {
	return adapt.Invalid("anthropic", "message", nil, i, reason)
}

// ToHistory converts a Messages API request to the library's message model,
// for counting and trimming (see the package documentation for the mapping).
// A non-empty system prompt becomes the first message, a RoleSystem message
// with one text part per block; then each message of msgs becomes one
// history.Message, except a user message holding tool_result blocks, which
// becomes one RoleTool message per tool_result and, when it also holds other
// blocks, a KindNudge user message carrying them.
//
// The notices a trim with default options inserts are marked
// history.KindBreadcrumb (see the package documentation); [Trim] also
// recognises the notices its options configure.
//
// The result holds no payloads (images and documents are reduced to their
// size) and is only meant for deciding, never for sending. ToHistory never
// modifies its arguments. A message it cannot convert yields a nil slice and
// a *MessageError naming its index in msgs.
func ToHistory(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam) ([]history.Message, error) {
	hist, _, err := convert(system, msgs, false, nil)
	return hist, err
}

// convert implements ToHistory and, with wantSources, also says where each
// converted message came from. It recognises the notices a trim with opts
// inserts (see notice.Mark): a message holding exactly a rendered notice's
// one text block (a cache_control marker on it is allowed, it is not read).
func convert(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, wantSources bool, opts []history.Option) ([]history.Message, []regroup.Slot, error) {
	hist, srcs, err := convertMessages(system, msgs, wantSources)
	if err != nil {
		return nil, nil, err
	}
	notice.Mark(hist, opts, readNotice, nil)
	return hist, srcs, nil
}

// readNotice returns the notice b as ToHistory reads it once Trim has
// rendered it natively: a user (or assistant) message holding one text
// block; an assistant-role notice in both forms, since Trim renders it as
// a user message before an assistant message that opens with thinking.
func readNotice(b history.Message) []history.Message {
	forms := []anthropic.MessageParam{fromBreadcrumb(b)}
	if b.Role == history.RoleAssistant {
		// Rendered as a user message before an assistant message that
		// opens with thinking (see toNative).
		b.Role = history.RoleUser
		forms = append(forms, fromBreadcrumb(b))
	}
	hist := make([]history.Message, 0, len(forms))
	for _, f := range forms {
		h, _, _ := convertMessages(nil, []anthropic.MessageParam{f}, false) // a rendered notice always converts
		hist = append(hist, h...)
	}
	return hist
}

// convertMessages is convert without the recognition of notices.
func convertMessages(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, wantSources bool) ([]history.Message, []regroup.Slot, error) {
	hist := make([]history.Message, 0, len(msgs)+1)
	var srcs []regroup.Slot
	if wantSources {
		srcs = make([]regroup.Slot, 0, len(msgs)+1)
	}
	if len(system) > 0 {
		m := history.Message{Role: history.RoleSystem, Parts: make([]history.Part, len(system))}
		for i := range system {
			m.Parts[i] = history.Part{Type: history.PartText, Text: system[i].Text}
		}
		hist = append(hist, m)
	}
	lead := len(hist) // the system prompt: no message of msgs
	for i := range msgs {
		role, blocks, err := readMessage(&msgs[i])
		if err != nil {
			return nil, nil, invalid(i, err.Error())
		}
		start := len(hist)
		switch role {
		case anthropic.MessageParamRoleSystem:
			m := history.Message{Role: history.RoleSystem}
			for j := range blocks {
				m.Parts = blockParts(m.Parts, &blocks[j])
			}
			hist = append(hist, m)
		case anthropic.MessageParamRoleAssistant:
			m, err := assistantMessage(blocks)
			if err != nil {
				return nil, nil, invalid(i, err.Error())
			}
			hist = append(hist, m)
			if wantSources {
				srcs = append(srcs, regroup.Slot{Native: i, Calls: toolUses(blocks)})
			}
		case anthropic.MessageParamRoleUser:
			if start > 0 && (hist[start-1].Role == history.RoleTool || hist[start-1].Kind == history.KindNudge) && hasResults(blocks) {
				// The previous message answered tool calls too. The core
				// would read both as one exchange, but the API wants every
				// result in the message right after its call: end the
				// exchange here with an empty assistant message that maps
				// to no block (it costs the per-message overhead only), so
				// the sweep drops these results as orphans.
				hist = append(hist, history.Message{Role: history.RoleAssistant})
				if wantSources {
					srcs = append(srcs, regroup.Slot{Native: i, Parts: []int{}})
				}
			}
			var err error
			hist, srcs, err = userMessages(hist, srcs, i, blocks, wantSources)
			if err != nil {
				return nil, nil, invalid(i, err.Error())
			}
		default:
			return nil, nil, invalid(i, "unknown role "+strconv.Quote(string(role)))
		}
		if wantSources && len(srcs) < len(hist)-lead {
			srcs = append(srcs, regroup.Slot{Native: i}) // every block
		}
	}
	return hist, srcs, nil
}

func assistantMessage(blocks []block) (history.Message, error) {
	m := history.Message{Role: history.RoleAssistant}
	for j := range blocks {
		b := blocks[j].typed
		switch {
		case b != nil && b.OfToolUse != nil:
			u := b.OfToolUse
			if u.ID == "" {
				return m, errors.New("tool_use block " + strconv.Itoa(j) + " has an empty id")
			}
			for k := range m.ToolCalls {
				if m.ToolCalls[k].ID == u.ID {
					return m, errors.New("tool_use id " + strconv.Quote(u.ID) + " used twice in one message")
				}
			}
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: u.ID, Name: u.Name, Arguments: inputJSON(u.Input)})
		case b != nil && b.OfToolResult != nil:
			return m, errors.New("tool_result block " + strconv.Itoa(j) + " in an assistant message")
		default:
			m.Parts = blockParts(m.Parts, &blocks[j])
		}
	}
	return m, nil
}

// userMessages appends the conversion of one user message: a plain RoleUser
// message, or one RoleTool message per tool_result block followed by a
// KindNudge message holding any other blocks.
func userMessages(hist []history.Message, srcs []regroup.Slot, i int, blocks []block, wantSources bool) ([]history.Message, []regroup.Slot, error) {
	results := 0
	for j := range blocks {
		b := blocks[j].typed
		if b != nil && b.OfToolUse != nil {
			return hist, srcs, errors.New("tool_use block " + strconv.Itoa(j) + " in a user message")
		}
		if b != nil && b.OfToolResult != nil {
			results++
		}
	}
	if results == 0 {
		m := history.Message{Role: history.RoleUser}
		for j := range blocks {
			m.Parts = blockParts(m.Parts, &blocks[j])
		}
		return append(hist, m), srcs, nil
	}
	var rest []int
	for j := range blocks {
		b := blocks[j].typed
		if b == nil || b.OfToolResult == nil {
			rest = append(rest, j)
			continue
		}
		r := b.OfToolResult
		if r.ToolUseID == "" {
			return hist, srcs, errors.New("tool_result block " + strconv.Itoa(j) + " has an empty tool_use_id")
		}
		m := history.Message{Role: history.RoleTool, ToolCallID: r.ToolUseID}
		for k := range r.Content {
			m.Parts = resultParts(m.Parts, &r.Content[k])
		}
		hist = append(hist, m)
		if wantSources {
			srcs = append(srcs, regroup.Slot{Native: i, Parts: []int{j}})
		}
	}
	if len(rest) > 0 {
		m := history.Message{Role: history.RoleUser, Kind: history.KindNudge}
		for _, j := range rest {
			m.Parts = blockParts(m.Parts, &blocks[j])
		}
		hist = append(hist, m)
		if wantSources {
			srcs = append(srcs, regroup.Slot{Native: i, Parts: rest})
		}
	}
	return hist, srcs, nil
}

// toolUses returns the index of each tool_use block of blocks, in order:
// the block of each ToolCall assistantMessage makes of them.
func toolUses(blocks []block) []int {
	var calls []int
	for j := range blocks {
		if b := blocks[j].typed; b != nil && b.OfToolUse != nil {
			calls = append(calls, j)
		}
	}
	return calls
}

func hasResults(blocks []block) bool {
	for j := range blocks {
		if b := blocks[j].typed; b != nil && b.OfToolResult != nil {
			return true
		}
	}
	return false
}

// inputJSON returns the JSON text of a tool_use input, as the model sees it.
func inputJSON(v any) string {
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

// block is one content block: typed when it is a known variant with typed
// fields, raw JSON otherwise (a block of a type this SDK version does not
// model, as ContentBlockUnion.ToParam returns it).
type block struct {
	typed *anthropic.ContentBlockParamUnion
	raw   json.RawMessage
}

// readMessage returns the role and blocks of m, reading it through its JSON
// form when it was built with param.Override.
func readMessage(m *anthropic.MessageParam) (anthropic.MessageParamRole, []block, error) {
	if overridden(m) {
		raw, err := json.Marshal(m)
		if err != nil {
			return "", nil, errors.New("cannot encode overridden message: " + err.Error())
		}
		var wire struct {
			Role    anthropic.MessageParamRole `json:"role"`
			Content json.RawMessage            `json:"content"`
		}
		if err := json.Unmarshal(raw, &wire); err != nil {
			return "", nil, errors.New("cannot decode overridden message: " + err.Error())
		}
		var text string
		if json.Unmarshal(wire.Content, &text) == nil {
			b := anthropic.NewTextBlock(text)
			return wire.Role, []block{{typed: &b}}, nil
		}
		var raws []json.RawMessage
		if len(wire.Content) > 0 {
			if err := json.Unmarshal(wire.Content, &raws); err != nil {
				return "", nil, errors.New("cannot decode overridden message content: " + err.Error())
			}
		}
		blocks := make([]block, len(raws))
		for j, r := range raws {
			blocks[j] = rawBlock(r)
		}
		return wire.Role, blocks, nil
	}
	blocks := make([]block, len(m.Content))
	for j := range m.Content {
		b := &m.Content[j]
		if blockOverridden(b) {
			raw, err := json.Marshal(b)
			if err != nil {
				return "", nil, errors.New("cannot encode overridden block " + strconv.Itoa(j) + ": " + err.Error())
			}
			blocks[j] = rawBlock(raw)
			continue
		}
		blocks[j] = block{typed: b}
	}
	return m.Role, blocks, nil
}

// rawBlock decodes the JSON of one block into a typed block when the SDK
// models its type, keeping the raw JSON otherwise.
func rawBlock(raw json.RawMessage) block {
	var t anthropic.ContentBlockParamUnion
	if json.Unmarshal(raw, &t) == nil && t.GetType() != nil && !blockOverridden(&t) {
		return block{typed: &t}
	}
	return block{raw: raw}
}

// overridden reports whether p was built with param.Override or
// param.SetJSON, so that its typed fields are not what it sends.
func overridden(p interface{ Overrides() (any, bool) }) bool {
	_, ok := p.Overrides()
	return ok
}

// blockOverridden reports whether the parts of b the conversion reads were
// built with param.Override.
func blockOverridden(b *anthropic.ContentBlockParamUnion) bool {
	switch {
	case overridden(b):
		return true
	case b.OfText != nil:
		return overridden(b.OfText)
	case b.OfImage != nil:
		return overridden(b.OfImage) || overridden(b.OfImage.Source)
	case b.OfToolUse != nil:
		return overridden(b.OfToolUse)
	case b.OfToolResult != nil:
		return overridden(b.OfToolResult)
	case b.OfThinking != nil:
		return overridden(b.OfThinking)
	case b.OfRedactedThinking != nil:
		return overridden(b.OfRedactedThinking)
	case b.OfDocument != nil:
		return overridden(b.OfDocument) || overridden(b.OfDocument.Source)
	}
	return false
}

// blockParts appends the parts that stand for one block of a message.
func blockParts(parts []history.Part, bl *block) []history.Part {
	b := bl.typed
	switch {
	case b == nil:
		return append(parts, history.Part{Type: history.PartText, Text: string(bl.raw)})
	case b.OfText != nil:
		return append(parts, history.Part{Type: history.PartText, Text: b.OfText.Text})
	case b.OfImage != nil:
		return append(parts, imagePart(&b.OfImage.Source))
	case b.OfDocument != nil:
		return documentParts(parts, b.OfDocument)
	case b.OfThinking != nil:
		t := b.OfThinking
		parts = append(parts, history.Part{Type: history.PartReasoning, Text: t.Thinking})
		if len(t.Signature) > len(t.Thinking) {
			// The signature carries the full thinking, encrypted; models
			// that keep earlier thinking read it as input, and a
			// summarised or omitted ("display": "omitted") text
			// understates it.
			parts = append(parts, history.Part{Type: history.PartReasoning, Text: t.Signature})
		}
		return parts
	case b.OfRedactedThinking != nil:
		// Encrypted: its length is the only size we have.
		return append(parts, history.Part{Type: history.PartReasoning, Text: b.OfRedactedThinking.Data})
	}
	// Server tool blocks, search results, container uploads and any other
	// block: count their JSON form.
	raw, err := json.Marshal(b)
	if err != nil {
		return parts
	}
	return append(parts, history.Part{Type: history.PartText, Text: string(raw)})
}

// resultParts appends the parts of one content item of a tool_result.
func resultParts(parts []history.Part, c *anthropic.ToolResultBlockParamContentUnion) []history.Part {
	switch {
	case c.OfText != nil:
		return append(parts, history.Part{Type: history.PartText, Text: c.OfText.Text})
	case c.OfImage != nil:
		return append(parts, imagePart(&c.OfImage.Source))
	case c.OfDocument != nil:
		return documentParts(parts, c.OfDocument)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return parts
	}
	return append(parts, history.Part{Type: history.PartText, Text: string(raw)})
}

func imagePart(src *anthropic.ImageBlockParamSourceUnion) history.Part {
	p := history.Part{Type: history.PartImage}
	if s := src.OfBase64; s != nil {
		p = mediapart.Base64(string(s.MediaType), s.Data, "", true)
	}
	p.Tokens = imageTokens(p.Width, p.Height)
	return p
}

func documentParts(parts []history.Part, d *anthropic.DocumentBlockParam) []history.Part {
	if d.Title.Value != "" || d.Context.Value != "" {
		parts = append(parts, history.Part{Type: history.PartText, Text: d.Title.Value + "\n" + d.Context.Value})
	}
	src := &d.Source
	switch {
	case src.OfText != nil:
		return append(parts, history.Part{Type: history.PartText, Text: src.OfText.Data})
	case src.OfBase64 != nil:
		return append(parts, mediapart.Base64("application/pdf", src.OfBase64.Data, "", false))
	case src.OfContent != nil:
		c := &src.OfContent.Content
		if c.OfString.Valid() {
			return append(parts, history.Part{Type: history.PartText, Text: c.OfString.Value})
		}
		for k := range c.OfContentBlockSourceContent {
			item := &c.OfContentBlockSourceContent[k]
			switch {
			case item.OfText != nil:
				parts = append(parts, history.Part{Type: history.PartText, Text: item.OfText.Text})
			case item.OfImage != nil:
				parts = append(parts, imagePart(&item.OfImage.Source))
			}
		}
		return parts
	}
	return append(parts, history.Part{Type: history.PartFile, MIMEType: "application/pdf"})
}

// Trim trims a Messages API request to budget tokens with
// [history.TrimToRecentTurns] and returns the caller's own messages that the
// trim kept, in order, with the notices the core inserted (for dropped
// turns, and for dropped steps under history.WithStepTrim) rendered as
// native messages. The system prompt counts toward the budget and is
// always kept; Trim never changes it, so the caller sends the same system
// slice. res is the core Result over the conversion of msgs: its Messages
// and Kept describe ToHistory(nil, msgs) (the system prompt counts in its
// token figures but is not in Messages).
//
// Kept messages are the caller's values themselves (shallow copies sharing
// their content slices), so thinking signatures, cache_control markers,
// citations and extra fields survive. Four cases produce a new message,
// built from the original's own blocks in their original order, the original
// left untouched:
//
//   - an assistant message from which the orphan sweep stripped tool_use
//     blocks that no tool_result answers (its thinking blocks, text and
//     answered calls are kept as they are);
//   - an assistant message some of whose tool_use blocks had their
//     arguments cleared by history.ElideOptions.ClearArguments: each is a
//     copy of the block (id, name, cache_control and extra fields kept)
//     whose input is the JSON object
//     {"elided":"[arguments elided: N tokens]"}; the message's other
//     blocks are untouched. An assistant message holding thinking is never
//     one of them: the core spares reasoning, so its signed blocks and the
//     calls after them come back as they were;
//   - a user message some of whose tool_result blocks were dropped as
//     orphans (its other tool_results and its text, images and documents
//     are kept);
//   - a user message holding tool_result blocks that history.WithElision
//     elided: each is a copy of the block (tool_use_id, is_error,
//     cache_control and extra fields kept) whose content is one text block
//     holding the placeholder; the message's other blocks are untouched.
//
// A message left with no blocks is left out, and so is an assistant
// message left with its thinking blocks alone once the sweep stripped its
// calls (the API rejects an assistant message that ends with thinking). When nothing needs trimming or
// sweeping, the result is msgs itself, clipped to its length. The result
// converts back (ToHistory) to messages that cost no more than
// res.Messages, so it fits the budget whenever res does.
//
// A notice is a user message with one text block, so it may stand
// right before the user message that opens the first kept turn. The API
// accepts consecutive user messages (it joins them into one turn), and
// [Validate] does too; Trim does not merge them, so that the kept messages
// stay byte-identical and their cache_control markers keep their place.
//
// Pins ([history.WithPin]) index msgs; Trim translates them to the
// converted history (see the package documentation).
//
// Errors: a *MessageError when msgs cannot be converted; the core's errors
// unchanged otherwise (history.ErrInvalidBudget for budget <= 0, a
// *history.OptionError for an invalid option, a pin on a message with
// tool_use or tool_result blocks included). When the latest turn alone
// exceeds the budget, Trim returns the trimmed messages, res, and a
// *history.BudgetError wrapping history.ErrLatestTurnTooLarge, as the core
// does. On any other error the messages are nil.
func Trim(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, budget int, opts ...history.Option) ([]anthropic.MessageParam, history.Result, error) {
	return codec.Trim(system, msgs, budget, opts)
}

// opensWithThinking reports whether m is an assistant message whose first
// block is a thinking or redacted_thinking block. A trim never removes
// such a block (it strips tool_use and tool_result blocks only), so a kept
// or cut-down copy of m opens with it too.
func opensWithThinking(m *anthropic.MessageParam) bool {
	role, blocks, err := readMessage(m)
	return err == nil && role == anthropic.MessageParamRoleAssistant && len(blocks) > 0 && isThinking(blockType(&blocks[0]))
}

// rebuild returns a copy of orig, a native message the trim cut down or
// elided in (its group g), holding only the blocks g keeps (those of its
// kept pieces, minus the tool_use blocks the sweep stripped) in their
// original order, the tool_result blocks the core elided replaced by
// their placeholder and the tool_use blocks whose arguments the core
// cleared (history.ElideOptions.ClearArguments) by copies with the new
// input. ok is false when no block is left, or only thinking blocks (see
// onlyThinking).
func rebuild(orig anthropic.MessageParam, g *regroup.Group) (anthropic.MessageParam, bool) {
	_, blocks, _ := readMessage(&orig)
	keep := g.Keep(len(blocks))
	if !slices.Contains(keep, true) || onlyThinking(blocks, keep) {
		return orig, false
	}
	if overridden(&orig) {
		return rebuildJSON(orig, g, len(blocks)), true
	}
	m := orig // keeps the role and any extra fields
	m.Content = regroup.KeptParts(g, regroup.WithArgs(g, orig.Content, withInput), elideBlock)
	return m, true
}

// onlyThinking reports whether the blocks keep keeps are all thinking or
// redacted_thinking blocks: what is left of an assistant message that
// thought and called tools no result answers, once the sweep stripped the
// calls. The API rejects an assistant message that ends with thinking
// ("The final block in an assistant message cannot be `thinking`"), so
// such a message is left out whole.
func onlyThinking(blocks []block, keep []bool) bool {
	for j, ok := range keep {
		if ok && !isThinking(blockType(&blocks[j])) {
			return false
		}
	}
	return true
}

// elideBlock returns a copy of the tool_result block b whose content is
// one text block holding text: tool_use_id, is_error, cache_control and
// extra fields are kept. A block built with param.Override is rewritten at
// the JSON level, keeping its unknown keys. b is not modified.
func elideBlock(b anthropic.ContentBlockParamUnion, text string) anthropic.ContentBlockParamUnion {
	if !blockOverridden(&b) && b.OfToolResult != nil {
		r := *b.OfToolResult
		r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: text}}}
		return anthropic.ContentBlockParamUnion{OfToolResult: &r}
	}
	raw, err := json.Marshal(b)
	if err == nil {
		raw, err = elideJSON(raw, text)
	}
	if err != nil {
		// b was read through its JSON form, so this does not happen; if
		// it did, send the placeholder alone rather than the full result.
		var id struct {
			ToolUseID string `json:"tool_use_id"`
		}
		_ = json.Unmarshal(raw, &id)
		return anthropic.NewToolResultBlock(id.ToolUseID, text, false)
	}
	return param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(raw))
}

// withInput returns a copy of the tool_use block b whose input is args,
// the JSON object the core cleared its arguments to, sent as it is (a
// json.RawMessage, which ToHistory reads back as the same text): its id,
// name, cache_control, caller and extra fields are kept. A block built
// with param.Override is rewritten at the JSON level, keeping its unknown
// keys. b is not modified.
func withInput(b anthropic.ContentBlockParamUnion, args string) anthropic.ContentBlockParamUnion {
	if !blockOverridden(&b) && b.OfToolUse != nil {
		u := *b.OfToolUse
		u.Input = json.RawMessage(args)
		return anthropic.ContentBlockParamUnion{OfToolUse: &u}
	}
	raw, err := json.Marshal(b)
	if err == nil {
		raw, err = withInputJSON(raw, args)
	}
	if err != nil {
		// b was read through its JSON form, so this does not happen; if
		// it did, send the call with the new input alone rather than the
		// full arguments.
		var id struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &id)
		return anthropic.NewToolUseBlock(id.ID, json.RawMessage(args), id.Name)
	}
	return param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(raw))
}

// withInputJSON replaces the "input" of the JSON object raw, a tool_use
// block, with args, a JSON object.
func withInputJSON(raw json.RawMessage, args string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return raw, err
	}
	obj["input"] = json.RawMessage(args)
	return json.Marshal(obj)
}

// elideJSON replaces the "content" of the JSON object raw, a tool_result
// block, with one text block holding text.
func elideJSON(raw json.RawMessage, text string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return raw, err
	}
	content, err := json.Marshal([]anthropic.TextBlockParam{{Text: text}})
	if err != nil {
		return raw, err
	}
	obj["content"] = content
	return json.Marshal(obj)
}

// rebuildJSON is rebuild for a message built with param.Override: it
// filters the "content" array of its JSON form, elides the blocks the core
// elided there and sets the input of the calls whose arguments it cleared,
// so unknown keys survive. n is the number of blocks the conversion read;
// should the JSON not read as it did then, orig is kept whole.
func rebuildJSON(orig anthropic.MessageParam, g *regroup.Group, n int) anthropic.MessageParam {
	raw, err := json.Marshal(orig)
	if err != nil {
		return orig
	}
	var obj map[string]json.RawMessage
	var content []json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || json.Unmarshal(obj["content"], &content) != nil || len(content) != n {
		return orig
	}
	failed := false
	content = regroup.WithArgs(g, content, func(c json.RawMessage, args string) json.RawMessage {
		e, err := withInputJSON(c, args)
		failed = failed || err != nil
		return e
	})
	kept := regroup.KeptParts(g, content, func(c json.RawMessage, text string) json.RawMessage {
		e, err := elideJSON(c, text)
		failed = failed || err != nil
		return e
	})
	if failed {
		return orig
	}
	if obj["content"], err = json.Marshal(kept); err != nil {
		return orig
	}
	if raw, err = json.Marshal(obj); err != nil {
		return orig
	}
	return param.Override[anthropic.MessageParam](json.RawMessage(raw))
}

// fromBreadcrumb renders the breadcrumb b as a native message: a user
// message with one text block, or an assistant message when b's role is
// assistant. A system-role breadcrumb becomes a user message too, since
// the Messages API takes system text only in its separate system field.
func fromBreadcrumb(b history.Message) anthropic.MessageParam {
	if b.Role == history.RoleAssistant {
		return anthropic.NewAssistantMessage(anthropic.NewTextBlock(b.Content))
	}
	return anthropic.NewUserMessage(anthropic.NewTextBlock(b.Content))
}
