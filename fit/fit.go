// Package fit is the door to histrim: name the model, and get a
// [history.Trimmer] with the library's best behaviour for it.
//
//	tr, err := fit.New("gpt-4.1")
//	...
//	res, err := tr.Fit(ctx, transcript) // the budget is the model's
//	send(res.Messages)                  // and on a context overflow: tr.RecoverOverflow
//	tr.Observe(usage.PromptTokens)      // the provider's count, learnt
//
// What naming the model gives (each is an option of the core package, set
// here so that nobody has to know them; the caller's options, applied
// after, override any of them):
//
//   - the budget: the model's window less its output room
//     ([history.WithModel], from [models.Lookup]), less a margin until the
//     provider's count is learnt ([history.MarginShare]);
//   - the exact counter when the model's tokenizer is public (OpenAI's,
//     embedded: [tiktoken]), cached per message; the [history.Heuristic]
//     otherwise;
//   - a [history.Calibration] the Trimmer owns, fed by [history.Trimmer.Observe]
//     from each response's usage, so that trims aim at the provider's
//     count;
//   - the task preset ([history.WithTask]): tool results elided with
//     digests and cut when too large, old steps dropped before the
//     request fails, injected user-role messages not taken for turns;
//   - a cache policy ([Policy]): the prompt only grows at its end between
//     maintenance points, and the cache retention of the model's provider
//     decides a cold resume;
//   - overflow recovery that leaves later plans below what the provider
//     said ([history.Trimmer.RecoverOverflow]).
//
// A name the table does not know is an error ([models.ErrUnknownModel]),
// never a guess: use [Discover] for a local or routed server, which
// reports its own window, or [For] with a [models.Model] of your own.
package fit

import (
	"context"
	"net/http"

	"github.com/histrim/history"
	"github.com/histrim/history/models"
	"github.com/histrim/history/tiktoken"
)

// New returns a Trimmer for the model named (as providers and routers
// spell it: dated snapshots, aliases, Bedrock, Vertex and OpenRouter
// names; see [models.Lookup]) with the library's best behaviour (see the
// package documentation), then opts. A name the table does not know
// returns an error wrapping [models.ErrUnknownModel]. Use one Trimmer per
// conversation.
func New(model string, opts ...history.Option) (*history.Trimmer, error) {
	m, err := models.Lookup(model)
	if err != nil {
		return nil, err
	}
	return For(m, opts...), nil
}

// For returns a Trimmer for m (from [models.Lookup], [models.Discover], or
// your own figures) with the library's best behaviour, then opts. An
// invalid m (no window) makes every trim return the *history.OptionError
// of [history.WithModel].
func For(m models.Model, opts ...history.Option) *history.Trimmer {
	return history.NewTrimmer(append(Options(m), opts...)...)
}

// Discover asks the server at baseURL (Ollama, vLLM, llama.cpp, LM
// Studio, OpenRouter) the window it runs model with ([models.Discover],
// with client, nil meaning http.DefaultClient), and returns For that
// model. The window reported is the one in force (Ollama's num_ctx, not
// the model's maximum), which is what the server truncates to.
func Discover(ctx context.Context, client *http.Client, baseURL, model string, opts ...history.Option) (*history.Trimmer, error) {
	m, err := models.Discover(ctx, client, baseURL, model)
	if err != nil {
		return nil, err
	}
	return For(m, opts...), nil
}

// Options returns the options For sets for m, in the order it sets them,
// for a caller that builds its Trimmer, or a Conversations
// ([history.NewConversations]), itself. Each call returns a new
// Calibration: the Trimmer, or the conversations, own it.
func Options(m models.Model) []history.Option {
	return append([]history.Option{
		history.WithModel(m),
		history.WithCounter(Counter(m)),
		history.WithCalibration(new(history.Calibration)),
		history.WithTask(-1, history.ElideOptions{}),
	}, Policy()...)
}

// Counter returns the counter For uses for m: the exact one of its
// tokenizer when it is public and embedded, cached per message
// ([history.NewCache]); the [history.Heuristic] otherwise.
func Counter(m models.Model) history.Counter {
	if m.Tokenizer != "" {
		if c, err := tiktoken.New(m.Tokenizer); err == nil {
			return history.NewCache(c, 0)
		}
	}
	return history.NewCache(history.Heuristic(), 0)
}

// Policy returns the default cache policy's options: at a maintenance
// point the prompt is trimmed down to a low-water mark, so that the next
// requests append to a cached prefix instead of rewriting it (see
// docs/prompt-caching.md for the measurements behind the choice).
func Policy() []history.Option {
	return []history.Option{history.WithLowWater(DefaultLowWater)}
}

// DefaultLowWater is the low-water mark of the default policy: the share
// of the budget a maintenance point trims down to.
const DefaultLowWater = 0.7
