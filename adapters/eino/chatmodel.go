package eino

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/pins"
)

// MaxRetries is the number of times a ChatModel retries one request that
// the inner chat model rejected as too long, each time after
// RecoverOverflow trimmed it further.
const MaxRetries = 2

// ErrStillTooLong is wrapped, together with the chat model's own error, by
// the error a ChatModel returns when the inner chat model rejected a
// request as too long MaxRetries+1 times.
var ErrStillTooLong = errors.New("history/eino: request still too long after retries")

// Config configures a ChatModel. Budget or Model is required; the zero
// value of every other field turns what it configures off.
type Config struct {
	// Budget, when positive, is the input-token budget of every request,
	// in the provider's tokens: the model's context window less what is
	// kept for the reply (see history.Budget). It must not be negative.
	// Zero: the door, the budget of the model Model names.
	Budget int
	// Model names the model the ChatModel calls ("gpt-4.1",
	// "claude-sonnet-4-5"), for the door when Budget is 0; a call's
	// model.WithModel names another for that call. The budget of each
	// call is then the model's window from the models table less the
	// output the call asks room for (model.WithMaxTokens, else the
	// model's output limit), less history.MarginShare of the window until
	// the Calibration has observed a response (the ChatModel owns one per
	// model when Calibration is nil); the Counter, when nil, is the
	// model's (the exact one when its tokenizer is public). The trims
	// take the default policy's options (fit.Policy) before Options: the
	// task preset, and under Stateful the cache policy too (the low-water
	// mark, and the model's cache retention for a cold resume; a
	// stateless trim of the whole transcript moves its cut at every
	// request, where the mark would cost context without saving a
	// rewrite). After an overflow, every later budget for the model stays
	// below what the provider said. A name the table does not know is an
	// error (wrapping models.ErrUnknownModel): a budget is never guessed.
	Model string
	// Calibration, when not nil, learns how the provider counts: after
	// every accepted request it observes the Counter's count of the
	// request (Result.TokensAfter, tools and Overhead included) against
	// the provider's (ResponseMeta.Usage.PromptTokens), and every trim
	// aims at the budget it derives (history.WithCalibration), so that
	// the provider's count lands at or under Budget. Use one per model
	// (or endpoint), shared by every ChatModel that calls it. (A
	// history.WithCalibration in Options would aim the trims but never
	// be fed.)
	Calibration *history.Calibration
	// Counter counts the messages and the tools (nil: history.Heuristic,
	// or the model's counter under the door).
	// Set it here rather than with history.WithCounter in Options, so
	// that the tools are counted with it too (a WithCounter in Options
	// counts the messages only).
	Counter history.Counter
	// Overhead is what every request sends besides its messages and its
	// tools, in the Counter's units: a response format or JSON schema
	// set in the inner chat model's configuration, for example. It must
	// not be negative. The tools are counted on their own (see WithTools).
	Overhead int
	// Options are the trim options of every request, such as
	// history.WithElision, history.WithStepTrim, history.WithLowWater or
	// history.WithOnTrim (which receives the trims to the budget and the
	// recoveries from overflow as history.Event values). Under the door
	// they come after the door's own (see Model), which they override.
	// They must not hold history.WithPin, whose indices change from call
	// to call: pin with TrimOptions on each call instead.
	Options []history.Option
	// Stateful makes the ChatModel trim with a Trimmer (see NewTrimmer)
	// for the conversation it serves: the input of every call is the
	// conversation's whole transcript, which only grows, and between
	// maintenance points the prompt only grows at its end, so the
	// provider's prompt cache survives (docs/prompt-caching.md); an
	// overflow is recovered with the Trimmer's RecoverOverflow, after
	// which its plans fit what the provider said. Use one ChatModel per
	// conversation. Under the door it keeps one Trimmer per model the
	// calls name (model.WithModel, else Model), made with that model's
	// counter, Calibration and options, so calls that alternate models
	// each trim as their own model's. history.WithPin may then be in
	// Options, with indices into the transcript; TrimOptions is refused.
	Stateful bool
	// OnEvent, when not nil, receives an Event, synchronously, for every
	// request sent to the inner chat model, every usage it reports,
	// every overflow and every error Generate or Stream returns. It
	// must be safe for concurrent use if the ChatModel is used
	// concurrently.
	OnEvent func(Event)
}

// EventType says what an Event reports.
type EventType string

