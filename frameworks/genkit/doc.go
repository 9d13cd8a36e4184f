// Package genkit trims the conversations of Genkit for Go
// (github.com/firebase/genkit/go, v1.4.0) with github.com/histrim/history,
// as a model middleware: every model call of a generation, each turn of
// its tool loop included, is trimmed to the model's window, recovered
// from a context overflow, and observed for the calibration.
//
// # Usage
//
//	var cal history.Calibration // one per model
//	mw := hgenkit.Middleware(hgenkit.Config{Budget: 1_000_000, Calibration: &cal,
//		Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}})
//	resp, err := genkit.Generate(ctx, g, ai.WithModelName("googleai/gemini-2.5-flash"),
//		ai.WithMessages(msgs...), ai.WithTools(tools...), ai.WithMiddleware(mw))
//	msgs = resp.History() // the whole conversation: only the requests were trimmed
//
// The door: name the model instead of a Budget
// (hgenkit.Config{Model: "googleai/gemini-2.5-flash"}), and the budget is
// the model's from the models table (its window less the output room,
// less history.MarginShare of the window until the Middleware's own
// Calibration is warm), counted with the model's counter, and the trims
// take the default policy's task preset (fit.Policy: old tool responses
// elided with digests, old steps dropped, before whole turns go),
// Config.Options after it. Not its low-water mark: every request is
// trimmed afresh from the whole conversation, where a mark would cost
// context without saving a cache rewrite.
//
// # What is trimmed, and when
//
// Genkit has nothing that trims a history, and its context cache refuses
// requests with tools. The middleware receives every model request of a
// generation (Genkit's tool loop resends the whole request, with the new
// tool requests and responses, at every turn), trims a copy of its
// messages to Config.Budget (the tool definitions and output schema
// counted): the system messages and the latest turn stay, the oldest
// whole turns go behind one user message holding the notice, a tool
// request never leaves its response; with the options, old tool responses
// are elided and old steps of a long task dropped. When the provider
// rejects the request for its length (history.IsContextOverflow: Gemini's
// HTTP 400 INVALID_ARGUMENT, "The input token count (N) exceeds the
// maximum number of tokens allowed (M).", or any provider the core
// knows), it trims what was sent below the sizes the error states and
// resends it, at most MaxRetries (2) times; and it observes every
// response's Usage.InputTokens into the Calibration.
//
// # Mapping
//
// A system, user or model message is one history.Message (text, data and
// reasoning parts as text and reasoning; media as images, their
// dimensions read from inline data, or files; tool requests as tool calls
// with their input's JSON as arguments). A tool message is one tool
// message per response (its output, a string as itself, anything else as
// its JSON) and a nudge for its other parts. Requests and responses pair
// as Gemini pairs them: a response answers the first unanswered request
// of the model message before it with its name (the googlegenai plugin
// sends no ids). Kept messages are the caller's pointers; a message the
// trim changed is a new message of the same role and metadata over the
// caller's remaining parts (an elided response is a copy whose output is
// the placeholder; a request whose input ElideOptions.ClearArguments
// cleared, a copy with the core's arguments as input).
//
// # Not supported
//
// history.WithPin (the tool loop rebuilds the request every turn);
// retries of a streamed request after its first chunk (an overflow is
// refused before any).
//
// # Module
//
// This is its own module, requiring Go 1.24.1 as Genkit v1.4.0 does, so
// that the core does not depend on Genkit. It has the shape every adapter
// shares (internal/adapt, docs/adapters.md): its conversion both ways and
// Overhead; Trim, RecoverOverflow and the errors come from the core's
// internal packages, so it is released together with the core
// (version.go).
package genkit
