package genkit

import (
	"context"
	"errors"

	"github.com/firebase/genkit/go/ai"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// DefaultMaxRetries is how many times a request the provider rejected for
// its length is resent, when Config.MaxRetries is 0.
const DefaultMaxRetries = 2

// Config configures Middleware.
type Config struct {
	// Budget, when positive, is the model's context window, or the share
	// of it the request (messages, tools and output schema) may fill, in
	// the provider's tokens: an override. Without it, the door: the
	// budget is Model's (see Model). A Middleware with neither passes
	// every request on untrimmed and reports history.ErrInvalidBudget to
	// OnError.
	Budget int
	// Model names the model the generation calls, as Genkit or the
	// provider names it ("googleai/gemini-2.5-flash", "gpt-4.1"), for the
	// door when Budget is 0: the budget is the model's window from the
	// models table less the output the request asks room for
	// (GenerationCommonConfig.MaxOutputTokens, else the model's output
	// limit), less history.MarginShare of the window until the
	// Calibration has observed a response (the Middleware owns one when
	// Calibration is nil); the counter, when Counter is nil, the model's.
	// A model the table does not know fails every request with the error
	// of models.Lookup (wrapping models.ErrUnknownModel): a budget is
	// never guessed.
	Model string
	// Counter counts a message's tokens; nil means history.Heuristic().
	Counter history.Counter
	// Calibration, when set, learns the provider's count from every
	// response's usage (Usage.InputTokens) and from every overflow, and
	// every trim aims at the budget the provider counts. Use one per
	// model.
	Calibration *history.Calibration
	// Options are more trim options: history.WithElision,
	// history.WithStepTrim, history.WithLowWater, history.WithOnTrim, ...
	// history.WithCounter, history.WithCalibration and
	// history.WithOverhead are set from the fields above and the request.
	// Under the door (Model without Budget), they come after the door's
	// own, which they override: the task preset of the default policy
	// (fit.Policy; its low-water mark is left out, since every request is
	// trimmed afresh from the whole conversation, where it would cost
	// context without saving a cache rewrite). history.WithPin is not
	// supported: the tool loop rebuilds the request at every turn.
	Options []history.Option
	// MaxRetries is how many times a rejected request is resent: 0 means
	// DefaultMaxRetries, a negative value none.
	MaxRetries int
	// OnError, when set, receives what a trim could not do (messages that
	// do not convert, an invalid budget); the request is then sent as it
	// came. nil ignores them.
	OnError func(error)
	// OnObserve, when set, is called after each response observed into
	// Calibration with the trim's count of what was sent, the provider's
	// and the verdict. It must be safe for concurrent use.
	OnObserve func(sent, reported int, v history.Verdict)
}

// Middleware returns a Genkit model middleware (ai.WithMiddleware) that
// trims every model request of a generation, each turn of its tool loop
// included, to cfg.Budget; resends a request the provider rejected for
// its length after RecoverOverflow, at most MaxRetries times; and
// observes every response's Usage.InputTokens into cfg.Calibration. The
// request's messages are never modified: the model receives a copy of
// the request holding the trimmed messages, and a response that names
// that copy as its Request (as the googlegenai plugin's do) names the
// request the middleware received instead, so that
// ModelResponse.History is the whole conversation and the next
// generation trims it afresh. After a recovery, every later budget of the
// Middleware (Budget or the door's) stays below what the provider stated,
// for the life of the middleware value, as an adapter's Trimmer keeps it:
// a window smaller than the budget is refused once, not at every request.
func Middleware(cfg Config) ai.ModelMiddleware {
	if cfg.Budget == 0 && cfg.Model != "" && cfg.Calibration == nil {
		cfg.Calibration = new(history.Calibration) // the door's, which the Middleware owns
	}
	retries := adapt.Retries(cfg.MaxRetries, DefaultMaxRetries)
	// What the provider's refusals said, for the Middleware's life: every
	// later budget stays below it (a window smaller than the budget is
	// refused once, not at every request).
	limits := new(adapt.Limits)
	report := func(err error) {
		if cfg.OnError != nil && err != nil {
			cfg.OnError(err)
		}
	}
	return func(next ai.ModelFunc) ai.ModelFunc {
		return func(ctx context.Context, req *ai.ModelRequest, cb ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			if req == nil || len(req.Messages) == 0 {
				return next(ctx, req, cb)
			}
			budget, opts, err := cfg.budget(req)
			if err != nil {
				return nil, err
			}
			budget = limits.Bound(cfg.Model, budget)
			sent, res, err := Trim(req.Messages, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				report(err)
				return next(ctx, req, cb)
			}
			r := *req
			r.Messages = sent
			resp, err := next(ctx, &r, cb)
			for attempt := 1; err != nil && attempt <= retries && history.IsContextOverflow(err); attempt++ {
				var rerr error
				if r.Messages, res, rerr = RecoverOverflow(r.Messages, err, attempt, opts...); rerr != nil {
					break // nothing left to drop: the provider's error stands
				}
				limits.Learn(cfg.Model, err, budget, res.Budget, cfg.Calibration)
				resp, err = next(ctx, &r, cb)
			}
			if resp != nil && resp.Request == &r {
				resp.Request = req // so that ModelResponse.History is the whole conversation
			}
			if err == nil && resp != nil && resp.Usage != nil {
				adapt.Observe(cfg.Calibration, res.TokensAfter, resp.Usage.InputTokens, cfg.OnObserve)
			}
			return resp, err
		}
	}
}

// options returns the trim options of cfg for req, counted with counter,
// after door (the door's options, nil with a Budget).
func options(cfg Config, door []history.Option, req *ai.ModelRequest, counter history.Counter) []history.Option {
	return adapt.CallOptions(append(door, cfg.Options...), counter, cfg.Calibration, Overhead(req, counter))
}

// budget returns the budget and the trim options for req: Budget when
// positive or without a Model (the trim then reports the invalid budget),
// else the door's for Model (see Config.Model).
func (cfg *Config) budget(req *ai.ModelRequest) (int, []history.Option, error) {
	if cfg.Budget != 0 || cfg.Model == "" {
		return cfg.Budget, options(*cfg, nil, req, cfg.Counter), nil
	}
	output := 0
	if c, ok := req.Config.(*ai.GenerationCommonConfig); ok && c != nil {
		output = c.MaxOutputTokens
	}
	budget, counter, err := adapt.ModelBudget(cfg.Model, output, cfg.Calibration)
	if err != nil {
		return 0, nil, err
	}
	door, err := adapt.DoorOptions(cfg.Model, false)
	if err != nil {
		return 0, nil, err
	}
	if cfg.Counter != nil {
		counter = cfg.Counter
	}
	return budget, options(*cfg, door, req, counter), nil
}

// Overhead returns the tokens req sends besides its messages, counted with
// c (nil: history.Heuristic()): its tool definitions and its output
// schema, encoded to JSON and counted as the text of one system message.
// Pass it with history.WithOverhead, so that the messages fit the budget
// together with them and Result.TokensAfter counts the whole request.
func Overhead(req *ai.ModelRequest, c history.Counter) int {
	if req == nil {
		return 0
	}
	v := map[string]any{}
	if len(req.Tools) > 0 {
		v["tools"] = req.Tools
	}
	if req.Output != nil && req.Output.Schema != nil {
		v["schema"] = req.Output.Schema
	}
	if len(v) == 0 {
		return 0
	}
	return adapt.Overhead(c, adapt.JSON(v))
}
