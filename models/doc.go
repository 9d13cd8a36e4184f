// Package models knows the context windows of the models agent runtimes
// call, so that a caller can budget a request from the model's name.
//
// It has two sources, and uses the standard library only.
//
// # The table
//
// [Lookup] reads a table of the models OpenAI, Anthropic, Google, Mistral,
// DeepSeek, xAI, Meta and Qwen serve, current and older ones still named
// in configurations. Each row gives the context window, the output limit,
// the public tokenizer when there is one (OpenAI's o200k_base and
// cl100k_base, which the tiktoken subpackage counts exactly), the
// provider's prompt-cache retention, the URL the figures come from and the
// date they were checked. A figure no source confirmed is not in the
// table: the model is left out rather than guessed.
//
// Lookup understands how providers, clouds and routers spell a model:
// dated snapshots, "-latest" aliases, Amazon Bedrock ids and inference
// profiles, Vertex AI names and resource paths, OpenRouter slugs, Azure
// OpenAI names, OpenAI fine-tunes, any case. It never matches by prefix:
// "gpt-4" is not "gpt-4o". A name it does not know is an error wrapping
// [ErrUnknownModel].
//
// # Local and routed servers
//
// [Discover] asks a running server the window it runs a model with:
// Ollama, LM Studio, llama.cpp's llama-server, vLLM, or OpenRouter. A local
// server's window is a setting, often far below what the model supports,
// and Ollama silently drops the oldest messages of a longer prompt; the
// window Discover reports is the one in force, and its documentation says
// what to configure.
//
// docs/models.md lists the table's sources and dates, the rewrites Lookup
// applies to names, and the endpoints Discover reads.
package models
