package adk

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/gemini"
	"github.com/histrim/history/internal/adapt"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/plugin"
	"google.golang.org/genai"
)

// DefaultMaxRetries is how many times a request Gemini rejected for its
// length is resent, when Config.MaxRetries is 0.
const DefaultMaxRetries = 2

// ErrNoBudget is returned by New for a Config whose Budget is negative.
var ErrNoBudget = errors.New("history/adk: Config.Budget must not be negative")

// Config configures the callbacks.
type Config struct {
	// Budget, when positive, is the model's context window, or the share
	// of it the request (system instruction, contents, tools and schemas)
	// may fill, in Gemini's tokens: an override. 0 (the door) takes the
	// budget from the model the request names (LLMRequest.Model, looked up
	// in the models table): its window less the output the request asks
	// room for (Config.MaxOutputTokens, else the model's output limit),
	// less history.MarginShare of the window until the Calibration has
	// observed a response; and, when Counter is nil, the model's counter.
	// A request naming a model the table does not know then fails with
	// the error of models.Lookup (wrapping models.ErrUnknownModel): a
	// budget is never guessed. Negative is an error (ErrNoBudget).
	Budget int
	// Model is the model the agent calls, used to resend a request
	// Gemini rejected for its length (OnModelError). nil: overflows are
	// not recovered from, and Gemini's error stands.
	Model model.LLM
	// Counter counts a message's tokens; nil means history.Heuristic().
	Counter history.Counter
	// Calibration learns Gemini's count from every response's usage
	// (usageMetadata.promptTokenCount) and from every overflow, for every
	// model the requests name. nil means the callbacks' own: one for all
	// requests with a Budget; under the door (no Budget), one per model
	// the requests name, since what a Calibration learns of one model's
	// tokenizer is wrong for another's. Use one per model.
	Calibration *history.Calibration
	// StateKey, when set, keeps the Calibration in the session state
	// under this key (an "app:" key shares it across the app's sessions):
	// it is written after every observation and read back, when the
	// Calibration has seen nothing yet, before the next request (a
	// restarted process starts from what it had learnt). The door's
	// Calibration of a model (no Budget, no Calibration) is kept under
	// StateKey + "/" + the model's name.
	StateKey string
	// Options are more trim options: history.WithElision,
	// history.WithStepTrim, history.WithLowWater, history.WithOnTrim, ...
	// history.WithCounter, history.WithCalibration and
	// history.WithOverhead are set from the fields above and the request.
	// Under the door (no Budget), they come after the door's own, which
	// they override: the task preset of the default policy (fit.Policy;
	// its low-water mark is left out, since every request is trimmed
	// afresh from the session's events, where it would cost context
	// without saving a cache rewrite).
	// history.WithPin is not supported: contents are rebuilt from the
	// session's events for every request.
	Options []history.Option
	// MaxRetries is how many times a rejected request is resent: 0 means
	// DefaultMaxRetries, a negative value none.
	MaxRetries int
	// OnError, when set, receives what a trim could not do: contents
	// that do not convert (the request is then sent as it was) or a
	// failed resend. nil ignores them.
	OnError func(error)
	// OnObserve, when set, is called after each response observed into
	// the Calibration with the trim's count of what was sent, Gemini's and
	// the verdict. It must be safe for concurrent use.
	OnObserve func(sent, reported int, v history.Verdict)
}

// Callbacks trims every request an ADK agent sends to Gemini, recovers
// from Gemini's context overflows, and learns Gemini's count from every
// response. Install them as a plugin (Plugin) or as an agent's callbacks
// (BeforeModel, AfterModel, OnModelError). They change only the request
// that is sent: the session's events, and so the conversation, stay
// whole. Callbacks are safe for concurrent use, across agents and
// sessions.
type Callbacks struct {
	cfg Config
	// cal is the Calibration of every request (Config.Calibration, else
	// the callbacks' own) but under the door without Config.Calibration,
	// where cals holds one per model, and latest names the model of the
	// latest request (for Calibration).
	cal    *history.Calibration
	cals   *adapt.Calibrations
	latest atomic.Pointer[string]
	// limits are what Gemini's refusals said, per model: every later
	// budget for the model stays below them (see budget).
	limits adapt.Limits

	mu sync.Mutex
	// sent is the count of what each model call under way sent
	// (Result.TokensAfter) and the Calibration its trim used, for
	// AfterModel to observe against Gemini's; old is the generation
	// before, looked up too. A figure is released
	// with its call (AfterModel, OnModelError, the plugin's AfterRun) and
	// in any case after maxPending newer calls (see remember): a call
	// that ends where no callback of this package runs leaves a few bytes,
	// for a while.
	sent, old map[callKey]pending
}

