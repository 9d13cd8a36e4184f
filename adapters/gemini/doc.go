// Package gemini trims Gemini conversations held as google.golang.org/genai
// values ([]*genai.Content) to a token budget, without breaking function
// call/response pairs, without sending what Gemini rejects where it stands,
// and without losing or moving anything the caller put in them, thought
// signatures first.
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
//     content holding function responses that history.WithElision elided,
//     or a model content whose calls' arguments
//     history.ElideOptions.ClearArguments cleared. Such a content is a new
//     *genai.Content with the same Role whose Parts hold the caller's
//     remaining *genai.Part pointers, in their original order, each elided
//     response or cleared call replaced by a copy (see below).
//
// A part is never moved to another content, merged with another part, or
// rebuilt (but for an elided response or a cleared call, whose copy keeps
// every other field of the part, its ThoughtSignature included): a thought
// signature always comes back on the part it came on. The caller's slice,
// contents and parts are never modified.
//
// # Mapping
//
// A "model" content becomes one assistant message: its text parts are its
// content, thought parts (Part.Thought) are reasoning parts
// (history.PartReasoning), function calls are tool calls, inline data and
// file data are image or file parts (image dimensions are read from PNG,
// JPEG and GIF headers so images cost what they are). Executable code,
// code execution results and server-side tool calls and responses are
// counted as text. A "user" content (or one with no role) becomes one user
// message, unless it holds function responses: then each function response
// becomes one tool message, and the content's other parts become a user
// message of history.KindNudge, which neither opens a turn nor separates
// responses from their calls (a plain user message when no response of the
// content answers a call, since its other parts are then all that is
// sent). A response is counted as the JSON of its Response map, except that
// a map holding only an "output" string (the key the Gemini API documents
// for a function's output) is counted as that string.
//
// # Thoughts and signatures
//
// Everything sent is counted as Gemini bills it: Gemini counts every part
// of the request as input, and its documentation says that "thought
// signatures will increase the input tokens you are charged when sent back
// as part of the request" (https://ai.google.dev/gemini-api/docs/thinking,
// Pricing). A thought counts as its text; a thought signature on any part
// but a function response counts as the base64 text the request carries
// for it, as a reasoning part of the part's message. (Gemini does not sign
// function responses; a signature found on one is carried but not counted,
// as an elided response must still count as its placeholder.)
//
// Thoughts and signatures are reasoning, so step trimming keeps a thinking
// first step of the latest turn (see history.WithStepTrim) and
// history.ElideOptions.ClearArguments never clears a call of a step that
// thinks or signs, except in a model content whose first function call
// carries no signature (a call another model wrote, or Gemini 2.5's shape,
// which signs a thought part): there they count, as much, as text parts.
// Gemini 3 checks signatures in the current turn only; keeping such a step
// at the front of a tool loop whose later user content was dropped would
// bring it into the current turn, where Gemini 3 rejects it.
//
// # Gemini's rules, kept by dropping
//
// A trim keeps Gemini's rules on the order of contents and on signatures
// by dropping whole contents, never by inventing one (ToHistory reads them
// the same way; see Validate for the rules and the errors Gemini answers):
//
//   - Function calls and responses pair as described under Pairing; a
//     response that answers nothing goes, and a call nothing answers is
//     stripped.
//   - A signature belongs to its part, and Gemini 3 binds a step's
//     signature to its first call. A model content that thinks (holds a
//     thought or a signature) and whose first call or a signed call has no
//     response is dropped whole, with the responses to its other calls,
//     rather than cut down to calls that would send its next call first,
//     without the signature, or its thoughts without their step. A step
//     whose signed call is still waiting for its response is dropped too.
//   - Contents begin with a user turn: a model content before the first
//     user content is dropped, with its responses (Gemini rejects a function
//     call turn there, google-gemini/gemini-cli#11814; a model text there
//     has been reported rejected, NousResearch/hermes-agent#55427).
//   - A function call turn comes right after a user content (a prompt or
//     function responses): a model content left before it with no call
//     for anything to answer (two model contents in a row, or one whose
//     calls lost their responses) is dropped whole.
//
// These drops are the orphan sweep's: ToHistory converts each such content
// to an assistant message holding one call nobody answers (id "#drop" and
// the content's index), which the core's sweep removes and counts in
// Result.OrphansRemoved. history.WithoutOrphanSweep turns them off with the
// sweep; a pin on such a content is refused. Trim never adds or repairs a
// signature: a request whose current turn already lacks one stays invalid,
// and Validate says so before it is sent (the documented
// "skip_thought_signature_validator" value is the caller's decision).
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
// Validate states and checks the rules Gemini enforces on requests:
// pairing, the order of function call turns and, for Gemini 3 thinking
// models, signatures.
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
// responses (its responses cannot be kept without their calls), a model
// content a trim drops whole (see "Gemini's rules, kept by dropping") and a
// notice a trim inserted are refused with a *history.OptionError whose
// reason names the content ("content 3 holds function calls; ..."), as is
// an index outside contents. A pinned model content kept out of a dropped
// turn stands right after the turn notice, and first when
// history.WithoutBreadcrumb leaves no notice: the one case where a trimmed
// history starts with a model content, by the caller's choice.
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
// With history.ElideOptions.ClearArguments, eliding a response also clears
// the arguments of the call it answers, when they are large enough: that
// call's part comes back, in its model content among the content's other
// parts, as a copy whose FunctionCall keeps its ID and Name and has
//
//	Args: map[string]any{"elided": "[arguments elided: 607 tokens]"}
//
// which encodes back (as ToHistory and the client encode it) to exactly
// the JSON the core counted; its PartialArgs, which would carry the
// arguments again, are dropped, and the part's other fields are kept. A
// step whose first call is signed, as Gemini 3 signs every step, maps to
// reasoning (its thoughts and signatures), so the core never clears its
// calls: it comes back as the caller's pointer, though its responses may
// be elided. A model content whose first call is unsigned reads as text
// (see Thoughts and signatures): its calls may be cleared, a signed
// thought part (Gemini 2.5's shape) or a signed later call keeping its
// signature on its part. Gemini never returns a signed call after an
// unsigned one; a runtime that builds such contents and wants every
// signed call sent as it was should leave ClearArguments at 0.
//
// # Breadcrumbs and repeated trims
//
// When turns are dropped, the turn notice (history.Breadcrumb, or the one
// set with history.WithBreadcrumb) is inserted as the first content; when
// steps of the latest turn are dropped, the step notice
// (history.StepBreadcrumbText, or history.WithStepBreadcrumb) right after
// that turn's opening content. Each is a user content with one text part,
// whatever the notice's role: the turn notice stands first, where contents
// begin with a user turn, and the step notice right before a kept step,
// whose function call turn must follow a user turn. A user notice also
// opens Gemini's current turn, which only narrows what Gemini 3 checks.
//
// Trimming the full history before each request is the simplest use. A
// runtime that keeps Trim's output as its history can trim it again: Trim
// recognises the notices it would insert (history.Breadcrumbs of its
// options) and the default ones, so that the core replaces them rather
// than counting them as turns, and notices never stack. A genai.Content
// has no field every backend accepts for a marker (PartMetadata is
// rejected by Vertex AI), so recognition is by exact text: a content
// holding one text part with exactly a notice's text, as a user content or
// as the model content earlier versions rendered an assistant notice as
// where no model content followed it. The turn notice is recognised at the front only, where trims put it;
// the step notice anywhere, since later turns leave it behind. A content
// someone wrote with exactly a notice's text is the only false positive: it
// is then not counted as a turn of its own. ToHistory recognises the
// default notices.
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
//	go get github.com/histrim/history/adapters/gemini
//
// Its go.mod requires the core release it is tagged with, with no replace,
// so the go command resolves both from the module proxy; inside the histrim
// repository, go.work builds it against the core beside it
// (docs/adapters.md, "Versioning").
package gemini
