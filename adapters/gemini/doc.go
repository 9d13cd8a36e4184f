// Package gemini trims Gemini conversations held as google.golang.org/genai
// values ([]*genai.Content) to a token budget, without breaking function
// call/response pairs and without losing anything the caller put in them.
//
// # Deciding on a copy, applying to the originals
//
// ToHistory converts contents to []history.Message only so that the core
// trimmer (history.TrimToRecentTurns) can decide what to keep. Trim then maps
// that decision back onto the caller's own *genai.Content values: every
// content that is kept whole is returned as the very same pointer, so thought
// signatures, inline data, file references, part metadata and any field this
// package does not know about survive byte for byte. Only two kinds of
// content are new values:
//
//   - the breadcrumb, a user content holding one text part, inserted where
//     older turns were dropped;
//   - a content the orphan sweep had to cut down: a model content whose
//     unanswered function calls were stripped, or a user content holding
//     several function responses of which some answer nothing. Such a
//     content is a new *genai.Content with the same Role whose Parts hold
//     the caller's remaining *genai.Part pointers, in their original order.
//
// The caller's slice, contents and parts are never modified.
//
// # Mapping
//
// A "model" content becomes one assistant message: its text parts are its
// content, thought parts are reasoning parts, function calls are tool calls,
// inline data and file data are image or file parts (image dimensions are
// read from PNG, JPEG and GIF headers so images cost what they are).
// Executable code, code execution results and server-side tool calls and
// responses are counted as text. A "user" content (or one with no role)
// becomes one user message, unless it holds function responses: then each
// function response becomes one tool message, and the content's other parts
// become a user message of history.KindNudge, which neither opens a turn nor
// separates responses from their calls.
//
// # Pairing
//
// Gemini function call ids are optional. A function response answers the
// call of the immediately preceding model content that has its id, or,
// failing that, the first not yet answered call with its name: calls and
// responses pair by id when they have one and by name and order otherwise.
// ToHistory gives calls without an id a synthetic id ("#c" followed by the
// content and part index) and gives a response the id of the call it
// answers, so the core's id-based orphan sweep applies Gemini's rule.
// Validate states and checks the rule Gemini enforces on requests.
//
// # The system instruction
//
// Gemini carries the system instruction in GenerateContentConfig, not in
// the contents. Trim takes it as a separate argument so that its tokens
// count toward the budget; it is never dropped and never returned.
//
// # Breadcrumbs and repeated trims
//
// Trim is meant to run before every request on the runtime's full history,
// not on its own earlier output: a genai.Content cannot carry a marker that
// the Gemini API would accept on every backend, so a breadcrumb fed back in
// is an ordinary user content to this package.
//
// # Module
//
// This adapter is its own Go module, so that the core module does not depend
// on the genai SDK. Inside this repository its go.mod requires the core at a
// placeholder version and replaces it with the working tree (../..), so the
// adapter is always built and tested against the core beside it. A replace
// directive only applies in the main module: users who require
// github.com/histrim/history/adapters/gemini get the published core version
// that the adapter's tagged go.mod requires (the placeholder is set to the
// core's release tag when the adapter is tagged), never the replacement.
package gemini