// pending is what a model call under way sent, counted by its trim, and
// the Calibration (and its state key) of the model it calls.
type pending struct {
	sent int
	cal  *history.Calibration
	key  string
}

// maxPending is how many model calls a generation of Callbacks.sent
// holds: the calls under way at once that can all be observed.
var maxPending = 1024

// callKey names one model call under way: an invocation's branch of one
// agent calls its model once at a time.
type callKey struct{ invocation, branch, agent string }

func keyOf(ctx agent.ReadonlyContext) callKey {
	return callKey{ctx.InvocationID(), ctx.Branch(), ctx.AgentName()}
}

// New returns the callbacks for cfg, or ErrNoBudget.
func New(cfg Config) (*Callbacks, error) {
	if cfg.Budget < 0 {
		return nil, ErrNoBudget
	}
	c := &Callbacks{cfg: cfg, cal: cfg.Calibration}
	switch {
	case c.cal == nil && cfg.Budget == 0:
		c.cals = new(adapt.Calibrations) // the door's: one per model
	case c.cal == nil:
		c.cal = &history.Calibration{}
	}
	return c, nil
}

// Calibration returns the Calibration the callbacks learn into: the one
// of every request (Config.Calibration, or the callbacks' own with a
// Budget), or under the door without Config.Calibration, that of the
// model the latest request named (see CalibrationFor; a fresh one before
// any request).
func (c *Callbacks) Calibration() *history.Calibration {
	if c.cals == nil {
		return c.cal
	}
	if p := c.latest.Load(); p != nil {
		return c.cals.For(*p)
	}
	return new(history.Calibration)
}

// CalibrationFor returns the Calibration the trims of requests naming
// model learn into: the door's own for that model (no Budget, no
// Config.Calibration), made on first use, else the one of every request.
func (c *Callbacks) CalibrationFor(model string) *history.Calibration {
	cal, _ := c.calibration(model)
	return cal
}

// calibration returns the Calibration of requests naming model and the
// session state key it is kept under ("" without Config.StateKey).
func (c *Callbacks) calibration(model string) (*history.Calibration, string) {
	if c.cals == nil {
		return c.cal, c.cfg.StateKey
	}
	key := ""
	if c.cfg.StateKey != "" {
		key = c.cfg.StateKey + "/" + model
	}
	return c.cals.For(model), key
}

// Plugin returns the callbacks as an ADK plugin named "histrim", for
// runner.Config.PluginConfig: they then run for every agent of the
// runner, before the agents' own callbacks.
func (c *Callbacks) Plugin() (*plugin.Plugin, error) {
	return plugin.New(plugin.Config{
		Name:                 "histrim",
		BeforeModelCallback:  c.BeforeModel,
		AfterModelCallback:   c.AfterModel,
		OnModelErrorCallback: c.OnModelError,
		AfterRunCallback:     c.afterRun,
	})
}

// afterRun releases what the invocation's model calls left: calls that
// ended where no callback of this package ran (a callback after this
// one answered in the model's place, the stream was abandoned).
func (c *Callbacks) afterRun(ctx agent.InvocationContext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := ctx.InvocationID()
	for _, m := range []map[callKey]pending{c.sent, c.old} {
		for k := range m {
			if k.invocation == id {
				delete(m, k)
			}
		}
	}
}

// Install adds the callbacks to an agent's configuration, before its own
// (an agent's callbacks run in order, and the first that answers stops
// the others).
func (c *Callbacks) Install(cfg *llmagent.Config) {
	cfg.BeforeModelCallbacks = append([]llmagent.BeforeModelCallback{c.BeforeModel}, cfg.BeforeModelCallbacks...)
	cfg.AfterModelCallbacks = append([]llmagent.AfterModelCallback{c.AfterModel}, cfg.AfterModelCallbacks...)
	cfg.OnModelErrorCallbacks = append([]llmagent.OnModelErrorCallback{c.OnModelError}, cfg.OnModelErrorCallbacks...)
}

// options returns the trim options for a request with config: door (the
// door's options, nil with a Budget), Config.Options, then counter, cal
// and the request's overhead counted with counter.
func (c *Callbacks) options(door []history.Option, config *genai.GenerateContentConfig, counter history.Counter, cal *history.Calibration) []history.Option {
	return adapt.CallOptions(append(door, c.cfg.Options...), counter, cal, gemini.Overhead(config, counter))
}