// The events a ChatModel reports.
const (
	// EventRequest: a request is about to go to the inner chat model,
	// trimmed (Attempt 0) or recovered after an overflow (Attempt 1 or
	// 2). Err is the *history.BudgetError when even the latest turn does
	// not fit the budget: the smallest history is sent all the same.
	EventRequest EventType = "request"
	// EventUsage: the provider reported its count of an accepted
	// request's input (PromptTokens), which the Calibration observed.
	EventUsage EventType = "usage"
	// EventOverflow: the inner chat model rejected the request of
	// Attempt as too long; Err is its error. A retry (EventRequest with
	// Attempt+1) or an error (EventError) follows.
	EventOverflow EventType = "overflow"
	// EventError: Generate or Stream returns Err.
	EventError EventType = "error"
)

// Event is what a ChatModel reports to Config.OnEvent. Its figures are
// those of the request it concerns.
type Event struct {
	// Type says what happened.
	Type EventType
	// Stream is true for a request made by Stream, false for Generate.
	Stream bool
	// Attempt numbers the request: 0 for the first, 1 to MaxRetries for
	// the retries after an overflow.
	Attempt int
	// Messages is the number of messages the request sends.
	Messages int
	// Tokens is the Counter's count of the request: its messages, its
	// tools and Config.Overhead (Result.TokensAfter).
	Tokens int
	// Budget is the budget the request was trimmed to, in the Counter's
	// units: Config.Budget (or the door's budget for the model) as the
	// Calibration translates it, or the target RecoverOverflow derived
	// (Result.Budget).
	Budget int
	// Trimmed reports that the request is not the caller's input as it
	// was: turns, steps or tool results were dropped or elided.
	Trimmed bool
	// PromptTokens is the provider's count of the request's input
	// (EventUsage only).
	PromptTokens int
	// Err is the error the event reports (see the event types).
	Err error
}

// ChatModel is an Eino model.ToolCallingChatModel that trims the
// messages of every Generate and Stream call to its budget before the
// inner chat model sends them, recovers when the provider rejects a
// request as too long anyway (RecoverOverflow, at most MaxRetries
// retries), feeds the provider's usage to a Calibration and reports what
// it does (Config.OnEvent).
//
// The caller's messages are never modified: each call trims its input
// with Trim, so the inner model receives the caller's own pointers, a
// notice where turns or steps were dropped and copies of elided tool
// results. The tools bound with WithTools, or passed to a call with
// model.WithTools, count as overhead (see Overhead) and are sent as the
// inner model sends them.
//
// A ChatModel holds no state of its own (the Calibration is the
// caller's), but for the conversation's Trimmer under Config.Stateful: it
// is safe for concurrent use when the inner model, the Counter and the
// callbacks are. Make one with NewChatModel; the zero
// value has no inner model.
type ChatModel struct {
	inner model.ToolCallingChatModel
	cfg   Config
	// tools is the Overhead of the tools bound with WithTools, counted
	// with cfg.Counter; bound are those tools, for the door's counter.
	tools int
	bound []*schema.ToolInfo
	// door is what the door keeps when cfg.Budget is 0, shared by the
	// ChatModels WithTools returns.
	door *door
	// state is the conversation's Trimmer under Config.Stateful.
	state *adapt.Conversation[struct{}, *schema.Message]
}

var _ model.ToolCallingChatModel = (*ChatModel)(nil)

// door is what a ChatModel keeps for the door: a Calibration per model
// (when Config.Calibration is nil) and what the provider's refusals said.
type door struct {
	cals   adapt.Calibrations
	limits adapt.Limits
}

