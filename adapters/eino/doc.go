// Package eino trims CloudWeGo Eino conversations ([]*schema.Message from
// github.com/cloudwego/eino/schema) to a token budget, without breaking
// tool call/result pairs and without losing anything the caller put in
// them.
//
// # Deciding on a copy, applying to the originals
//
// ToHistory converts messages to []history.Message only so that the core
// trimmer (history.TrimToRecentTurns) can decide what to keep; Trim applies
// that decision to the caller's own messages with history.Apply. Every kept
// message is the caller's very pointer, so reasoning content, multi-content
// parts, response metadata, tool call indices and Extra maps survive as
// they are. Only three kinds of message are new values:
//
//   - a notice, a message of its role (user by default) inserted where
//     older turns (or, under history.WithStepTrim, older steps of the
//     latest turn) were dropped, marked in its Extra (see KindKey);
//   - an assistant message whose unanswered tool calls the orphan sweep
//     stripped, or whose calls' arguments history.ElideOptions.ClearArguments
//     cleared: a shallow copy of the caller's message with a new ToolCalls
//     slice holding the caller's remaining ToolCall values (Extra, Index
//     and Type kept), a cleared one with the core's arguments as its
//     Function.Arguments;
//   - a tool message that history.WithElision elided (see below).
//
// The caller's slice and messages are never modified.
//
// # Mapping
//
// Roles map one to one. Content is the message text; ReasoningContent
// becomes a reasoning part; text, image, audio, video and file parts of
// MultiContent, UserInputMultiContent and AssistantGenMultiContent become
// text, image and file parts (image dimensions are read from PNG, JPEG and
// GIF headers of base64 data so that images cost what they are); ToolCalls,
// ToolCallID and ToolName (or Name) carry the pairing.
//
// # Elision and step trimming
//
// Every option of the core works through Trim, including the degradation
// ladder: history.WithElision and history.WithStepTrim. A tool result the
// core elided comes back as a shallow copy of the caller's message whose
// Content is the placeholder and which holds nothing else (MultiContent,
// UserInputMultiContent, AssistantGenMultiContent and ReasoningContent
// cleared); ToolCallID, ToolName, Name and ResponseMeta are kept, and its
// Extra is a copy with Extra[KindKey] = "elided":
//
//	&schema.Message{Role: schema.Tool, ToolCallID: "call_1", ToolName: "read_file",
//		Content: "[elided tool result: read_file, 1834 tokens; re-run the tool if needed]",
//		Extra: map[string]any{eino.KindKey: "elided"}}
//
// It counts exactly what the core counted, so the output fits the budget
// whenever the Result does, and a later trim knows it is elided.
//
// With history.ElideOptions.ClearArguments, eliding a result also clears
// the arguments of the call it answers: the assistant message comes back
// as a copy whose call has Function.Arguments
// `{"elided":"[arguments elided: N tokens]"}` (ID, name, Index, Type and
// Extra kept), counting exactly what the core counted. A message that
// holds reasoning or a signature is never changed (see Thinking models).
//
// # Thinking models
//
// ReasoningContent counts as the text the request carries back: eino-ext's
// gemini model sends it as a thought part and its claude model as the
// thinking block (from Extra, with its signature); eino-ext's OpenAI model
// does not send it, so there it is counted on the safe side. What a
// thinking model needs back unmodified stays in the caller's values: the
// message's Extra (Claude's thinking and its signature) and each
// ToolCall's Extra (Gemini's thought signature, on the first of parallel
// calls); a copy with calls stripped keeps both, and a signature is never
// moved to another call. history.ElideOptions.ClearArguments never changes
// an assistant message with ReasoningContent (to the core it holds
// reasoning); the core cannot see a signature kept only in Extra, so a
// message whose call carries Gemini's thought signature but whose
// ReasoningContent is empty (Gemini returns signatures whether or not it
// returns thoughts) may have that call's arguments cleared, its Extra
// kept. Gemini asks for signed parts to come back as they were received:
// with eino-ext's gemini model, use ClearArguments only with thoughts
// included. Under history.WithStepTrim the first step of the latest turn
// is kept when its assistant message has reasoning, since Anthropic
// rejects, with thinking on, a final assistant turn whose first message
// does not start with its thinking block; the steps after it are dropped
// instead.
//
// Gemini also requires a function call turn to follow a user turn or a
// function response turn, and eino-ext's gemini model sends system and
// tool messages as user turns and assistant messages as model turns. The
// default notices are user messages, which keeps that order; a notice
// configured with the assistant role (history.WithStepBreadcrumb) would
// put a model turn before the next function call.
//
// # Kinds
//
// A runtime can tell the trimmer that a message is special by setting
// Extra[KindKey] to "summary" (pinned when it follows the system messages),
// "nudge" (a runtime note that never opens a turn) or "breadcrumb". Trim
// marks the notices it inserts the same way, so trimming its own output
// again replaces an old notice instead of stacking a second one.
//
// A runtime that stores messages without their Extra loses that marker.
// Trim then recognises its notices by exact text: a message without
// Extra[KindKey] that converts exactly as a notice Trim would insert
// (history.Breadcrumbs of its options) or a default notice (same role,
// text and name, nothing else) is read as a breadcrumb; the turn notice
// only after the leading system messages and summaries, the step notice
// anywhere, since later turns leave it behind. A message someone wrote with
// exactly a notice's text is the only false positive: it is then not
// counted as a turn of its own. ToHistory recognises the default notices.
//
// # Pins
//
// history.WithPin takes indices into the caller's slice: since every
// message converts to one history message, Trim and RecoverOverflow pass
// it to the core unchanged. A pinned message is never dropped or elided,
// whatever the budget; a pin on a tool message or on an assistant message
// with tool calls, or outside the slice, is the core's
// *history.OptionError.
//
// # Overflow recovery and overhead
//
// RecoverOverflow trims further after a chat model rejected a request as
// too long (history.RecoverOverflow, mapped back as Trim maps it): retry
// with its output, with attempt 1 and then 2. Overhead counts the tool
// definitions a request sends besides its messages, as the OpenAI-style
// "tools" JSON; pass it with history.WithOverhead so that the budget
// leaves room for them and Result.TokensAfter, what
// history.Calibration.Observe takes, counts the whole request.
//
// # ChatModel
//
// NewChatModel wraps any model.ToolCallingChatModel (eino-ext's OpenAI,
// Ark, Claude, Gemini, Ollama...) in a ChatModel that does all of this on
// every Generate and Stream call: it trims the input to the budget of the
// model Config.Model names (the door: its window from the models table
// less the call's output room, less history.MarginShare of the window
// until the Calibration is warm; a call's model.WithModel names another),
// or to Config.Budget when set, with Config.Options (under the door after
// the default policy's options, fit.Policy: the task preset, and under
// Config.Stateful the low-water mark and the model's cache retention,
// which a stateless trim of the whole transcript leaves out, since there
// it would cost context without saving a rewrite), counting the tools
// bound with WithTools (or passed with model.WithTools) as overhead;
// retries a request the model rejects as too long up to MaxRetries (2)
// times through RecoverOverflow, after which the model's later budgets
// stay below what the provider said; feeds the provider's
// ResponseMeta.Usage.PromptTokens to Config.Calibration (under the door
// without one, to the ChatModel's own per model), so that later trims aim
// at the budget the provider counts; and reports each request, usage,
// overflow and error to Config.OnEvent (the trims themselves go to
// history.WithOnTrim in Config.Options). Per-call options, such as pins
// into that call's input, go through TrimOptions.
//
//	cm, err := eino.NewChatModel(openaiModel, eino.Config{Model: "gpt-4o"}) // an unknown name is an error
//	agentModel, err := cm.WithTools(tools)
//	reply, err := agentModel.Generate(ctx, fullHistory)
//
// # MessageModifier
//
// Where a runtime takes a message modifier rather than a model (a ReAct
// agent's MessageModifier or MessageRewriter), MessageModifier trims with
// Trim. It cannot return an error: when even the latest turn does not fit
// (history.ErrLatestTurnTooLarge) it returns the trimmed messages, the
// smallest history it can send; on any other error it returns its input
// untouched; either way it passes the error to its onError callback.
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
//	go get github.com/histrim/history/adapters/eino
//
// Its go.mod requires the core release it is tagged with, with no replace,
// so the go command resolves both from the module proxy; inside the histrim
// repository, go.work builds it against the core beside it
// (docs/adapters.md, "Versioning").
package eino
