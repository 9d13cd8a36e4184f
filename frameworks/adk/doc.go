// Package adk plugs github.com/histrim/history into Google's Agent
// Development Kit for Go (google.golang.org/adk, v1.6.0) through the
// Gemini adapter (github.com/histrim/history/adapters/gemini): ADK's
// model.LLMRequest holds []*genai.Content, which gemini.Trim trims.
//
// # Usage
//
// One plugin for every agent of a runner:
//
//	cb, err := hadk.New(hadk.Config{Budget: 1_000_000, Model: model,
//		Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}})
//	p, err := cb.Plugin()
//	r, err := runner.New(runner.Config{..., PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
//
// or the same callbacks on one agent: cb.Install(&llmagentConfig).
//
// # The door
//
// Without a Budget (hadk.Config{Model: m}), the budget of each request is
// that of the model it names (LLMRequest.Model, from the models table:
// its window less the output room, less history.MarginShare of the window
// until the model's Calibration is warm), counted with the model's
// counter, and the trims take the default policy's task preset
// (fit.Policy: old function responses elided with digests, old steps
// dropped, before whole turns go), Config.Options after it. Not its
// low-water mark: every request is trimmed afresh from the session's
// events, where a mark would cost context without saving a cache
// rewrite. Without Config.Calibration, the callbacks keep one Calibration
// per model the requests name (CalibrationFor), since what one learns of
// a model's tokenizer is wrong for another's.
//
// # What is trimmed, and when
//
// ADK builds every request afresh from the session's events, and never
// compacts them. BeforeModel trims the request's contents to Config.Budget
// with gemini.Trim: the system instruction, tools and response schemas of
// the request's config counted, the oldest whole turns dropped behind one
// notice, a function call never separated from its response, thought
// signatures kept on their parts; with the options, old function
// responses elided and old steps of a long task dropped. Only the request
// changes: the session keeps every event (TestCallbackOrder).
//
// When Gemini rejects the request for its length (HTTP 400
// INVALID_ARGUMENT, "The input token count (N) exceeds the maximum number
// of tokens allowed (M)."), OnModelError trims the contents below the
// sizes Gemini stated with gemini.RecoverOverflow and resends the request
// through Config.Model, at most twice, and the flow goes on with the
// answer. AfterModel observes every final response's promptTokenCount
// into a history.Calibration, so that the next trims aim at what Gemini
// counts; with Config.StateKey it is kept in the session state.
//
// A request is never sent without contents, which Gemini refuses
// ("contents is not specified"): when the trim would leave none (the
// contents hold only model contents, as a session holding nothing but the
// agent's greeting gives, or only orphans), the request is sent as it
// came and Config.OnError receives an error wrapping gemini.ErrNoContents;
// after an overflow, nothing empty is resent.
//
// Between BeforeModel and AfterModel the callbacks keep one figure per
// model call, the count of what was sent, and release it with the call:
// on its final response or error, in OnModelError unless a resend is
// answered (ADK calls no AfterModel after a model error), when the
// plugin's run ends, and in any case after 1,024 to 2,048 newer calls, so
// that nothing outlives its request whichever callbacks ADK skips.
//
// # Order
//
// ADK v1.6.0 runs the plugins' model callbacks in the order of the
// runner's plugins, then the agent's, and stops at the first that answers
// (a response or an error). So: a plugin or callback after this one sees
// the trimmed request; when OnModelError recovers, the OnModelError
// callbacks after it are not called; AfterModel callbacks run on the
// recovered answer as on any other. Install the plugin before plugins
// that should see the request as it is sent, after those that must see
// the whole session.
//
// # Not supported
//
// history.WithPin (contents are rebuilt from the events for every
// request, so indices do not last); a streamed resend (after an overflow
// the request is resent unstreamed, and its answer arrives whole); live
// (bidi) sessions, which do not go through these callbacks.
//
// # Module
//
// This is its own module, requiring Go 1.25 as ADK v1.6.0 does, so that
// the core does not depend on ADK. It uses the Gemini adapter, and the
// wrapper steps every framework module shares (internal/adapt: a call's
// options, resends, observation), so it is released together with the
// core (version.go).
package adk
