// Package gateway is histrim's reverse proxy: an http.Handler in front of
// an LLM API (OpenAI Chat Completions and the compatible servers, OpenAI
// Responses, Anthropic Messages, Gemini generateContent) that trims every
// request's conversation to the model's window on its way, for clients in
// any language: point the client's base URL at it. It trims the APIs the
// trimming transport reads in the program (wire.API.Trims): Chat
// Completions and Messages always, Responses and Gemini where the
// responses and gemini adapters registered their codecs (the
// histrim-gateway command does; `histrim serve` forwards them untouched);
// the others go through untouched.
//
// It forwards every request to the upstream with its headers (the auth
// headers included, which it never logs) and its body as the trimming
// transport leaves it, and streams the answer back as it arrives, flushing
// after every read: a server-sent event reaches the client when the
// upstream sent it. It bounds a request's body (413 past MaxBodyBytes) and
// an upstream exchange (504 past UpstreamTimeout), shuts down gracefully
// (the streams in flight finish), answers /healthz, and exports its
// counters at /metrics in the Prometheus text format.
//
// Conversations keep their state in a store named by URL: "memory:" by
// default (one process); the histrim-gateway command registers redis://
// and postgres:// ([RegisterStore]) so that replicas behind a load
// balancer share it. `histrim serve` runs it with the memory store; see
// docs/gateway.md.
package gateway
