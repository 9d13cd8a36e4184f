package fantasy

import (
	"context"
	"errors"
	"iter"

	"charm.land/fantasy"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// DefaultMaxRetries is how many times a Model resends a request the
// provider rejected for its length, when Config.MaxRetries is 0.
const DefaultMaxRetries = 2

// Config configures a Model and PrepareStep.
type Config struct {
	// Budget, when positive, is the model's context window, or the share
	// of it the messages and tools may fill, in the provider's tokens: an
	// override. 0 (the door) takes the budget from the model the call goes
	// to (the inner model's Model(), looked up in the models table): its
	// window less the output the call asks room for (MaxOutputTokens,
	// else the model's output limit), less history.MarginShare of the
	// window until the Calibration has observed a response; and, when
	// Counter is nil, the model's counter (the exact one when its
	// tokenizer is public). NewModel then gives the Model a Calibration
	// of its own when Calibration is nil. A model the table does not know
	// fails the call with the error of models.Lookup (wrapping
	// models.ErrUnknownModel): a budget is never guessed. A negative
	// Budget fails every trim with history.ErrInvalidBudget.
	Budget int
	// Counter counts a message's tokens, for the trims and for the tools'
	// overhead; nil means history.Heuristic().
	Counter history.Counter
	// Calibration, when set, learns the provider's count from the usage
	// of every response and from every overflow, and every trim aims at
	// the budget the provider counts. Use one per model.
	Calibration *history.Calibration
	// Options are more trim options (history.WithElision,
	// history.WithStepTrim, history.WithLowWater, history.WithOnTrim, ...);
	// history.WithCounter, history.WithCalibration and history.WithOverhead
	// are set from the fields above and the call's tools. Under the door
	// (no Budget), they come after the door's own, which they override:
	// the task preset of the default policy (fit.Policy; its low-water
	// mark is left out, since every call is trimmed afresh from the whole
	// prompt, where it would cost context without saving a cache
	// rewrite). history.WithPin is not supported: a step's messages have
	// no stable indices.
	Options []history.Option
	// MaxRetries is how many times a rejected request is resent: 0 means
	// DefaultMaxRetries, a negative value none.
	MaxRetries int
	// OnObserve, when set, is called after each response observed into
	// Calibration with the trim's count of what was sent, the provider's
	// (PromptTokens) and the verdict. It must be safe for concurrent use.
	OnObserve func(sent, reported int, v history.Verdict)
}

// options returns the trim options of cfg for a call with tools, counted
// with counter, after door (the door's options, nil with a Budget).
func (cfg *Config) options(door []history.Option, tools []fantasy.Tool, counter history.Counter) []history.Option {
	return adapt.CallOptions(append(door, cfg.Options...), counter, cfg.Calibration, Overhead(tools, counter))
}

// budget returns the budget and the trim options of a call to model with
// tools asking output tokens of room (nil: the model's limit): Budget when
// positive, else the door's (see Config.Budget).
func (cfg *Config) budget(model string, output *int64, tools []fantasy.Tool) (int, []history.Option, error) {
	if cfg.Budget != 0 { // a negative one: the trim reports it (history.ErrInvalidBudget)
		return cfg.Budget, cfg.options(nil, tools, cfg.Counter), nil
	}
	out := 0
	if output != nil {
		out = int(min(max(*output, 0), 1<<31-1))
	}
	budget, counter, err := adapt.ModelBudget(model, out, cfg.Calibration)
	if err != nil {
		return 0, nil, err
	}
	door, err := adapt.DoorOptions(model, false)
	if err != nil {
		return 0, nil, err
	}
	if cfg.Counter != nil {
		counter = cfg.Counter
	}
	return budget, cfg.options(door, tools, counter), nil
}

// PrepareStep returns a fantasy.PrepareStepFunction that trims the
// messages of every step of an agent to cfg.Budget, or without one to the
// budget of the step's model (see Config.Budget; the margin stays while
// cfg.Calibration is nil or cold) (fantasy.WithPrepareStep, or
// AgentCall.PrepareStep): the agent's history stays whole, each step
// sends a trimmed view of it. It counts no tools, since a step's options
// do not show them: give their Overhead with history.WithOverhead in
// cfg.Options. It does not recover from an overflow, which surfaces from
// the model call: wrap the model with NewModel for that (a Model trims
// too, so with one PrepareStep is only needed to see the step's trimmed
// messages). A trim whose latest turn alone exceeds the budget sends the
// smallest history; any other trim error stops the agent.
func PrepareStep(cfg Config) fantasy.PrepareStepFunction {
	return func(ctx context.Context, o fantasy.PrepareStepFunctionOptions) (context.Context, fantasy.PrepareStepResult, error) {
		name := ""
		if o.Model != nil {
			name = o.Model.Model()
		}
		budget, opts, err := cfg.budget(name, nil, nil)
		if err != nil {
			return ctx, fantasy.PrepareStepResult{}, err
		}
		msgs, _, err := Trim(o.Messages, budget, opts...)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			return ctx, fantasy.PrepareStepResult{}, err
		}
		return ctx, fantasy.PrepareStepResult{Messages: msgs}, nil
	}
}

