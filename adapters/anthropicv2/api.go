package anthropicv2

import (
	"errors"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/anthropicmsg"
)

// MessageError reports a native message the adapter cannot convert: an
// unknown role, a tool_use block without an ID or in a user message, two
// tool_use blocks with one ID in a message, a tool_result block without a
// tool_use_id or in an assistant message. It wraps
// [history.ErrInvalidMessage]. Index is the position of the offending
// message in the caller's messages slice, Reason says what is wrong with
// it.
type MessageError = adapt.MessageError

// ErrUnpaired is wrapped by *PairingError: the messages break the Messages
// API tool-pairing rule and the API would reject them with an HTTP 400.
var ErrUnpaired = errors.New("history/anthropicv2: unpaired tool_use or tool_result")

// PairingError reports where msgs break the pairing rule: Index is the
// position of the offending message in msgs, ID the tool_use ID concerned,
// Reason which part of the rule is broken. It wraps ErrUnpaired.
type PairingError = adapt.PairingError

// ErrCompaction is wrapped by *CompactionError: a compaction block stands
// where the Messages API rejects it (compaction_block_misplaced).
var ErrCompaction = errors.New("history/anthropicv2: compaction block misplaced")

// CompactionError reports a compaction block with content that is not the
// first block of the messages, or one in a system message: Index is the
// message holding it, Block its position there. It wraps ErrCompaction.
type CompactionError = anthropicmsg.CompactionError

// ErrThinking is wrapped by *ThinkingError: the request breaks a rule of
// extended thinking that the Messages API enforces with an HTTP 400.
var ErrThinking = errors.New("history/anthropicv2: extended thinking rule broken")

// ThinkingError reports where a request breaks a rule of extended thinking
// (see [ValidateRequest]): Index is the offending message, Block its
// offending block, Reason the rule. It wraps ErrThinking.
type ThinkingError = anthropicmsg.ThinkingError

// codec is the adapter's part of the shape every adapter shares.
var codec = sdk.Codec()

// ToHistory converts a Messages API request to the library's message
// model, for counting and trimming, exactly as the v1 adapter does (see
// the package documentation): the system prompt first, then one message
// per native message, a user message holding tool_result blocks split
// into one tool message per result and a nudge for its other blocks, and
// the latest compaction block with content a history.KindCompaction
// message of its own. The result is only meant for deciding, never for
// sending. ToHistory never modifies its arguments; a message it cannot
// convert yields a nil slice and a *MessageError naming its index in msgs.
func ToHistory(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam) ([]history.Message, error) {
	hist, _, err := sdk.Convert(system, msgs, false, nil)
	return hist, err
}

// Trim trims a Messages API request to budget tokens with
// [history.TrimToRecentTurns] and returns the caller's own messages that
// the trim kept, in order, with the notices the core inserted rendered as
// user messages holding one text block. It keeps every guarantee of the
// v1 adapter's Trim (the package documentation lists them): the system
// prompt counts and is never changed; thinking signatures, cache_control
// markers and extra fields survive; a message that lost blocks to the
// sweep or holds an elided result is a copy of the original's remaining
// blocks in their order. And the API's rules on compaction and caching:
// everything before the latest compaction block goes first, the block is
// sent byte for byte, an empty one is left out, and the output holds at
// most four cache breakpoints (system prompt included).
//
// Errors: a *MessageError when msgs cannot be converted; the core's errors
// otherwise. When the latest turn alone exceeds the budget, Trim returns
// the trimmed messages, res and a *history.BudgetError wrapping
// history.ErrLatestTurnTooLarge; on any other error the messages are nil.
func Trim(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, budget int, opts ...history.Option) ([]anthropic.MessageParam, history.Result, error) {
	return codec.Trim(system, msgs, budget, opts)
}

// RecoverOverflow trims a request the Messages API rejected as too long
// ("prompt is too long: N tokens > M maximum"), so that the caller can
// retry it: msgs converted as [Trim] does, [history.RecoverOverflow] with
// providerErr and attempt, the decision mapped back as Trim maps it. msgs
// are the messages exactly as sent; pins index them. Errors are the
// core's: history.ErrNotOverflow with msgs itself, a
// *history.RecoverError (surface it) when only the system prompt and the
// latest turn are left; a *MessageError with nil messages.
func RecoverOverflow(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, providerErr error, attempt int, opts ...history.Option) ([]anthropic.MessageParam, history.Result, error) {
	return codec.RecoverOverflow(system, msgs, providerErr, attempt, opts)
}

