// Package anthropic trims Anthropic Messages API histories
// ([github.com/anthropics/anthropic-sdk-go.MessageParam] plus the separate
// system prompt) with the trimmer of github.com/histrim/history,
// without losing anything the caller put in them.
//
// # Usage
//
//	import hanthropic "github.com/histrim/history/adapters/anthropic"
//
//	msgs, res, err := hanthropic.Trim(params.System, params.Messages, 150_000)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return err
//	}
//	params.Messages = msgs // params.System is never changed
//
// [Trim] converts the request with [ToHistory] only to decide what to keep,
// then returns the caller's own MessageParam values (via [history.Apply]):
// thinking and redacted_thinking blocks with their signatures, cache_control
// markers, citations, images, documents, server-tool blocks, blocks of types
// this SDK version does not model, and extra fields all come back exactly as
// they went in. Only a message that lost some blocks to the orphan sweep (an
// unanswered tool_use, an orphaned tool_result), holds a tool_result the
// core elided or a tool_use whose arguments it cleared is new: a copy of the
// original holding its remaining blocks in their original order, elided
// results holding their placeholder, cleared calls their new input.
//
// # Mapping
//
// The system prompt is a separate request field in the Messages API, so
// both functions take it as a separate argument. It becomes one pinned
// RoleSystem message, counted toward the budget and never dropped.
//
//   - An assistant message becomes one RoleAssistant message: tool_use
//     blocks are its tool calls, thinking and redacted_thinking blocks
//     reasoning parts (see Extended thinking for how they count), other
//     blocks text parts (server-tool blocks counted by their JSON).
//   - A user message becomes one RoleUser message, unless it holds
//     tool_result blocks: then each tool_result becomes a RoleTool message
//     and its other blocks (text after the results, as the API requires)
//     one KindNudge user message, so that the whole native message stays
//     in the turn of the tool calls it answers. One native message can thus
//     become several history messages; Trim joins the kept ones back into
//     one native message. A user message with tool_result blocks that
//     follows another one is preceded by an empty assistant message that
//     maps to no block: the API wants every result in the message right
//     after its call, so the sweep must not pair across the two.
//   - Images are counted by the Messages API rule (about width*height/750
//     tokens, at most about 1600), with the size read from the header of
//     base64 PNG, JPEG and GIF data; other images are charged the maximum.
//
// # Elision and step trimming
//
// Every option of the core works through Trim, including the degradation
// ladder: [history.WithElision] and [history.WithStepTrim]. A tool_result
// block the core elided comes back, inside its user message and among that
// message's other blocks, as a copy whose content is one text block holding
// the placeholder:
//
//	{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
//	 "cache_control": {"type": "ephemeral"},
//	 "content": [{"type": "text", "text": "[elided tool result: read_file, 1834 tokens; re-run the tool if needed]"}]}
//
// Its tool_use_id, is_error flag, cache_control marker and extra fields are
// kept (a block built with param.Override is rewritten at the JSON level),
// so the native output costs what the core counted and fits the budget
// whenever the Result does.
//
// With history.ElideOptions.ClearArguments, eliding a result also clears
// the input of the tool_use it answers, when it is large enough: the
// assistant message comes back as a copy whose tool_use block is a copy
// too, with the same id, name, cache_control marker and extra fields (a
// param.Override block or message rewritten at the JSON level, keeping
// its unknown keys), and the JSON object the core counted as its input:
//
//	{"type": "tool_use", "id": "toolu_1", "name": "write_file",
//	 "input": {"elided": "[arguments elided: 607 tokens]"}}
//
// The input stays an object, as the API requires, and is set as a
// json.RawMessage, so that the request sends, and [ToHistory] reads back,
// exactly the text the core counted. An assistant message holding a
// thinking or redacted_thinking block is never changed (see Extended
// thinking), though its results may be elided; its calls' inputs come
// back as they were.
//
// # Breadcrumbs
//
// When turns are dropped, the turn notice ([history.Breadcrumb], or the one
// set with [history.WithBreadcrumb]) is inserted as the first message; when
// steps of the latest turn are dropped (WithStepTrim), the step notice
// ([history.StepBreadcrumbText], or [history.WithStepBreadcrumb]) right
// after that turn's opening message. Each is a user message with one text
// block (an assistant message if its role is assistant, except right
// before an assistant message that opens with thinking: the API joins
// consecutive assistant messages, and the joined one would open with the
// notice's text, so the notice is sent as a user message). A notice may then
// be followed by another user message: the API joins consecutive user
// messages into one turn, so this is valid, and Trim does not merge them
// itself, which would change a kept message and move its cache_control
// marker.
//
// On the next trim, Trim recognises the notices it would insert
// ([history.Breadcrumbs] of its options) and the default ones, so that the
// core replaces them rather than counting them as turns, and notices never
// stack: a message holding exactly a notice's text as its only block (a
// cache_control marker on it is allowed) is marked [history.KindBreadcrumb].
// The turn notice is recognised at the front only (the first message, where
// trims put it); the step notice anywhere, since later turns leave it behind. A
// message someone typed with exactly a notice's text is the only false
// positive: it is then not counted as a turn of its own. [ToHistory]
// recognises the default notices.
//
// # Pins
//
// [history.WithPin] works through Trim and [RecoverOverflow] with indices
// into msgs, the caller's slice: the adapter translates them to the
// converted history, where the system prompt comes first and a user
// message holding tool_result blocks becomes several messages. A pinned
// message is never dropped or elided; when its turn goes, it is sent
// right after the system prompt and the notice, as the caller's own
// value. A message holding tool_use or tool_result blocks cannot be pinned
// (it would be parted from its pair), nor a notice an earlier trim
// inserted: the trim returns the core's *history.OptionError, whose reason
// names the index in msgs. The indices given to RecoverOverflow index the
// messages given to it, the ones that were sent.
//
// # Agreeing with the provider
//
// Anthropic counts a request with a tokenizer of its own, and counts the
// tool definitions, which are not messages. A runtime that trims before
// every request passes three things to every trim:
//
//	var cal history.Calibration // one per model
//	opts := []history.Option{
//		history.WithCalibration(&cal),
//		history.WithOverhead(hanthropic.Overhead(params, nil)), // tools, output schema
//		history.WithElision(history.ElideOptions{}),
//		history.WithStepTrim(),
//	}
//	msgs, res, err := hanthropic.Trim(params.System, transcript, window, opts...)
//	// ... send; then, from the response's usage:
//	u := message.Usage
//	cal.Observe(res.TokensAfter, int(u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens))
//
// [Overhead] counts what the request sends besides the messages and the
// system prompt (which Trim counts): the tool definitions and the
// structured-output schema, as JSON. The Calibration learns how
// Anthropic's count relates to the library's from each response's usage
// (all three input counts: with prompt caching, input_tokens alone is only
// the uncached part). When the API still answers HTTP 400 "prompt is too
// long: N tokens > M maximum", [RecoverOverflow] trims the request that
// was sent to fit the numbers the API stated, and the caller retries; see
// its documentation for the loop, and examples/agentloop for a complete
// runtime (its test runs it against a local server that speaks the API's
// wire format).
//
// # Extended thinking
//
// Thinking and redacted_thinking blocks come back as the caller's own
// values, in their place, signatures untouched: a trim never edits,
// reorders or strips one. They map to reasoning, and the core never
// clears the arguments of a call in a message holding reasoning
// (history.ElideOptions.ClearArguments), so the tool_use blocks after a
// thinking block come back as they were too. A message cut down by the
// orphan sweep or holding an elided result keeps all of its thinking
// blocks; an assistant
// message the sweep would leave with its thinking alone (every call it
// made unanswered) is left out whole, since the API rejects an assistant
// message that ends with thinking.
//
// With thinking enabled, the API requires the first assistant message of
// the final assistant turn to start with a thinking block ("Expected
// `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking`
// is enabled, a final `assistant` message must start with a thinking
// block"). Without interleaved thinking, Claude thinks only in the first
// assistant message of a tool loop, so dropping that step breaks the
// request. [history.WithStepTrim] therefore keeps the latest turn's first
// step when it holds thinking and drops the steps after it; the step
// notice goes right after the task, in a user message of its own, before
// the kept first step. It never goes between the tool loops: the API joins
// consecutive user messages, and a user text block after the results
// would read as a user turn, after which the next step would have to open
// with thinking.
//
// Whether text beside tool_result blocks in one user message (a runtime's
// note, a user's interjection) opens a new assistant turn is not
// documented: the error message speaks of "the lastmost set of `tool_use`
// and `tool_result` blocks", which such a message belongs to, while the
// documentation says Claude thinks anew after "a non-tool_result user
// turn". [ValidateRequest] takes the second reading: the final assistant
// turn begins after the last user message holding anything but
// tool_result blocks. Step trimming keeps the request valid by both
// readings: such text reaches the core as a history.KindNudge message, and
// when the first step of the loop it opens holds thinking, the core keeps
// it, or else the first step kept after the dropped ones holds thinking,
// or else it drops only the steps before that loop
// ([history.WithStepTrim]). FuzzTrimThinking checks every output against
// both readings.
//
// Counting. Claude Opus 4.5 and later and Claude Sonnet 4.6 and later keep
// the thinking of earlier assistant turns as input; earlier models strip
// it. Trim counts every thinking block, which is exact for the first and
// on the safe side for the second (a [history.Calibration] learns the
// difference). A thinking block counts its text, and its signature too
// when the signature is the longer: the signature carries the full
// thinking, encrypted, while the text may be a summary or, with
// "display": "omitted", empty. A redacted_thinking block counts its data.
//
// Preserved thinking. On the models with preserved thinking (Claude Fable
// and Mythos 5.1 and 5.2, Opus, Sonnet and Haiku 5.5), the API checks that
// nothing before a thinking block changed since Claude produced it. A trim
// that drops earlier turns, inserts a notice, elides a result or clears a
// call's arguments before kept thinking blocks invalidates them: the API then rejects the request
// ("Invalid `signature` in `thinking` block. The block is bound to a
// different conversation."; by default for accounts created from 31
// August 2026) unless the request sets
// thinking.block_binding.prefix_mismatch_behavior to "drop_block" (beta
// header thinking-binding-controls-2026-08-01), when it drops them
// instead. Trim does not strip them itself, since the latest tool loop
// needs its thinking. A [history.Trimmer] keeps the prompt append-only
// between its maintenance points, so only a maintenance point invalidates
// earlier thinking.
//
// # Compaction blocks and cache breakpoints
//
// A compaction block (server-side compaction, compact_20260112) is a block
// of a type this SDK version does not model: ContentBlockUnion.ToParam
// sends it back as its raw JSON, and Trim reads it from there. The API
// reads nothing before the latest compaction block with content and wants
// it first: a trim drops what precedes it first (it costs nothing), sends
// the block byte for byte and never edits, splits or elides it. One with
// null content (a no-op for the API) is sent as it came; one with empty
// content, which the API rejects, is left out. A trim never leaves more
// than four cache_control breakpoints (the system prompt's included),
// taking the oldest off beyond that, never a compaction block's;
// [MarkPrefix] places one on the new prefix after a maintenance point;
// [Origins], [Record] and [Retarget] keep opaque blocks away from a backend
// that cannot read them. See docs/server-side.md.
//
// # Pairing
//
// [Validate] checks the pairing rules the Messages API enforces with an
// HTTP 400. Trim never reorders blocks, so every slice it returns passes
// Validate whenever its input converted without error and kept tool_result
// blocks ahead of other blocks in each user message. [ValidateRequest]
// checks a whole request: pairing, and the rules of extended thinking for
// its thinking configuration.
//
// # The stateful trimmer and positions
//
// NewTrimmer returns a Trimmer: a history.Trimmer over the whole
// transcript (maintenance points, cold resume, summaries; the prompt only
// grows at its end between them, so the provider's prompt cache
// survives), its decisions mapped back onto the caller's own values as
// Trim maps them; its RecoverOverflow trims what it sent further, after
// which its plans fit what the provider said. Positions says where input
// messages landed in an output, to pin them again (history.WithPin) when
// the output is trimmed later. Every adapter keeps the same contract
// (docs/adapters.md, "The contract").
//
// A Trimmer's state saves and restores (MarshalBinary, UnmarshalBinary:
// a restored Trimmer sends byte for byte what the original would), and
// NewConversations keeps one per conversation, its state in a
// history.StateStore shared by a runtime's replicas (history.Conversations
// over this package's messages; docs/replicas.md).
//
// # Module
//
// This adapter is its own Go module, so the core library keeps its small
// dependency set. Add it with
//
//	go get github.com/histrim/history/adapters/anthropic
//
// Its go.mod requires the core release it is tagged with, with no replace,
// so the go command resolves both from the module proxy; inside the histrim
// repository, go.work builds it against the core beside it
// (docs/adapters.md, "Versioning").
package anthropic