// Model is a fantasy.LanguageModel that trims every call's prompt to its
// budget, resends a request the provider rejected for its length after
// RecoverOverflow, and observes every response's usage into its
// Calibration. After a recovery, every later budget of the Model (Budget
// or the door's) stays below what the provider stated, for the Model's
// life, as an adapter's Trimmer keeps it: a window smaller than the
// budget is refused once, not at every call. It is safe for concurrent
// use when its inner model is.
type Model struct {
	inner fantasy.LanguageModel
	cfg   Config
	// limits are what the provider's refusals said, per model name.
	limits adapt.Limits
}

// NewModel returns inner wrapped as a Model with cfg. Give it to
// fantasy.NewAgent in place of inner; the zero Config is the door (the
// budget of the model inner calls, see Config.Budget):
//
//	agent := fantasy.NewAgent(hfantasy.NewModel(model, hfantasy.Config{}), fantasy.WithTools(tools...))
func NewModel(inner fantasy.LanguageModel, cfg Config) *Model {
	if cfg.Budget == 0 && cfg.Calibration == nil {
		cfg.Calibration = new(history.Calibration) // the door's, which the Model owns
	}
	return &Model{inner: inner, cfg: cfg}
}

// Provider returns the inner model's provider.
func (m *Model) Provider() string { return m.inner.Provider() }

// Model returns the inner model's id.
func (m *Model) Model() string { return m.inner.Model() }

func (m *Model) retries() int { return adapt.Retries(m.cfg.MaxRetries, DefaultMaxRetries) }

// prepare trims prompt for a call with tools asking output tokens of room:
// the prompt to send, the Result, the budget and the options, for a
// retry.
func (m *Model) prepare(prompt fantasy.Prompt, output *int64, tools []fantasy.Tool) (fantasy.Prompt, history.Result, int, []history.Option, error) {
	name := m.inner.Model()
	budget, opts, err := m.cfg.budget(name, output, tools)
	if err != nil {
		return nil, history.Result{}, 0, nil, err
	}
	budget = m.limits.Bound(name, budget)
	sent, res, err := Trim(prompt, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, res, 0, nil, err
	}
	return sent, res, budget, opts, nil
}

// observe feeds a response's usage to the calibration.
func (m *Model) observe(res history.Result, u fantasy.Usage) {
	adapt.Observe(m.cfg.Calibration, res.TokensAfter, PromptTokens(u), m.cfg.OnObserve)
}