// NewTrimmer returns a Trimmer for one conversation with this system
// prompt that trims with opts, fixed for its life.
func NewTrimmer(system []anthropic.TextBlockParam, opts ...history.Option) *Trimmer {
	return &Trimmer{t: codec.NewTrimmer(system, opts)}
}

//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system []anthropic.TextBlockParam -message anthropic.MessageParam -params anthropic.MessageNewParams -usage anthropic.Usage -conversations SystemConversations

// Conversations trims many conversations, each with its own Trimmer, whose
// state it keeps in a history.StateStore shared by a runtime's replicas
// (history.Conversations over this package's messages): a conversation's
// requests send the prompts of one process wherever they land. Its
// methods are Trim(ctx, key, system, transcript, budget),
// RecoverOverflow(ctx, key, system, transcript, providerErr, attempt),
// Reset, Forget, Close and RecallStore, the system prompt passed with
// every call; its fields OnState, MaxConversations and IdleAfter. See
// docs/replicas.md.
type Conversations struct {
	*adapt.SystemConversations[[]anthropic.TextBlockParam, anthropic.MessageParam]
}

// NewConversations returns Conversations that keep their state in store
// and trim with opts (those of NewTrimmer, the same on every replica).
func NewConversations(store history.StateStore, opts ...history.Option) *Conversations {
	return &Conversations{adapt.NewSystemConversations(codec, store, opts)}
}