// budget returns the budget, the trim options and the Calibration for
// req: Config.Budget when positive, else the door's for the model req
// names (see Config.Budget); either bounded by what Gemini's refusals of
// requests to that model said (OnModelError).
func (c *Callbacks) budget(req *model.LLMRequest) (int, []history.Option, *history.Calibration, error) {
	cal, _ := c.calibration(req.Model)
	budget, opts, err := c.unbounded(req, cal)
	if err != nil {
		return 0, nil, nil, err
	}
	return c.limits.Bound(req.Model, budget), opts, cal, nil
}

// unbounded is budget before the bound of Gemini's refusals, with cal the
// Calibration of req's model.
func (c *Callbacks) unbounded(req *model.LLMRequest, cal *history.Calibration) (int, []history.Option, error) {
	if c.cfg.Budget > 0 {
		return c.cfg.Budget, c.options(nil, req.Config, c.cfg.Counter, cal), nil
	}
	output := 0
	if req.Config != nil {
		output = int(req.Config.MaxOutputTokens)
	}
	budget, counter, err := adapt.ModelBudget(req.Model, output, cal)
	if err != nil {
		return 0, nil, err
	}
	door, err := adapt.DoorOptions(req.Model, false)
	if err != nil {
		return 0, nil, err
	}
	if c.cfg.Counter != nil {
		counter = c.cfg.Counter
	}
	return budget, c.options(door, req.Config, counter, cal), nil
}

func system(req *model.LLMRequest) *genai.Content {
	if req.Config == nil {
		return nil
	}
	return req.Config.SystemInstruction
}

func (c *Callbacks) report(err error) {
	if c.cfg.OnError != nil && err != nil {
		c.cfg.OnError(err)
	}
}

// BeforeModel trims req.Contents to the budget with gemini.Trim, the
// system instruction, tools and response schemas of req.Config counted,
// calibrated; it never answers in the model's place (its response is
// always nil). Without Config.Budget, the budget is the model's that req
// names (see Config.Budget), and a model the table does not know fails
// the call with the error of models.Lookup. A request whose latest turn alone exceeds the budget is
// sent with the smallest contents that keep it; one that does not
// convert is sent as it was, its error given to Config.OnError; so is
// one the trim would leave without contents (only model contents, or
// only orphans: Gemini refuses a request without contents), with an
// error wrapping gemini.ErrNoContents.
func (c *Callbacks) BeforeModel(ctx agent.CallbackContext, req *model.LLMRequest) (*model.LLMResponse, error) {
	c.forget(ctx) // a figure left by an earlier call must not be observed against this one
	if req == nil || len(req.Contents) == 0 {
		return nil, nil
	}
	if c.cals != nil {
		name := req.Model
		c.latest.Store(&name)
	}
	c.restore(ctx, req.Model)
	budget, opts, cal, err := c.budget(req)
	if err != nil {
		return nil, err
	}
	out, res, err := gemini.Trim(system(req), req.Contents, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		c.report(err)
		return nil, nil
	}
	if len(out) == 0 {
		c.report(errNoContents)
		return nil, nil
	}
	req.Contents = out
	c.remember(ctx, req.Model, res.TokensAfter, cal)
	return nil, nil
}

// errNoContents reports a trim that left nothing to send.
var errNoContents = fmt.Errorf("history/adk: the trim leaves no contents; the request is sent as it came: %w", gemini.ErrNoContents)

// OnModelError recovers from Gemini's rejection of req for its length
// (history.IsContextOverflow: HTTP 400 INVALID_ARGUMENT, "The input token
// count (N) exceeds the maximum number of tokens allowed (M)."): it trims
// req.Contents with gemini.RecoverOverflow below the sizes Gemini stated
// and resends req through Config.Model, at most MaxRetries times, and
// returns the answer in place of the error. Any other error, a rejection
// with nothing left to drop (or that would leave no contents), or no
// Config.Model, leaves Gemini's error as it is (nil, nil). A resend is
// not streamed. After a recovery, every later budget for the model
// (Config.Budget or the door's) stays below the limit Gemini stated, for
// the life of the callbacks, as an adapter's Trimmer keeps it: a window
// smaller than the budget is refused once, not at every request.
func (c *Callbacks) OnModelError(ctx agent.CallbackContext, req *model.LLMRequest, llmErr error) (*model.LLMResponse, error) {
	c.forget(ctx) // the call failed: unless a resend is answered, there is nothing to observe
	if c.cfg.Model == nil || req == nil || !history.IsContextOverflow(llmErr) {
		return nil, nil
	}
	retries := adapt.Retries(c.cfg.MaxRetries, DefaultMaxRetries)
	if retries == 0 {
		return nil, nil
	}
	budget, opts, cal, err := c.budget(req)
	if err != nil {
		return nil, nil // BeforeModel refused the call already
	}
	err = llmErr
	for attempt := 1; attempt <= retries && history.IsContextOverflow(err); attempt++ {
		out, res, rerr := gemini.RecoverOverflow(system(req), req.Contents, err, attempt, opts...)
		if rerr != nil || len(out) == 0 {
			return nil, nil // nothing left to drop: Gemini's error stands
		}
		// What Gemini said bounds every later request to the model, as
		// an adapter's Trimmer keeps it: a budget above its real window
		// is refused once, not at every request.
		c.limits.Learn(req.Model, err, budget, res.Budget, cal)
		req.Contents = out
		var resp *model.LLMResponse
		if resp, err = generate(ctx, c.cfg.Model, req); err == nil {
			c.remember(ctx, req.Model, res.TokensAfter, cal) // for AfterModel, which ADK calls on the answer
			return resp, nil
		}
	}
	c.report(err)
	return nil, nil
}

