// Package langchaingo trims LangChainGo conversations
// ([]llms.MessageContent from github.com/tmc/langchaingo/llms) to a token
// budget, without breaking tool call/response pairs and without losing
// anything the caller put in them. Trim, RecoverOverflow and Overhead are
// the building blocks; Model wraps any llms.Model so that every request is
// trimmed, calibrated and recovered from an overflow, and Memory is a
// schema.Memory that never drops the latest exchange.
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
//   - a notice, a human message with one text part, inserted where older
//     turns (or, under history.WithStepTrim, older steps of the latest
//     turn) were dropped;
//   - a message the orphan sweep cut down (an AI message whose unanswered
//     tool calls were stripped, or a tool message holding several
//     responses of which some answer nothing), a tool message holding
//     responses that history.WithElision elided, or an AI message whose
//     calls' arguments history.ElideOptions.ClearArguments cleared. Such a
//     message has the same Role and a new Parts slice holding the caller's
//     remaining parts, in their original order, each elided response or
//     cleared call replaced by a copy (see below).
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
// # Elision and step trimming
//
// Every option of the core works through Trim, including the degradation
// ladder: history.WithElision and history.WithStepTrim. A response the
// core elided comes back, in its tool message and among that message's
// other parts, as a copy of the caller's llms.ToolCallResponse with the
// same ToolCallID and Name, inside the same llms.CachedContent wrappers,
// whose Content is the placeholder:
//
//	llms.ToolCallResponse{ToolCallID: "call_1", Name: "read_file",
//		Content: "[elided tool result: read_file, 1834 tokens; re-run the tool if needed]"}
//
// so the native output counts what the core counted and fits the budget
// whenever the Result does.
//
// With history.ElideOptions.ClearArguments, eliding a response also clears
// the arguments of the call it answers: that llms.ToolCall comes back as a
// copy, inside the same llms.CachedContent wrappers, with the same ID,
// Type and function name and a new llms.FunctionCall whose Arguments are
// `{"elided":"[arguments elided: N tokens]"}`. No request carries
// reasoning here (see Reasoning), so no call is spared for it; a Memory's
// cleared AI message keeps its ReasoningContent.
//
// # Breadcrumbs and repeated trims
//
// When turns are dropped, the turn notice (history.Breadcrumb, or the one
// set with history.WithBreadcrumb) is inserted after the leading system
// messages; when steps of the latest turn are dropped, the step notice
// (history.StepBreadcrumbText, or history.WithStepBreadcrumb) right after
// that turn's opening message. Each is a message of its role (human, AI or
// system) with one text part.
//
// Trimming the full history before each request is the simplest use. A
// runtime that keeps Trim's output as its history can trim it again: Trim
// recognises the notices it would insert (history.Breadcrumbs of its
// options) and the default ones, so that the core replaces them rather than
// counting them as turns, and notices never stack. An llms.MessageContent
// has no field for a marker, so recognition is by exact text: a message of
// the notice's role holding one text part with exactly its text (a
// cache-control wrapper is allowed). The turn notice is recognised only
// right after the leading system messages, where trims put it; the step
// notice anywhere, since later turns leave it behind. A message someone
// wrote with exactly a notice's text is the only false positive: it is then
// not counted as a turn of its own. ToHistory recognises the default
// notices.
//
// # Pins
//
// history.WithPin takes indices into the caller's []llms.MessageContent.
// Since a tool message converts to one history message per response, Trim
// and RecoverOverflow translate them: a pinned message is pinned whole
// (every message it converts to), and it is never dropped or elided,
// whatever the budget; in a dropped turn it is kept right after the leading
// system messages and the notice. A tool message holding responses and an AI message
// holding tool calls cannot be pinned (they would be separated from their
// pairs), nor can a notice a trim inserted: such a pin, or an index beyond
// msgs, makes the call return a *history.OptionError whose reason names the
// index in msgs. A tool message holding only other parts (a nudge) can be
// pinned.
//
// # Recovering from an overflow
//
// A provider may count more than the budget allows even so. RecoverOverflow
// takes the messages that were sent, the provider's error and the attempt
// number, and trims them further to a target derived from the sizes the
// error states (history.RecoverOverflow): retry at most twice, and surface
// the error when it returns history.ErrNotOverflow or a
// *history.RecoverError. LangChainGo's OpenAI provider keeps only the
// message of OpenAI's error ("API returned unexpected status code: 400:
// This model's maximum context length is ..."), which is enough.
//
// # Tools and calibration
//
// A request sends its tools besides its messages. Overhead counts the
// []llms.Tool given with llms.WithTools (their JSON, as OpenAI-compatible
// providers receive it); history.WithOverhead(Overhead(tools, c)) makes
// the trim leave room for them and include them in Result.TokensAfter.
// PromptTokens reads the provider's count of a request from the response's
// GenerationInfo ("PromptTokens" for the OpenAI provider); pass it with
// Result.TokensAfter to history.Calibration.Observe, and the calibration
// to every trim with history.WithCalibration, so that trims aim at the
// budget the provider counts.
//
// # Model
//
// NewModel wraps an llms.Model (openai.New(...), anthropic.New(...), any
// other) with all of the above: before every GenerateContent call it trims
// the messages to the budget of the model Config.Model names (the door:
// its window from the models table less the call's output room, less
// history.MarginShare of the window until the Calibration is warm; a
// call's llms.WithModel names another), or to Config.Budget when set,
// with the call's tools counted and the Calibration applied (under the
// door without one, the Model's own per model; under the door the trims
// take the default policy's options before Config.Options, fit.Policy:
// the task preset, and under Config.Stateful the low-water mark and the
// model's cache retention, which a stateless trim of the whole transcript
// leaves out, since there it would cost context without saving a
// rewrite); it observes the usage of
// every accepted response; after a context overflow it retries with
// RecoverOverflow, at most MaxRetries times, after which the model's
// later budgets stay below what the provider said; and it reports every
// request to Config.OnEvent. The caller keeps its full history and passes
// it on every call:
//
//	model := langchaingo.NewModel(llm, langchaingo.Config{Model: "gpt-4o"}) // an unknown name fails each call
//	resp, err := model.GenerateContent(ctx, fullHistory, llms.WithTools(tools))
//
// Pins given in Config.Options refer to the messages of each call and
// hold across the retries.
//
// # Memory
//
// Memory is a schema.Memory for LangChainGo's chains: a
// memory.ConversationBuffer whose stored messages are trimmed with Trim
// after every SaveContext and on every LoadMemoryVariables. It drops whole
// turns, oldest first, behind a notice, keeps tool calls with their
// results, and always keeps the latest exchange, even when that alone
// exceeds its budget: memory.ConversationTokenBuffer, which drops the
// oldest messages one by one until the rest fits, empties itself
// completely on such an exchange, the latest request included.
//
// # Reasoning
//
// llms.MessageContent has no part for reasoning or thinking (v0.1.14): a
// provider's reasoning comes back in llms.ContentChoice (ReasoningContent,
// or GenerationInfo["ThinkingContent"] and ["ThinkingSignature"] from
// Anthropic), and no provider sends it back with a request, so there is
// nothing to count or keep. llms.AIChatMessage, which a Memory stores,
// has a ReasoningContent field: it is not counted, since no request carries
// it, and a kept AI message keeps it, as the stored value or as a copy with
// calls stripped.
//
// # Provider errors
//
// IsContextOverflow and ParseOverflow recognise, in the error a LangChainGo
// model returns, the provider's refusal of a request that does not fit the
// context window. They are the core's history.IsContextOverflow and
// history.ParseOverflow, corrected for what LangChainGo does to errors: it
// keeps the HTTP status only in its text ("API returned unexpected status
// code: 429: ..."), where the core does not read it, and its *llms.Error
// labels (llms.ErrorMapper, the providers' MapError) can read an overflow as
// a rate limit. Use them, rather than the core's, on LangChainGo errors.
// history.RecoverOverflow classifies with the core's: hand it the error the
// model returned (not a MapError result), once IsContextOverflow has said
// it is an overflow.
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
//	go get github.com/histrim/history/adapters/langchaingo
//
// Its go.mod requires the core release it is tagged with, with no replace,
// so the go command resolves both from the module proxy; inside the histrim
// repository, go.work builds it against the core beside it
// (docs/adapters.md, "Versioning").
package langchaingo