// Positions returns where msgs[i], for each index i, landed in the output
// of the Trim or RecoverOverflow of msgs that returned res: the index to
// pin it at when that output is trimmed again; -1 when it is not in it.
func Positions(msgs []anthropic.MessageParam, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// MarkPrefix places a cache breakpoint ({"type": "ephemeral"}) on the end
// of the new prefix of out, the output of a trim with opts: the last
// notice of its leading block, which a maintenance point (dropped turns,
// a summary) inserted, so that the next request reads everything up to it
// from the prompt cache. It adds none when there is no such notice or it
// already carries one, and it keeps the request at four breakpoints (the
// system prompt's included) by taking the oldest others off. out is not
// modified.
func MarkPrefix(system []anthropic.TextBlockParam, out []anthropic.MessageParam, opts ...history.Option) []anthropic.MessageParam {
	return sdk.MarkPrefix(system, out, opts)
}

// Validate checks msgs against the rules of the Messages API a trim could
// break: tool pairing (every tool_use answered by a tool_result in the
// very next message, every tool_result answering a tool_use of the
// message before, once, before any other block), and the placement of
// compaction blocks (the latest one with content first, none in a system
// message). It returns nil, a *PairingError, a *CompactionError or a
// *MessageError. It never modifies msgs.
func Validate(msgs []anthropic.MessageParam) error {
	return sdk.Validate(msgs, ErrUnpaired, ErrCompaction)
}

// ValidateRequest checks params.Messages as the Messages API does for a
// request with params' thinking configuration: [Validate] always, and the
// rules of extended thinking with thinking enabled (the final assistant
// turn opens with thinking; a message holding thinking starts with it; no
// message ends with it), adaptive or between_tools (no message ends with
// thinking) and disabled (the final assistant message holds none). It
// returns the first violation: a *PairingError, *CompactionError,
// *MessageError or *ThinkingError. It also counts the request's cache
// breakpoints (automatic caching's top-level cache_control, the tools',
// the system prompt's and the messages'): more than 4 is a *MessageError
// at the message holding the fifth (-1 when it is not in a message). It
// never modifies params.
func ValidateRequest(params anthropic.MessageNewParams) error {
	th := anthropicmsg.ThinkingUnset
	switch t := &params.Thinking; {
	case t.OfEnabled != nil:
		th = anthropicmsg.ThinkingEnabled
	case t.OfAdaptive != nil, t.OfBetweenTools != nil:
		th = anthropicmsg.ThinkingAdaptive
	case t.OfDisabled != nil:
		th = anthropicmsg.ThinkingDisabled
	}
	if err := sdk.ValidateRequest(params.Messages, th, anthropicmsg.UserTurn, ErrUnpaired, ErrCompaction, ErrThinking); err != nil {
		return err
	}
	return sdk.Breakpoints(params)
}

// Overhead returns what params sends besides its messages and its system
// prompt, counted with c (nil means history.Heuristic()): the tool
// definitions and the structured-output schema, read from the JSON the SDK
// sends, counted together as one message. Pass it to every trim with
// history.WithOverhead. It never modifies params; it returns 0 if params
// cannot be encoded.
func Overhead(params anthropic.MessageNewParams, c history.Counter) int {
	params.Messages, params.System = nil, nil
	return anthropicmsg.Overhead(c, params)
}

// Origin names the backend that wrote an opaque block (see Origins).
type Origin = anthropicmsg.Origin

// Origins records which backend wrote each opaque block of a conversation
// (thinking signatures, redacted thinking, compaction blocks): only that
// backend can read them back ("Could not decode the compaction blob").
// Record each reply as it is appended to the transcript; before sending
// to a backend, Retarget the messages to it. The zero value is ready to
// use; it is safe for concurrent use and keeps a digest per block.
type Origins = anthropicmsg.Origins

// Record notes that origin wrote the opaque blocks of msgs (a reply, as
// the caller appends it: reply.ToParam()).
func Record(o *Origins, origin Origin, msgs ...anthropic.MessageParam) {
	sdk.Record(o, origin, msgs)
}

// Retarget returns msgs made sendable to the backend to: a thinking or
// redacted_thinking block that o records as another backend's is left
// out, and a compaction block of another backend is replaced by a user
// message holding its summary (anthropicmsg.SummaryHeader, then the
// block's content) before the message that held it, so the request never
// carries a blob the new backend cannot decode; the messages before it,
// if the transcript still holds them, are then trimmed as any others.
// Blocks o does not know are kept. n counts the blocks left out or
// replaced; msgs is not modified and is returned itself when n is 0.
//
// With thinking enabled, the final assistant turn must open with
// thinking: switching backends in the middle of a tool loop leaves that
// turn without it; send that request with thinking disabled or adaptive.
// Compaction blocks are read through their JSON (the GA types model them
// in the beta package only).
func Retarget(msgs []anthropic.MessageParam, o *Origins, to Origin) (out []anthropic.MessageParam, n int) {
	return sdk.Retarget(msgs, o, to)
}

// door is what the door reads of a Messages request and writes back (see
// Trimmer.Fit): the model, max_tokens, the system prompt, the overhead
// Overhead counts, the messages; written back with a cache breakpoint on
// the new prefix (MarkPrefix) when the request's breakpoints (automatic
// caching's, the tools', the system prompt's) leave room for it; and the
// usage's input tokens, cached ones included.
var door = &adapt.Door[anthropic.MessageNewParams, anthropic.Usage, []anthropic.TextBlockParam, anthropic.MessageParam]{
	Read: func(p anthropic.MessageNewParams) adapt.Request[[]anthropic.TextBlockParam, anthropic.MessageParam] {
		return adapt.Request[[]anthropic.TextBlockParam, anthropic.MessageParam]{
			Model: string(p.Model), Output: int(min(max(p.MaxTokens, 0), 1<<31-1)), System: p.System, Messages: p.Messages,
			Overhead: func(c history.Counter) int { return Overhead(p, c) },
		}
	},
	Write: func(p anthropic.MessageNewParams, msgs []anthropic.MessageParam, opts []history.Option) anthropic.MessageNewParams {
		p.Messages = msgs
		q := p
		q.Messages = MarkPrefix(p.System, msgs, opts...)
		if sdk.Breakpoints(q) == nil {
			return q
		}
		return p
	},
	Usage: func(u anthropic.Usage) int {
		return int(min(max(u.InputTokens, 0)+max(u.CacheCreationInputTokens, 0)+max(u.CacheReadInputTokens, 0), 1<<31-1))
	},
}
