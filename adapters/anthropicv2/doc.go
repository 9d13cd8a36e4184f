// Package anthropicv2 trims Anthropic Messages API histories written with
// anthropic-sdk-go v2 ([github.com/anthropics/anthropic-sdk-go/v2.MessageParam]
// plus the separate system prompt) with the trimmer of
// github.com/histrim/history, without losing anything the caller put in
// them. Its beta types (BetaMessageParam, the ones server-side compaction,
// context editing and message threads use) are trimmed by the subpackage
// beta, with the same functions.
//
// # Usage
//
//	import hanthropic "github.com/histrim/history/adapters/anthropicv2"
//
//	msgs, res, err := hanthropic.Trim(params.System, params.Messages, 150_000)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return err
//	}
//	params.Messages = msgs // params.System is never changed
//
// The surface and the guarantees are those of the v1 adapter
// (github.com/histrim/history/adapters/anthropic): [ToHistory], [Trim],
// [RecoverOverflow], [Overhead], [Validate], [ValidateRequest], pins
// (history.WithPin, indices into msgs), elision and argument clearing,
// [NewTrimmer], [NewConversations] and [Positions], and the ready-made [Summarizer]
// ([NewSummarizer], docs/summaries.md). The logic is the same code: both
// adapters are small accessors over their SDK's types for the Messages
// API logic the core keeps in an internal package (docs/adapters.md, "Anthropic
// v2"). Kept messages are the caller's values; a message that lost blocks
// to the orphan sweep, or holds an elided result or cleared arguments, is
// a copy of its remaining blocks in their original order.
//
// What v2 changed: a MessageParam is a union of a user, an assistant and
// a system message (OfUser, OfAssistant, OfSystem). User and assistant
// messages are read field by field; a system message in the messages,
// whose blocks are of their own type, is read through its JSON, as is any
// block or message built with param.Override. The between_tools thinking
// mode is checked by [ValidateRequest] as adaptive is: the model may skip
// thinking, so only the final-block rule applies.
//
// # Compaction blocks and cache breakpoints
//
// The API reads nothing before the latest compaction block and wants it
// first ("compaction_block_misplaced"): a trim drops what precedes it
// first (those messages cost nothing), sends the block byte for byte and
// never edits, splits or elides it. A compaction block with null content
// (a failed compaction, a no-op for the API) is sent as it came; one with
// empty content, which the API rejects, is left out. A trim never leaves
// more than four cache_control breakpoints (the system prompt's
// included): beyond that it takes the oldest off, never a compaction
// block's. [MarkPrefix] places one on the new prefix after a maintenance
// point. [Origins], [Record] and [Retarget] keep blocks only their writer
// can read away from another backend. See docs/server-side.md.
//
// # Module
//
// This adapter is its own module, github.com/histrim/history/adapters/anthropicv2,
// beside the v1 adapter's: a second major version of a dependency gets a
// sibling module named after it, since a /v2 suffix would be this
// adapter's own major version (docs/adapters.md, "Anthropic v2"). It
// requires anthropic-sdk-go v2.15.0 and Go 1.25 (the SDK's), and the core
// release it is tagged with.
package anthropicv2
