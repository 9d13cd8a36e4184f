package models

import (
	"errors"
	"fmt"
	"time"
)

// Model describes a model as its provider serves it: the figures a caller
// needs to budget a request for it.
//
// The zero Model describes nothing: a Window of 0 means "unknown", never
// "no room". Lookup and Discover never return a Model with a Window below 1.
type Model struct {
	// Name is the model's canonical name in the table ("gpt-4.1",
	// "claude-sonnet-4-5-20250929", "gemini-2.5-pro"), or, from Discover,
	// the name the server serves it under ("llama3.1:8b").
	Name string
	// Provider names who serves the model: "openai", "anthropic",
	// "google", "mistral", "deepseek", "xai", "meta" or "qwen" in the
	// table; from Discover, the kind of server that answered: "ollama",
	// "vllm", "llamacpp", "lmstudio" or "openrouter".
	Provider string
	// Window is the context window in tokens: what the provider counts the
	// prompt and the output against, as it documents it. Where a provider
	// documents an input limit and an output limit and no combined window
	// (Gemini), Window is the input limit, so Window-Output is below what
	// the provider accepts, never above. From Discover it is the window
	// the server runs the model with, which can be far below what the
	// model supports (see Discover).
	Window int
	// Output is the most output tokens the provider allows per request
	// (max_tokens, max_output_tokens), as documented; 0 when the provider
	// documents no separate cap (the output shares the Window).
	Output int
	// Tokenizer is the public tokenizer that counts the model's tokens
	// exactly, as an encoding name the tiktoken subpackage accepts
	// ("o200k_base", "cl100k_base"); "" when the provider publishes none.
	Tokenizer string
	// CacheRetention is how long the provider keeps a cached prompt prefix
	// after its last use under its default policy, at most: once a
	// conversation has been idle this long its prefix is certainly no
	// longer cached. 0 when the provider has no prompt cache for the model
	// or documents no bound (implicit caches that state none).
	CacheRetention time.Duration
	// Source is the URL the figures come from. From Discover, the URL of
	// the server endpoint that reported the window.
	Source string
	// Checked is the date the figures were last checked against Source,
	// "2006-01-02" style; "" from Discover, whose figures are live.
	Checked string
}

// ErrUnknownModel is wrapped by the error Lookup returns for a name it
// cannot resolve to a row of its table: test with errors.Is.
var ErrUnknownModel = errors.New("history/models: unknown model")

// UnknownModelError is the error Lookup returns for a name it does not
// know. It wraps ErrUnknownModel.
type UnknownModelError struct {
	// Name is the name as the caller gave it.
	Name string
}

// Error implements error.
func (e *UnknownModelError) Error() string {
	return fmt.Sprintf("history/models: unknown model %q (not in the table: give the window yourself, or use Discover for a local or routed server)", e.Name)
}

// Unwrap returns ErrUnknownModel.
func (e *UnknownModelError) Unwrap() error { return ErrUnknownModel }

// Lookup returns the table's row for a model name as providers, clouds
// and routers spell it: canonical names and the provider's aliases
// ("claude-sonnet-4-5", "gpt-4o"), dated snapshots ("gpt-4o-2024-08-06",
// "claude-3-5-sonnet-20241022"), "-latest" aliases the provider defines,
// Amazon Bedrock model ids and inference profiles
// ("anthropic.claude-3-5-sonnet-20241022-v2:0",
// "us.anthropic.claude-sonnet-4-20250514-v1:0", ARNs), Vertex AI names
// ("claude-3-5-sonnet-v2@20241022", "publishers/google/models/gemini-2.5-pro",
// full resource paths), OpenRouter and gateway slugs ("openai/gpt-4o",
// "anthropic/claude-sonnet-4.5"), Azure OpenAI model names
// ("gpt-35-turbo"), OpenAI fine-tunes ("ft:gpt-4o-mini-2024-07-18:org::id"),
// in any case and with surrounding whitespace.
//
// Every spelling resolves by exact match against the table's names and
// aliases after those rewrites, never by prefix: "gpt-4" is not "gpt-4o",
// "gpt-4o-mini" is not "gpt-4o", and a snapshot the table does not list is
// unknown even when its family is known, because snapshots can differ
// (gpt-4o-2024-05-13 allows 4,096 output tokens, later ones 16,384).
// docs/models.md lists the rewrites.
//
// A name it cannot resolve returns an error wrapping ErrUnknownModel (an
// *UnknownModelError), never a guess. Lookup is safe for concurrent use
// and takes time linear in the length of name.
func Lookup(name string) (Model, error) {
	if r, ok := resolve(name); ok {
		return r.model(), nil
	}
	return Model{}, &UnknownModelError{Name: name}
}
