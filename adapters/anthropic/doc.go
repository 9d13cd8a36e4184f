// Package anthropic trims Anthropic Messages API histories
// ([github.com/anthropics/anthropic-sdk-go.MessageParam] plus the separate
// system prompt) with the whole-turn trimmer of github.com/histrim/history,
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
// unanswered tool_use, an orphaned tool_result) is new: a copy of the
// original holding its remaining blocks in their original order.
//
// # Mapping
//
// The system prompt is a separate request field in the Messages API, so
// both functions take it as a separate argument. It becomes one pinned
// RoleSystem message, counted toward the budget and never dropped.
//
//   - An assistant message becomes one RoleAssistant message: tool_use
//     blocks are its tool calls, thinking blocks reasoning parts, other
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
// # Breadcrumbs
//
// When turns are dropped, the breadcrumb is inserted as a user message with
// one text block (an assistant message if [history.WithBreadcrumb] gave it
// that role). It may then be followed by the user message that opens the
// first kept turn: the API joins consecutive user messages into one turn, so
// this is valid, and Trim does not merge them itself, which would change a
// kept message and move its cache_control marker. On the next trim, a user
// message holding exactly [history.BreadcrumbText] as its only block, right
// after the leading system messages, is recognised as the breadcrumb and
// replaced rather than counted as a turn. A custom breadcrumb text is not
// recognised: it then counts as the oldest turn and is dropped first, so
// breadcrumbs still never stack.
//
// # Pairing
//
// [Validate] checks the pairing rules the Messages API enforces with an
// HTTP 400. Trim never reorders blocks, so every slice it returns passes
// Validate whenever its input converted without error and kept tool_result
// blocks ahead of other blocks in each user message.
//
// # Module
//
// This adapter is its own Go module, so the core library keeps its small
// dependency set. Add it with
//
//	go get github.com/histrim/history/adapters/anthropic
//
// which resolves a published version of github.com/histrim/history. The
// replace directive in this module's go.mod only applies inside the
// histrim repository, where the adapter is built against the core in the
// same checkout; Go ignores replace directives of dependencies.
package anthropic
