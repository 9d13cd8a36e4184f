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
//   - a notice, a user content holding one text part, inserted where older
//     turns (or, under history.WithStepTrim, older steps of the latest turn)
//     were dropped;
//   - a content the orphan sweep had to cut down: a model content whose
//     unanswered function calls were stripped, or a user content holding
//     several function responses of which some answer nothing, or a user
//     content holding function responses that history.WithElision elided.
//     Such a content is a new *genai.Content with the same Role whose Parts
//     hold the caller's remaining *genai.Part pointers, in their original
//     order, each elided response replaced by a copy (see below).
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
// separates responses from their calls. A response is counted as the JSON
// of its Response map, except that a map holding only an "output" string
// (the key the Gemini API documents for a function's output) is counted as
// that string.
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
// # Pins
//
// history.WithPin takes indices into contents, the caller's slice (for
// RecoverOverflow, the contents it is given: what was sent). Trim and
// RecoverOverflow translate them into the converted request's indices
// (past the system instruction and the contents that convert to several
// messages), so a pinned content is never dropped, whatever the budget, and
// comes back as the caller's very pointer (by which its index in the output
// is found). A content that converts to one
// message without function calls can be pinned: a user prompt, a model
// text. A model content with function calls, a user content with function
// responses (its responses cannot be kept without their calls) and a notice
// a trim inserted are refused with a *history.OptionError whose reason
// names the content ("content 3 holds function calls; ..."), as is an index
// outside contents.
//
// # Overflows, overhead and calibration
//
// A runtime that sends what Trim returns and observes what Gemini counts
// uses three more pieces, put together in RecoverOverflow's retry loop:
//
//   - Overhead counts what a request sends besides its contents and system
//     instruction, from its *genai.GenerateContentConfig: the tool
//     definitions and the response schemas, as the JSON the client sends.
//     history.WithOverhead(Overhead(config, counter)) makes the contents fit
//     the budget together with them, and Result.TokensAfter count the whole
//     request.
//   - history.Calibration learns how Gemini's count relates to the
//     library's: pass history.WithCalibration(cal) to every Trim, and after
//     every accepted request call cal.Observe(res.TokensAfter,
//     int(resp.UsageMetadata.PromptTokenCount)).
//   - RecoverOverflow trims what was sent after Gemini rejected it for its
//     length (HTTP 400 INVALID_ARGUMENT, "The input token count (N) exceeds
//     the maximum number of tokens allowed (M)."), to the target the core
//     derives from those numbers, so that the caller can retry. The core
//     reads the genai.APIError the client returns (value or pointer, wrapped
//     or not) through its text; nothing needs converting.
//
// # Elision and step trimming
//
// Every option of the core works through Trim, including the degradation
// ladder: history.WithElision and history.WithStepTrim. A function
// response the core elided comes back, inside its user content and among
// that content's other parts, as a copy of the caller's *genai.Part whose
// FunctionResponse keeps its ID, Name and other fields, answers
//
//	{"output": "[elided tool result: read_file, 1834 tokens; re-run the tool if needed]"}
//
// and holds no Parts of its own. ToHistory counts it as that placeholder,
// exactly as the core did, so the native output fits the budget whenever
// the Result does. An elided error response answers under "output" too.
//
// # Breadcrumbs and repeated trims
//
// When turns are dropped, the turn notice (history.Breadcrumb, or the one
// set with history.WithBreadcrumb) is inserted as the first content; when
// steps of the latest turn are dropped, the step notice
// (history.StepBreadcrumbText, or history.WithStepBreadcrumb) right after
// that turn's opening content. Each is a content with one text part, of
// the user role, or of the model role for an assistant notice unless a
// model content follows it (Gemini wants a function-call turn right after
// a user turn).
//
// Trimming the full history before each request is the simplest use. A
// runtime that keeps Trim's output as its history can trim it again: Trim
// recognises the notices it would insert (history.Breadcrumbs of its
// options) and the default ones, so that the core replaces them rather
// than counting them as turns, and notices never stack. A genai.Content
// has no field every backend accepts for a marker (PartMetadata is
// rejected by Vertex AI), so recognition is by exact text: a content
// holding one text part with exactly a notice's text, in a role Trim gives
// it. The turn notice is recognised at the front only, where trims put it;
// the step notice anywhere, since later turns leave it behind. A content
// someone wrote with exactly a notice's text is the only false positive: it
// is then not counted as a turn of its own. ToHistory recognises the
// default notices.
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