// NewChatModel returns a ChatModel that trims to cfg.Budget, or to the
// budget of the model cfg.Model names when cfg.Budget is 0, before calling
// inner. It returns an error, prefixed "history/eino:", when inner is nil,
// cfg.Budget is negative, or zero without a cfg.Model (wrapping
// history.ErrInvalidBudget), cfg.Model is a name the models table does not
// know (wrapping models.ErrUnknownModel), cfg.Overhead is negative, an option of cfg.Options is invalid (wrapping
// the core's *history.OptionError) or cfg.Options holds history.WithPin.
// cfg.Options is copied.
func NewChatModel(inner model.ToolCallingChatModel, cfg Config) (*ChatModel, error) {
	switch {
	case inner == nil:
		return nil, errors.New("history/eino: NewChatModel: nil inner chat model")
	case cfg.Budget < 0 || (cfg.Budget == 0 && cfg.Model == ""):
		return nil, fmt.Errorf("history/eino: NewChatModel: %w (got %d): set Budget, or Model for the model's", history.ErrInvalidBudget, cfg.Budget)
	case cfg.Overhead < 0:
		return nil, fmt.Errorf("history/eino: NewChatModel: negative Overhead %d", cfg.Overhead)
	case pins.Read(cfg.Options) != nil && !cfg.Stateful:
		return nil, errors.New("history/eino: NewChatModel: Options hold history.WithPin; pin per call with TrimOptions")
	}
	cfg.Options = slices.Clip(slices.Clone(cfg.Options))
	budget := cfg.Budget
	var d *door
	if budget == 0 {
		b, _, err := adapt.ModelBudget(cfg.Model, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("history/eino: NewChatModel: %w", err)
		}
		budget, d = b, new(door)
	}
	// An empty history is trimmed only after the options are checked.
	if _, err := history.TrimToRecentTurns(nil, budget, cfg.Options...); err != nil {
		return nil, fmt.Errorf("history/eino: NewChatModel: %w", err)
	}
	m := &ChatModel{inner: inner, cfg: cfg, door: d}
	if cfg.Stateful {
		m.state = &adapt.Conversation[struct{}, *schema.Message]{}
	}
	return m, nil
}

// callOptions are the options TrimOptions passes to one call.
type callOptions struct {
	trim []history.Option
}

// TrimOptions returns a model.Option that adds opts to the trim options of
// one Generate or Stream call of a ChatModel, after Config.Options (a
// later option overrides an earlier one): history.WithPin with indices
// into that call's input (the ChatModel translates them for its retries),
// history.WithLabels naming the call. Other chat models ignore it.
func TrimOptions(opts ...history.Option) model.Option {
	opts = slices.Clip(slices.Clone(opts))
	return model.WrapImplSpecificOptFn(func(o *callOptions) {
		o.trim = append(o.trim, opts...)
	})
}

