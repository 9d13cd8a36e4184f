// Package fantasy trims the conversations of charm.land/fantasy (v0.41.2,
// the LLM layer under crush) with github.com/histrim/history: whole turns
// go, a tool call never leaves its result, the system prompt and the
// latest turn stay; and it recovers from the providers' context overflows
// with the sizes fantasy's ProviderError parses.
//
// # Usage
//
// Wrap the language model: every call is trimmed to the budget (its tools
// counted), an overflow is recovered from and resent, and every
// response's usage feeds the calibration:
//
//	var cal history.Calibration // one per model
//	model := hfantasy.NewModel(lm, hfantasy.Config{Budget: 16_000, Calibration: &cal,
//		Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}})
//	agent := fantasy.NewAgent(model, fantasy.WithSystemPrompt(system), fantasy.WithTools(tools...))
//
// Or trim each step of an agent with PrepareStep (crush's hook), and
// recover with RecoverOverflow or a Model:
//
//	agent := fantasy.NewAgent(lm, fantasy.WithPrepareStep(hfantasy.PrepareStep(cfg)), ...)
//
// The agent's conversation is never changed: each request sends a
// trimmed view of it.
//
// The door is the zero Config (hfantasy.NewModel(lm, hfantasy.Config{})):
// the budget is that of the model the call goes to, from the models table
// (its window less the output room, less history.MarginShare of the
// window until the Model's own Calibration is warm), counted with the
// model's counter, and the trims take the default policy's task preset
// (fit.Policy: old tool results elided with digests, old steps dropped,
// before whole turns go), Config.Options after it. Not its low-water
// mark: every call is trimmed afresh from the whole prompt, where a mark
// would cost context without saving a cache rewrite.
//
// # Mapping
//
// A system, user or assistant message is one history.Message: a message
// holding one text part has it as its content; otherwise text parts are
// text parts, reasoning parts reasoning (so step trimming keeps a thinking
// step whole), files images (dimensions read from PNG, JPEG and GIF
// headers) or files of their size, tool calls tool calls with their input
// as arguments. A tool message is one tool message per result (text,
// error text, or media as a file), plus a nudge for its other parts.
// Provider-executed calls and results (web search and the like) count as
// their JSON and are not paired. A nil or typed-nil part, a result whose
// output is nil or a typed nil, and an error output whose error is nil or
// panics when read (fantasy's providers would dereference them) are a
// *MessageError.
//
// Kept messages are the caller's values. A message the trim changed is a
// new message of the same role and provider options over the caller's
// remaining parts, in their order: a tool message that lost results to
// the orphan sweep or holds elided ones (copies of the result part whose
// output is the placeholder text), an assistant message whose unanswered
// calls were stripped (or whose arguments
// history.ElideOptions.ClearArguments cleared). Notices are messages of
// their role (user by default) holding one text part; trimming an output
// again recognises them and never stacks them.
//
// # Overflows
//
// fantasy's providers turn a provider's overflow body into a
// *fantasy.ProviderError with ContextUsedTokens, ContextMaxTokens and
// IsContextTooLarge(), including bodies the core's classifier does not
// know (Vercel's gateway, Alibaba). RecoverOverflow reads those fields,
// and otherwise lets history.IsContextOverflow read the error. A Model
// retries at most MaxRetries (2) times, then returns the provider's
// error, as does a trim that can drop nothing more.
//
// # Not supported
//
// history.WithPin in Config (a step's messages have no stable indices;
// Trim takes pins as indices into msgs, as every adapter's Trim does). Streams are
// recovered only when the rejection is the first part or Stream's error,
// as providers send it; StreamObject only when StreamObject returns it.
//
// # Module
//
// This is its own module, requiring Go 1.26.6 as fantasy v0.41.2 does,
// so that the core, which requires Go 1.24, does not depend on fantasy.
// It has the shape every adapter shares (internal/adapt,
// docs/adapters.md): its conversion both ways, its rules table, its
// error reader and Overhead; Trim, RecoverOverflow and the errors come
// from the core's internal packages, so it is released together with the
// core (version.go).
package fantasy