// generate sends req through m, unstreamed, and returns its final
// response.
func generate(ctx agent.CallbackContext, m model.LLM, req *model.LLMRequest) (*model.LLMResponse, error) {
	var last *model.LLMResponse
	for resp, err := range m.GenerateContent(ctx, req, false) {
		if err != nil {
			return nil, err
		}
		if resp != nil && !resp.Partial {
			last = resp
		}
	}
	if last == nil {
		return nil, errors.New("history/adk: the model answered nothing")
	}
	return last, nil
}

// AfterModel observes a final response's usage into the Calibration of
// the model the request named, against the trim's count of the request
// that was sent (after a recovery, the resent one), and saves that
// Calibration under Config.StateKey. It never changes the response (it returns nil, nil).
func (c *Callbacks) AfterModel(ctx agent.CallbackContext, resp *model.LLMResponse, llmErr error) (*model.LLMResponse, error) {
	if llmErr == nil && resp != nil && resp.Partial {
		return nil, nil // more of the response is coming
	}
	p, ok := c.take(ctx) // the call is over: its figure goes, observed or not
	if !ok || llmErr != nil || resp == nil || resp.UsageMetadata == nil || resp.UsageMetadata.PromptTokenCount <= 0 {
		return nil, nil
	}
	adapt.Observe(p.cal, p.sent, int(resp.UsageMetadata.PromptTokenCount), c.cfg.OnObserve)
	c.save(ctx, p.cal, p.key)
	return nil, nil
}

// remember keeps sent, the count of what the model call of ctx to the
// model named sends, with cal, the Calibration of its trim, for
// AfterModel. When the generation is full it becomes the old one, and the
// old one goes: a figure outlives at most 2*maxPending newer ones,
// whatever callbacks ADK skips.
func (c *Callbacks) remember(ctx agent.ReadonlyContext, model string, sent int, cal *history.Calibration) {
	_, key := c.calibration(model)
	c.mu.Lock()
	defer c.mu.Unlock()
	k := keyOf(ctx)
	delete(c.old, k)
	if c.sent == nil || len(c.sent) >= maxPending {
		c.old, c.sent = c.sent, make(map[callKey]pending)
	}
	c.sent[k] = pending{sent: sent, cal: cal, key: key}
}

// take returns and releases the figure of the model call of ctx.
func (c *Callbacks) take(ctx agent.ReadonlyContext) (pending, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := keyOf(ctx)
	sent, ok := c.sent[k]
	if !ok {
		sent, ok = c.old[k]
	}
	delete(c.sent, k)
	delete(c.old, k)
	return sent, ok
}

// forget releases the figure of the model call of ctx, if any.
func (c *Callbacks) forget(ctx agent.ReadonlyContext) { c.take(ctx) }

// save writes cal to the session state under key (none when empty).
func (c *Callbacks) save(ctx agent.CallbackContext, cal *history.Calibration, key string) {
	if key == "" {
		return
	}
	b, err := json.Marshal(cal)
	if err == nil {
		err = ctx.State().Set(key, string(b))
	}
	c.report(err)
}

// restore reads the Calibration of requests naming model back from the
// session state under its key (StateKey, or the door's per model) when it
// has seen nothing yet.
func (c *Callbacks) restore(ctx agent.CallbackContext, model string) {
	cal, key := c.calibration(model)
	if key == "" {
		return
	}
	if _, _, _, ok := cal.Model(); ok {
		return
	}
	v, err := ctx.State().Get(key)
	if err != nil {
		return // nothing saved yet
	}
	s, ok := v.(string)
	if !ok {
		c.report(errors.New("history/adk: the state under Config.StateKey is not a saved Calibration"))
		return
	}
	c.report(cal.UnmarshalJSON([]byte(s)))
}