// Generate trims input to the budget, calls the inner model's Generate
// with the trimmed messages and opts, and returns its reply. When the
// inner model rejects the request as too long (history.IsContextOverflow),
// Generate trims further with RecoverOverflow and retries, at most
// MaxRetries times. The reply's ResponseMeta.Usage.PromptTokens, when
// positive, is observed by Config.Calibration.
//
// Errors: the inner model's error as it is when it is not an overflow;
// a *history.RecoverError (wrapping history.ErrCannotRecover and the
// inner model's error) when only the prefix and the latest turn were
// left to send; an error wrapping ErrStillTooLong and the inner model's
// last error after MaxRetries retries; an error wrapping the trim's
// error when input cannot be trimmed (a message that does not convert,
// wrapping ErrInvalidMessage; an invalid option of TrimOptions). When
// even the latest turn does not fit the budget, the smallest history is
// sent and the provider decides.
func (m *ChatModel) Generate(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	var out *schema.Message
	send, res, attempt, cal, err := m.do(input, opts, false, func(send []*schema.Message) error {
		var err error
		out, err = m.inner.Generate(ctx, send, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if p := promptTokens(out); p > 0 {
		m.observe(cal, send, res, attempt, false, p)
	}
	return out, nil
}

// Stream trims and retries as Generate does, then returns the inner
// model's stream. Only a rejection of the request itself can be retried:
// an error that arrives inside the stream reaches the caller as it is.
// The usage the stream carries (usually in its last chunk) is observed
// when the caller receives it.
func (m *ChatModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	var sr *schema.StreamReader[*schema.Message]
	send, res, attempt, cal, err := m.do(input, opts, true, func(send []*schema.Message) error {
		var err error
		sr, err = m.inner.Stream(ctx, send, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	if sr == nil {
		// A reader over nothing would panic on its first Recv.
		return nil, errNilStream
	}
	if cal == nil && m.cfg.OnEvent == nil {
		return sr, nil
	}
	var seen atomic.Bool
	return schema.StreamReaderWithConvert(sr, func(msg *schema.Message) (*schema.Message, error) {
		if p := promptTokens(msg); p > 0 && seen.CompareAndSwap(false, true) {
			m.observe(cal, send, res, attempt, true, p)
		}
		return msg, nil
	}), nil
}

// errNilStream is Stream's error when the inner model returns neither a
// stream nor an error.
var errNilStream = errors.New("history/eino: Stream: the inner chat model returned no stream and no error")

// WithTools binds tools to the inner model (its WithTools) and returns a
// ChatModel over the result, with the same Config, in which the tools
// count as overhead on every request (Overhead with Config.Counter).
// m itself is not changed.
func (m *ChatModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	inner, err := m.inner.WithTools(tools)
	if err != nil {
		return nil, err
	}
	if inner == nil {
		return nil, errors.New("history/eino: WithTools: the inner chat model returned nil")
	}
	bound := &ChatModel{inner: inner, cfg: m.cfg, tools: Overhead(tools, m.cfg.Counter), bound: tools, door: m.door}
	if m.cfg.Stateful {
		bound.state = &adapt.Conversation[struct{}, *schema.Message]{}
	}
	return bound, nil
}

// GetType returns the inner model's type (Eino names a component by it),
// or "Histrim" when it has none.
func (m *ChatModel) GetType() string {
	if t, ok := components.GetType(m.inner); ok {
		return t
	}
	return "Histrim"
}

// IsCallbacksEnabled reports whether the inner model runs Eino's
// callbacks itself: then they see the trimmed messages of every request,
// retries included; otherwise Eino runs them around the ChatModel, with
// the caller's input.
func (m *ChatModel) IsCallbacksEnabled() bool { return components.IsCallbacksEnabled(m.inner) }

// budget returns the budget of a call with opts, the Counter and
// Calibration its trim uses (nil: none set) and the model it is for under
// the door ("" with Config.Budget).
func (m *ChatModel) budget(c *model.Options) (int, history.Counter, *history.Calibration, string, error) {
	if m.door == nil {
		return m.cfg.Budget, m.cfg.Counter, m.cfg.Calibration, "", nil
	}
	name := m.cfg.Model
	if c.Model != nil && *c.Model != "" {
		name = *c.Model
	}
	output := 0
	if c.MaxTokens != nil {
		output = *c.MaxTokens
	}
	cal := m.cfg.Calibration
	if cal == nil {
		cal = m.door.cals.For(name)
	}
	budget, counter, err := adapt.ModelBudget(name, output, cal)
	if err != nil {
		return 0, nil, nil, name, err
	}
	if m.cfg.Counter != nil {
		counter = m.cfg.Counter
	}
	return m.door.limits.Bound(name, budget), counter, cal, name, nil
}

// do trims input, sends it with call and recovers from overflows. It
// returns what the accepted request sent, its Result, its attempt and the
// Calibration to observe its usage (nil: none).
func (m *ChatModel) do(input []*schema.Message, opts []model.Option, stream bool, call func([]*schema.Message) error) ([]*schema.Message, history.Result, int, *history.Calibration, error) {
	c := model.GetCommonOptions(nil, opts...)
	budget, counter, cal, name, err := m.budget(c)
	if err != nil {
		return nil, history.Result{}, 0, nil, m.fail(stream, 0, fmt.Errorf("history/eino: %w", err))
	}
	tools := m.tools
	switch {
	case c.Tools != nil:
		tools = Overhead(c.Tools, counter) // a call's tools replace the bound ones
	case m.door != nil && m.cfg.Counter == nil:
		tools = Overhead(m.bound, counter) // with the model's counter
	}
	trimOpts := slices.Clip(m.cfg.Options)
	if name != "" { // the door's options come first: the caller's override them
		door, err := adapt.DoorOptions(name, m.state != nil)
		if err != nil {
			return nil, history.Result{}, 0, nil, m.fail(stream, 0, fmt.Errorf("history/eino: %w", err))
		}
		trimOpts = append(door, trimOpts...)
	}
	trimOpts = append(trimOpts, history.WithOverhead(m.cfg.Overhead+tools))
	// Only when set, so that a nil field leaves the Options' own alone.
	if counter != nil {
		trimOpts = append(trimOpts, history.WithCounter(counter))
	}
	if cal != nil {
		trimOpts = append(trimOpts, history.WithCalibration(cal))
	}
	perCall := model.GetImplSpecificOptions(&callOptions{}, opts...).trim
	trimOpts = append(trimOpts, perCall...)
	pinned := pins.Read(trimOpts)
	trim := func() ([]*schema.Message, history.Result, error) { return Trim(input, budget, trimOpts...) }
	recover := func(send []*schema.Message, ropts []history.Option, err error, attempt int) ([]*schema.Message, history.Result, error) {
		return RecoverOverflow(send, err, attempt, ropts...)
	}
	if m.state != nil {
		if len(perCall) > 0 {
			return nil, history.Result{}, 0, nil, m.fail(stream, 0, errors.New("history/eino: TrimOptions: a stateful ChatModel trims with its Config.Options"))
		}
		tr := m.state.Trimmer(codec, struct{}{}, name, m.cfg.Overhead+tools, trimOpts)
		trim = func() ([]*schema.Message, history.Result, error) { return tr.Trim(input, budget) }
		recover = func(_ []*schema.Message, _ []history.Option, err error, attempt int) ([]*schema.Message, history.Result, error) {
			return tr.RecoverOverflow(input, err, attempt)
		}
		pinned = nil // the Trimmer's pins index the transcript
	}

	send, res, terr := trim()
	if terr != nil && !errors.Is(terr, history.ErrLatestTurnTooLarge) {
		return nil, res, 0, nil, m.fail(stream, 0, fmt.Errorf("history/eino: trim: %w", terr))
	}
	// origin[j] is the index in input of send[j] (-1: a notice), to
	// translate the caller's pins for RecoverOverflow.
	origin := res.Kept
	for attempt := 0; ; attempt++ {
		ev := requestEvent(EventRequest, stream, attempt, send, res)
		ev.Err = terr
		m.emit(ev)
		err := call(send)
		if err == nil {
			return send, res, attempt, cal, nil
		}
		if !history.IsContextOverflow(err) {
			return nil, res, attempt, nil, m.fail(stream, attempt, err)
		}
		ev = requestEvent(EventOverflow, stream, attempt, send, res)
		ev.Err = err
		m.emit(ev)
		if attempt == MaxRetries {
			return nil, res, attempt, nil, m.fail(stream, attempt, fmt.Errorf("%w (%d): %w", ErrStillTooLong, MaxRetries, err))
		}
		ropts := trimOpts
		if pinned != nil {
			ropts = append(slices.Clip(trimOpts), history.WithPin(adapt.Follow(origin, pinned)...))
		}
		next, nres, rerr := recover(send, ropts, err, attempt+1)
		if rerr != nil {
			return nil, res, attempt, nil, m.fail(stream, attempt, rerr)
		}
		// The door's: later budgets for the model stay below what the
		// provider said (a stateful ChatModel's Trimmer keeps that itself:
		// the two would count it twice).
		if m.door != nil && m.state == nil {
			m.door.limits.Learn(name, err, budget, nres.Budget, cal)
		}
		moved := make([]int, len(nres.Kept))
		for j, k := range nres.Kept {
			moved[j] = -1
			if k >= 0 && k < len(origin) {
				moved[j] = origin[k]
			}
		}
		send, res, origin, terr = next, nres, moved, nil
	}
}

// observe feeds the provider's count p of the accepted request to the
// Calibration and reports it.
func (m *ChatModel) observe(cal *history.Calibration, send []*schema.Message, res history.Result, attempt int, stream bool, p int) {
	if cal != nil {
		cal.Observe(res.TokensAfter, p)
	}
	ev := requestEvent(EventUsage, stream, attempt, send, res)
	ev.PromptTokens = p
	m.emit(ev)
}

// fail reports err as an EventError and returns it.
func (m *ChatModel) fail(stream bool, attempt int, err error) error {
	m.emit(Event{Type: EventError, Stream: stream, Attempt: attempt, Err: err})
	return err
}

func (m *ChatModel) emit(ev Event) {
	if m.cfg.OnEvent != nil {
		m.cfg.OnEvent(ev)
	}
}

func requestEvent(t EventType, stream bool, attempt int, send []*schema.Message, res history.Result) Event {
	return Event{Type: t, Stream: stream, Attempt: attempt, Messages: len(send),
		Tokens: res.TokensAfter, Budget: res.Budget, Trimmed: res.Trimmed || attempt > 0}
}

// promptTokens returns the provider's count of the request's input that
// msg reports, or 0.
func promptTokens(msg *schema.Message) int {
	if msg == nil || msg.ResponseMeta == nil || msg.ResponseMeta.Usage == nil {
		return 0
	}
	return msg.ResponseMeta.Usage.PromptTokens
}
