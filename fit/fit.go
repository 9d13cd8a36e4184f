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
	"github.com/histrim/history/internal/policy"
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

// Policy returns the default policy's options, chosen on the shared
// corpus against the bill, the prefix rewrites and what the agent goes on
// to use (docs/prompt-caching.md, "Choosing the default"): the task
// preset ([history.WithTask], no goal named) with the 6 most recent tool
// results whole and digests of up to 1,600 tokens (at most half of what
// eliding a result saves: the larger the result, the more of it stays),
// and at a maintenance point the prompt trimmed down to [DefaultLowWater]
// of the budget, so that the next requests append to a cached prefix
// instead of rewriting it.
//
// [Cheaper] and [KeepMore] are the two other useful points; a runtime that
// knows its task's opening request passes [history.WithTask] with it (and
// the same [history.ElideOptions]) after them.
func Policy() []history.Option {
	return []history.Option{
		policy.Task(), // history.WithTask(-1, history.ElideOptions{KeepRecent: 6, Digest: 1600})
		history.WithLowWater(DefaultLowWater),
	}
}

// DefaultLowWater is the low-water mark of the default policy: the share
// of the budget a maintenance point trims down to.
const DefaultLowWater = 0.5

// Cheaper returns the policy that bills the least input for what it
// keeps: a compact trigger at 0.65 of the budget ([history.WithTrigger]),
// trimmed down to 0.32 at a maintenance point, the task preset with the
// most recent tool result whole and digests of up to 800 tokens. On the
// corpus's coding sessions at a quarter of each session's peak it bills
// about a quarter less input than the default and keeps about a seventh
// fewer of the references, less input than the trigger policy without
// the task preset for half as much again of the references (see
// docs/prompt-caching.md). Pass it to [New] after the model's name.
func Cheaper() history.Option {
	return join(
		history.WithTask(-1, history.ElideOptions{KeepRecent: 1, Digest: 800}),
		history.WithTrigger(0.65),
		history.WithLowWater(0.32),
	)
}

// KeepMore returns the policy that keeps the most of what the agent goes
// on to use while still appending to a cached prefix: the task preset
// with the 16 most recent tool results whole and digests of up to 800
// tokens, trimmed down to 0.9 of the budget at a maintenance point (a
// maintenance point comes more often). It bills more input than the
// default (see docs/prompt-caching.md). Pass it to [New] after the
// model's name.
func KeepMore() history.Option {
	return join(
		history.WithTask(-1, history.ElideOptions{KeepRecent: 16, Digest: 800}),
		history.WithLowWater(0.9),
	)
}

// join returns one option that applies opts in order. (The options'
// argument type is the core's own: inference names it.)
func join[O ~func(P), P any](opts ...O) O {
	return func(p P) {
		for _, o := range opts {
			o(p)
		}
	}
}
