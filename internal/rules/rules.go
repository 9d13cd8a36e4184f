// Package rules lets the SDK adapters state which provider rules a trim
// keeps where providers differ, so that each adapter applies its own
// provider's rule rather than the strictest one. The history package fills
// in the functions when it is initialised; adapters import history, so
// they are always set for them.
package rules

// LooseReasoning returns a history.Option under which step trimming binds
// reasoning to its own step only: it no longer keeps the step whose
// reasoning opened the final tool loop (Anthropic's rule, the core's
// default). For providers whose reasoning binds to nothing but its own
// step: Gemini's thought signatures and the Responses API's reasoning
// items (docs/providers.md).
var LooseReasoning func() any
