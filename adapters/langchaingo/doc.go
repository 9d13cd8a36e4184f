// Package langchaingo trims LangChainGo conversations
// ([]llms.MessageContent from github.com/tmc/langchaingo/llms) to a token
// budget, without breaking tool call/response pairs and without losing
// anything the caller put in them.
//
// # Deciding on a copy, applying to the originals
//
// ToHistory converts messages to []history.Message only so that the core
// trimmer (history.TrimToRecentTurns) can decide what to keep; Trim maps
// that decision back onto the caller's own messages. Every message that is
// kept whole is returned as the caller's value, sharing its Parts slice, so
// binary data, image URLs, cache-control wrappers (llms.CachedContent) and
// parts of types this package does not know survive as they are. Only two
// kinds of message are new values:
//
//   - the breadcrumb, a human message with one text part, inserted where
//     older turns were dropped;
//   - a message the orphan sweep cut down: an AI message whose unanswered
//     tool calls were stripped, or a tool message holding several
//     responses of which some answer nothing. Such a message has the same
//     Role and a new Parts slice holding the caller's remaining parts, in
//     their original order.
//
// The caller's slice, messages and parts are never modified.
//
// # Mapping
//
// System, human, generic and AI messages map to system, user, user and
// assistant messages: text parts are the content, llms.ImageURLContent and
// image llms.BinaryContent are image parts (dimensions read from PNG, JPEG
// and GIF data so that images cost what they are), other binary content is
// a file part, llms.ToolCall parts are tool calls, and llms.CachedContent
// counts as the part it wraps. A tool message becomes one tool message per
// llms.ToolCallResponse part; its other parts, if any, become a user message
// of history.KindNudge, which neither opens a turn nor separates responses
// from their calls. Legacy function messages (llms.ChatMessageTypeFunction,
// which carry no call id) are rejected with ErrInvalidMessage.
//
// # Breadcrumbs and repeated trims
//
// Trim is meant to run before every request on the runtime's full history,
// not on its own earlier output: an llms.MessageContent has no field for a
// marker, so a breadcrumb fed back in is an ordinary human message to this
// package.
//
// # Module
//
// This adapter is its own Go module, so that the core module does not depend
// on LangChainGo. Inside this repository its go.mod requires the core at a
// placeholder version and replaces it with the working tree (../..), so the
// adapter is always built and tested against the core beside it. A replace
// directive only applies in the main module: users who require
// github.com/histrim/history/adapters/langchaingo get the published core
// version that the adapter's tagged go.mod requires (the placeholder is set
// to the core's release tag when the adapter is tagged), never the
// replacement.
package langchaingo
