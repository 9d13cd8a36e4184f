package anthropic

import (
	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/anthropicmsg"
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
// (internal/adapt), built over the Messages API logic both Anthropic
// adapters share (internal/anthropicmsg).
var codec = sdk.Codec()

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
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
// pin it at (history.WithPin) when that output is trimmed again; -1 for a
// message the output does not hold.
func Positions(msgs []anthropic.MessageParam, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
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
	hist, _, err := sdk.Convert(system, msgs, false, nil)
	return hist, err
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