// withRetries runs send with the trimmed prompt of a call with tools, and again
// after each rejection for length that RecoverOverflow can shrink, at most
// MaxRetries times. It returns the Result behind the accepted request.
func withRetries[T any](m *Model, prompt fantasy.Prompt, output *int64, tools []fantasy.Tool, send func(fantasy.Prompt) (T, error)) (T, history.Result, error) {
	var zero T
	sent, res, budget, opts, err := m.prepare(prompt, output, tools)
	if err != nil {
		return zero, res, err
	}
	out, err := send(sent)
	for attempt := 1; err != nil && attempt <= m.retries() && IsOverflow(err); attempt++ {
		var rerr error
		if sent, res, rerr = RecoverOverflow(sent, err, attempt, opts...); rerr != nil {
			break // nothing left to drop: the provider's error stands
		}
		m.limits.Learn(m.inner.Model(), overflow(err), budget, res.Budget, m.cfg.Calibration)
		out, err = send(sent)
	}
	return out, res, err
}

// Generate trims call.Prompt, generates, and recovers from overflows (see
// Model).
func (m *Model) Generate(ctx context.Context, c fantasy.Call) (*fantasy.Response, error) {
	resp, res, err := withRetries(m, c.Prompt, c.MaxOutputTokens, c.Tools, func(p fantasy.Prompt) (*fantasy.Response, error) {
		c.Prompt = p
		return m.inner.Generate(ctx, c)
	})
	if err == nil && resp != nil {
		m.observe(res, resp.Usage)
	}
	return resp, err
}

// Stream trims call.Prompt and streams; a rejection for length of the
// request itself (the error Stream returns, or the first part's) is
// recovered from as by Generate, and the usage of the finish part is
// observed.
func (m *Model) Stream(ctx context.Context, c fantasy.Call) (fantasy.StreamResponse, error) {
	type pulled struct {
		first fantasy.StreamPart
		ok    bool
		next  func() (fantasy.StreamPart, bool)
		stop  func()
	}
	p, res, err := withRetries(m, c.Prompt, c.MaxOutputTokens, c.Tools, func(prompt fantasy.Prompt) (*pulled, error) {
		c.Prompt = prompt
		s, err := m.inner.Stream(ctx, c)
		if err != nil {
			return nil, err
		}
		// A rejection of the request comes as the first part: read it.
		next, stop := iter.Pull(iter.Seq[fantasy.StreamPart](s))
		first, ok := next()
		if ok && first.Type == fantasy.StreamPartTypeError && IsOverflow(first.Error) {
			stop()
			return nil, first.Error
		}
		return &pulled{first, ok, next, stop}, nil
	})
	if err != nil {
		return nil, err
	}
	return func(yield func(fantasy.StreamPart) bool) {
		defer p.stop()
		for part, ok := p.first, p.ok; ok; part, ok = p.next() {
			if part.Type == fantasy.StreamPartTypeFinish {
				m.observe(res, part.Usage)
			}
			if !yield(part) {
				return
			}
		}
	}, nil
}

// GenerateObject trims call.Prompt and generates an object, recovering
// from overflows as Generate does.
func (m *Model) GenerateObject(ctx context.Context, c fantasy.ObjectCall) (*fantasy.ObjectResponse, error) {
	resp, res, err := withRetries(m, c.Prompt, c.MaxOutputTokens, nil, func(p fantasy.Prompt) (*fantasy.ObjectResponse, error) {
		c.Prompt = p
		return m.inner.GenerateObject(ctx, c)
	})
	if err == nil && resp != nil {
		m.observe(res, resp.Usage)
	}
	return resp, err
}

// StreamObject trims call.Prompt and streams an object; an overflow is
// recovered from when StreamObject itself returns it.
func (m *Model) StreamObject(ctx context.Context, c fantasy.ObjectCall) (fantasy.ObjectStreamResponse, error) {
	resp, _, err := withRetries(m, c.Prompt, c.MaxOutputTokens, nil, func(p fantasy.Prompt) (fantasy.ObjectStreamResponse, error) {
		c.Prompt = p
		return m.inner.StreamObject(ctx, c)
	})
	return resp, err
}
