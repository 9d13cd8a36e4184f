// Package openai trims OpenAI chat-completion histories
// ([github.com/openai/openai-go/v3.ChatCompletionMessageParamUnion])
// with the trimmer of github.com/histrim/history, without losing
// anything the caller put in them.
//
// # Usage
//
//	import hopenai "github.com/histrim/history/adapters/openai"
//
//	msgs, res, err := hopenai.Trim(params.Messages, 100_000)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return err
//	}
//	params.Messages = msgs
//
// A runtime that sends tools and wants every request to fit the model's
// window, as the provider counts it, runs this loop (examples/agentloop
// is it as a program; its test runs it against a local endpoint):
//
//	var cal history.Calibration // one per model, kept across requests
//	opts := []history.Option{
//		history.WithCalibration(&cal),
//		history.WithOverhead(hopenai.Overhead(params, nil)),
//		history.WithElision(history.ElideOptions{}),
//		history.WithStepTrim(),
//	}
//	params.Messages, res, err = hopenai.Trim(msgs, window, opts...)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return err
//	}
//	completion, err := client.Chat.Completions.New(ctx, params)
//	for attempt := 1; err != nil && attempt <= 2; attempt++ {
//		var rerr error
//		if params.Messages, res, rerr = hopenai.RecoverOverflow(params.Messages, err, attempt, opts...); rerr != nil {
//			break // not an overflow, or nothing left to drop
//		}
//		completion, err = client.Chat.Completions.New(ctx, params)
//	}
//	if err != nil {
//		return err
//	}
//	cal.Observe(res.TokensAfter, int(completion.Usage.PromptTokens))
//	msgs = append(params.Messages, completion.Choices[0].Message.ToParam())
//
// [Trim] converts the messages with [ToHistory] only to decide what to keep,
// then returns the caller's own values (via [history.Apply]): names, tool-call
// ids, image parts, prompt-cache breakpoints, extra fields set with
// SetExtraFields and values built with param.Override all come back exactly
// as they went in. The exceptions are copies of the original with
// everything else unchanged: an assistant message whose unanswered tool
// calls the orphan sweep stripped comes back without those calls, one whose
// calls' arguments history.ElideOptions.ClearArguments cleared with the
// core's arguments in them, and a tool result elided by
// [history.WithElision] with the placeholder as its content.
//
// # Mapping
//
// One native message becomes one [history.Message], so Result.Kept holds
// indices into the caller's slice:
//
//   - system and developer messages become RoleSystem (leading ones are
//     pinned: never dropped);
//   - user messages become RoleUser, with text, image, audio and file parts;
//     image sizes are read from the header of base64 data URLs (PNG, JPEG,
//     GIF) so images are counted by their dimensions;
//   - assistant messages become RoleAssistant with their tool calls
//     (function and custom), refusals and text; a reasoning_content field
//     (set with SetExtraFields, as a string or its raw JSON, or in an
//     override) becomes a history.PartReasoning part, see Reasoning;
//   - tool messages become RoleTool with their tool_call_id;
//   - the deprecated function_call / function-role pair is mapped to a tool
//     call and a tool result with the fixed ID "legacy_function_call", so it
//     is paired and dropped together like any other.
//
// # Reasoning
//
// OpenAI's chat models send no reasoning back, but OpenAI-compatible
// providers do: DeepSeek's thinking mode returns it in reasoning_content
// and, for a turn that called tools, requires it back in every later
// request ("The `reasoning_content` in the thinking mode must be passed
// back to the API.";
// https://api-docs.deepseek.com/guides/thinking_mode). Kept messages come
// back as the caller's, so the field survives every trim, in the copies
// whose calls the orphan sweep stripped too; the core never clears the
// arguments of its calls (history.ElideOptions.ClearArguments). It is counted as reasoning:
// DeepSeek ignores it in a turn without tool calls, so this may count more
// than the provider bills, never less. openai-go's ChatCompletionMessage.ToParam
// drops fields it does not know: copy it from the response's
// JSON.ExtraFields["reasoning_content"] with SetExtraFields.
//
// # Elision and step trimming
//
// Every option of the core works through Trim, including the degradation
// ladder: [history.WithElision] and [history.WithStepTrim]. A tool result
// the core elided comes back as a copy of the caller's tool message (or
// legacy function message) whose content is the placeholder as a plain
// string, for example
//
//	{"role": "tool", "tool_call_id": "call_1", "content": "[elided tool result: read_file, 1834 tokens; re-run the tool if needed]"}
//
// so the native output costs what the core counted and fits the budget
// whenever the Result does. Its tool_call_id and extra fields are kept.
//
// With history.ElideOptions.ClearArguments, eliding a result also clears
// the arguments of the call it answers: the assistant message comes back
// as a copy whose call carries the core's arguments,
//
//	{"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": "{\"elided\":\"[arguments elided: 607 tokens]\"}"}}
//
// as a function call's arguments, a custom call's input or the deprecated
// function_call's arguments; its id, name, type and extra fields are kept,
// and a message built with param.Override is rewritten at the JSON level,
// keeping unknown keys in the message, the call and its function object.
// The core never clears a call in a message holding reasoning_content (see
// Reasoning): such a message comes back as the caller's.
//
// Converted back with [ToHistory], the output of Trim and RecoverOverflow
// is Result.Messages, message for message, cleared arguments included
// (the kinds of notices and elided results aside, which the wire format
// does not carry).
//
// # Breadcrumbs
//
// When turns are dropped, the turn notice ([history.Breadcrumb], or the one
// set with [history.WithBreadcrumb]) is inserted after the leading system
// messages; when steps of the latest turn are dropped (WithStepTrim), the
// step notice ([history.StepBreadcrumbText], or [history.WithStepBreadcrumb])
// after that turn's opening message. Each is a native message of its role
// holding its Content as a plain string, and its Name.
//
// On the next trim, Trim recognises the notices it would insert
// ([history.Breadcrumbs] of its options) and the default ones, so that the
// core replaces them rather than counting them as turns, and notices never
// stack: a message that converts exactly as a rendered notice (same role,
// text and name, nothing else) is marked [history.KindBreadcrumb]. The turn
// notice is recognised in the leading block only (right after the leading
// system messages, where trims put it), the step notice anywhere, since
// later turns leave it behind. A message someone typed with exactly a
// notice's text is the only false positive: it is then not counted as a
// turn of its own. [ToHistory] recognises the default notices.
//
// # Agreeing with the provider
//
// [Overhead] counts what a request sends besides its messages (the tools,
// the deprecated functions, the response format and its schema) as the
// SDK encodes it; [history.WithOverhead] takes it, so the messages get the
// budget less that, and Result.TokensAfter counts the whole request: pass
// it with usage.prompt_tokens to [history.Calibration.Observe], and trim
// with [history.WithCalibration], so that trims aim at OpenAI's count. When
// OpenAI still rejects a request for its length (context_length_exceeded,
// read from the *openai.Error's body), [RecoverOverflow] trims what was
// sent further, to a target derived from the sizes the error states.
//
// # Pins
//
// [history.WithPin] takes indices into the caller's slice: one native
// message converts to one history message at the same index, so the
// option is passed to the core unchanged, in Trim as in RecoverOverflow.
// A pinned message is never dropped or elided; pinned in a turn that is
// dropped, it is kept right after the leading system messages and the turn
// notice. A tool (or function) message, or an assistant message with tool
// calls (or a function_call), cannot be pinned: the core returns a
// *history.OptionError naming its index. A runtime that adopts the output
// pins again at the new positions (Result.Positions).
//
// # Pairing
//
// [Validate] checks the pairing rule the Chat Completions API enforces with
// an HTTP 400. Every slice [Trim] and [RecoverOverflow] return passes it
// whenever their input converted without error.
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
//	go get github.com/histrim/history/adapters/openai
//
// Its go.mod requires the core release it is tagged with, with no replace,
// so the go command resolves both from the module proxy; inside the histrim
// repository, go.work builds it against the core beside it
// (docs/adapters.md, "Versioning").
//
// The module declares go 1.24 and requires openai-go v3.44.0, the newest v3
// release that does not itself require Go 1.25 or later, so programs on Go
// 1.24 can use it. A program that requires a newer openai-go gets that one
// (minimum version selection), with the Go version it demands.
package openai
