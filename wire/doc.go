// Package wire trims LLM requests at the wire: a codec for the request
// bodies of the providers' HTTP APIs, and [Transport], an
// [net/http.RoundTripper] that trims every request a client sends, for
// any Go SDK that takes an *http.Client (one line) and for the gateway
// (package gateway) in front of clients in any language.
//
// The codec ([Parse], [Request]) reads a request body's messages as the
// raw bytes they came in, and the few fields a trim needs: the model, the
// output room, what the request sends besides its messages (tools, a
// response schema), whether it streams, and the API's own conversation
// key. [Request.Body] re-emits the body with other messages: everything
// outside the messages array is the bytes that came, and inside it a
// message the trim kept is its own bytes. A trim only drops whole
// messages, replaces tool results and arguments, and inserts notices,
// under the same rules as the SDK adapters (the conversion of each API
// is an internal/adapt codec over raw JSON): tool calls stay with their
// results, the latest turn and the system prompt stay.
//
// The Transport, per request: the API from the path (another path is
// forwarded untouched), the model from the body (Gemini's from the path;
// [models.Lookup], or
// [Transport.Models]; an unknown model is forwarded untouched and
// reported, never guessed), the budget as the door computes it (the
// model's window less the request's output room, less a margin until the
// model's Calibration has seen a response), the conversation's Trimmer
// through Conversations keyed by the header [ConversationHeader], else
// the API's own key, else a hash of the conversation's opening; then the
// trimmed request. On the provider's context-overflow answer it recovers
// (history.RecoverOverflow, with the provider's own numbers) and retries,
// a bounded number of times and never resending what was refused; a
// streamed Responses answer that refuses its input after it has begun is
// recovered the same way, its opening lifecycle events held back until
// the stream shows whether it does, for at most 2 seconds after the
// response's headers (past that, a refusal that comes later reaches the
// caller as sent; [Event].HoldExpired says so). It
// reads the usage of the response as the caller reads it (JSON, or the
// server-sent events as they pass, without holding a byte back for it) into the
// model's Calibration, and reports an upstream that counted far less
// than was sent (a server truncating silently, Ollama over its num_ctx):
// once two such counts in a row agree, the window they showed bounds that
// model's later budgets. [Transport.Middleware] is the same in the shape
// of openai-go's and anthropic-sdk-go's middleware. docs/wire.md says what
// the Transport does and never does, with its measurements.
//
// The caller's request is never modified: the Transport sends a clone
// with a new body.
package wire
