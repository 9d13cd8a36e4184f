package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/pins"
	"github.com/tmc/langchaingo/llms"
)

// MaxRetries is how many times a Model retries a request that the provider
// rejected for its length, each time after RecoverOverflow trimmed it
// further.
const MaxRetries = 2

// ErrStillTooLong is wrapped, together with the provider's own error, by
// the error a Model returns when the provider rejected a request as too
// long MaxRetries+1 times.
var ErrStillTooLong = errors.New("history/langchaingo: request still too long after retries")

// Config configures a Model. Budget or Model is required; the zero value
// of every other field means "none".
type Config struct {
	// Budget, when positive, is the input-token budget of every request:
	// what its messages and tools may take (the model's window less the
	// reply's reserve; history.Budget derives it). With a Calibration it
	// is in the provider's tokens. Zero: the door, the budget of the model
	// Model (or the call's llms.WithModel) names. A negative Budget, or
	// zero with no model named, makes every call fail with
	// history.ErrInvalidBudget.
	Budget int
	// Model names the model the wrapped llms.Model calls ("gpt-4.1",
	// "claude-sonnet-4-5"), for the door when Budget is 0; a call's
	// llms.WithModel names another for that call. The budget of each call
	// is then the model's window from the models table less the output
	// the call asks room for (llms.WithMaxTokens, else the model's output
	// limit), less history.MarginShare of the window until the
	// Calibration has observed a response (the Model owns one per model
	// when Calibration is nil); the Counter, when nil, is the model's (the
	// exact one when its tokenizer is public). The trims take the default
	// policy's options (fit.Policy) before Options: the task preset, and
	// under Stateful the cache policy too (the low-water mark, and the
	// model's cache retention for a cold resume; a stateless trim of the
	// whole transcript moves its cut at every request, where the mark
	// would cost context without saving a rewrite). After an overflow,
	// every later budget for the model stays below what the provider
	// said. A name the table does not know makes the call fail with the
	// error of models.Lookup (wrapping models.ErrUnknownModel): a budget
	// is never guessed.
	Model string
	// Options are the trim's options: history.WithElision,
	// history.WithStepTrim, history.WithLowWater, history.WithOnTrim,
	// history.WithLabels, history.WithPin (indices into the messages of
	// each call), ... The Model adds history.WithOverhead from the fields
	// below, and history.WithCounter and history.WithCalibration when
	// those fields are set, which replace any given here (a nil field
	// leaves one given here alone). Under the door they come after the
	// door's own (see Model), which they override.
	Options []history.Option
	// Counter counts the messages and the tools; nil means
	// history.Heuristic(), or the model's counter under the door.
	Counter history.Counter
	// Calibration, when set, observes every accepted request (the
	// Counter's count of what was sent against the prompt tokens the
	// response reports, see PromptTokens), makes every trim aim at the
	// budget the provider counts, and records the sizes an overflow error
	// states. Use one per model; it may be shared by several Models and
	// goroutines.
	Calibration *history.Calibration
	// Overhead is what every request sends besides its messages and the
	// tools of its call options, in the Counter's units: a response schema
	// set on the provider client (openai.WithResponseFormat), a system
	// instruction the provider adds. It must not be negative (the trim
	// would reject it with a *history.OptionError).
	Overhead int
	// Stateful makes the Model trim with a Trimmer (see NewTrimmer) for
	// the conversation it serves: the messages of every call are the
	// conversation's whole transcript, which only grows, and between
	// maintenance points the prompt only grows at its end, so the
	// provider's prompt cache survives (docs/prompt-caching.md); an
	// overflow is recovered with the Trimmer's RecoverOverflow, after
	// which its plans fit what the provider said. Use one Model per
	// conversation. Under the door it keeps one Trimmer per model the
	// calls name (llms.WithModel, else Model), made with that model's
	// counter, Calibration and options, so calls that alternate models
	// each trim as their own model's; history.WithPin in Options indexes
	// the transcript.
	Stateful bool
	// OnEvent, when set, receives one Event for every request sent to the
	// wrapped model, synchronously, after the Calibration observed it.
	OnEvent func(Event)
}

// Event describes one request a Model sent to the model it wraps.
type Event struct {
	// Attempt is 0 for the first request of a GenerateContent call, and
	// 1 to MaxRetries for the retries after the provider rejected the
	// previous request for its length.
	Attempt int
	// Messages is the number of messages sent.
	Messages int
	// Result is the trim whose output was sent: Trim's for attempt 0,
	// RecoverOverflow's after. Result.TokensAfter is the request as the
	// Counter counts it, tools and Config.Overhead included;
	// Result.Budget is the budget the trim aimed at (calibrated);
	// Result.Dropped holds what was left out, for archiving.
	Result history.Result
	// TrimErr is the *history.BudgetError (wrapping
	// history.ErrLatestTurnTooLarge) of a trim whose smallest history
	// still exceeds the budget: the request was sent anyway, and the
	// provider decided. Nil otherwise.
	TrimErr error
	// PromptTokens is the provider's count of the request's input, as
	// PromptTokens reads it from the response; 0 when the request was
	// rejected or the provider reported none.
	PromptTokens int
	// Overflow reports that the provider rejected the request because
	// its input does not fit the context window
	// (history.IsContextOverflow).
	Overflow bool
	// Err is the provider's error; nil when it accepted the request.
	Err error
}

// Model is an llms.Model that trims the messages of every GenerateContent
// call to a budget before passing them to the model it wraps, and
// recovers when the provider rejects a request for its length anyway:
//
//  1. It trims the messages with Trim to Config.Budget, or to the budget
//     of the model Config.Model (or the call's llms.WithModel) names,
//     counting the
//     call's tools (llms.WithTools, and the deprecated llms.WithFunctions)
//     with Overhead and adding Config.Overhead, calibrated by
//     Config.Calibration.
//  2. It sends the trimmed messages, with the call's options unchanged.
//  3. When the provider accepts, it feeds the prompt tokens the response
//     reports (PromptTokens) and the trim's Result.TokensAfter to the
//     Calibration, and returns the response.
//  4. When the provider rejects the request as a context overflow
//     (IsContextOverflow), it trims the messages it sent with
//     RecoverOverflow and sends them again, at most MaxRetries times.
//
// Every request is reported to Config.OnEvent. The caller's messages are
// never modified, and kept messages are sent as the caller's values (see
// Trim), so what the caller put in them reaches the provider.
//
// Errors: an error of the trim other than history.ErrLatestTurnTooLarge
// (invalid messages, budget or options), or a model name the models table
// does not know (wrapping models.ErrUnknownModel), is returned before
// anything is sent. A provider error that is not an overflow is returned as it is.
// When the request is still rejected after MaxRetries retries, an error
// wrapping ErrStillTooLong and the last provider error (errors.Is and
// errors.As see both);
// when RecoverOverflow finds nothing left to drop, its
// *history.RecoverError, which wraps the provider error.
//
// A Model is safe for concurrent use when the wrapped model, the Counter,
// the trim's callbacks and OnEvent are.
type Model struct {
	inner llms.Model
	cfg   Config
	state *adapt.Conversation[struct{}, llms.MessageContent] // the conversation's Trimmer under Config.Stateful
	// cals and limits are the door's (Budget 0): a Calibration per model,
	// when Config.Calibration is nil, and what the provider's refusals
	// said.
	cals   adapt.Calibrations
	limits adapt.Limits
}

var (
	_ llms.Model          = (*Model)(nil)
	_ llms.ReasoningModel = (*Model)(nil)
)

// NewModel returns a Model that trims every request to inner as cfg says.
// cfg.Options is copied.
func NewModel(inner llms.Model, cfg Config) *Model {
	cfg.Options = slices.Clone(cfg.Options)
	m := &Model{inner: inner, cfg: cfg}
	if cfg.Stateful {
		m.state = &adapt.Conversation[struct{}, llms.MessageContent]{}
	}
	return m
}

// GenerateContent trims msgs, sends them to the wrapped model with
// options, and retries after a context overflow, as the Model
// documentation describes. It never modifies msgs.
func (m *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	var call llms.CallOptions
	for _, o := range options {
		if o != nil {
			o(&call)
		}
	}
	budget, counter, cal, name, err := m.budget(call)
	if err != nil {
		return nil, err
	}
	overhead := Overhead(callTools(call), counter)
	if m.cfg.Overhead > 0 {
		overhead = satAdd(overhead, m.cfg.Overhead)
	} else if m.cfg.Overhead < 0 {
		overhead = m.cfg.Overhead // the trim reports it
	}
	opts := slices.Clip(m.cfg.Options)
	if name != "" { // the door's options come first: the caller's override them
		door, err := adapt.DoorOptions(name, m.state != nil)
		if err != nil {
			return nil, fmt.Errorf("history/langchaingo: %w", err)
		}
		opts = append(door, opts...)
	}
	opts = append(opts, history.WithOverhead(overhead))
	// Only when set, so that a nil field leaves the Options' own alone, as
	// in eino's ChatModel.
	if counter != nil {
		opts = append(opts, history.WithCounter(counter))
	}
	if cal != nil {
		opts = append(opts, history.WithCalibration(cal))
	}
	pinned := pins.Read(opts)
	var tr *Trimmer
	if m.state != nil {
		tr, pinned = &Trimmer{t: m.state.Trimmer(codec, struct{}{}, name, overhead, opts)}, nil // its pins index the transcript
	}
	send, res, from, err := m.trim(tr, msgs, budget, opts)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err
	}
	trimErr := err
	for attempt := 0; ; attempt++ {
		resp, err := m.inner.GenerateContent(ctx, send, options...)
		ev := Event{Attempt: attempt, Messages: len(send), Result: res, TrimErr: trimErr, Err: err}
		if err == nil {
			ev.PromptTokens = PromptTokens(resp)
			if cal != nil && ev.PromptTokens > 0 {
				cal.Observe(res.TokensAfter, ev.PromptTokens)
			}
			m.emit(ev)
			return resp, nil
		}
		ev.Overflow = IsContextOverflow(err)
		m.emit(ev)
		if !ev.Overflow {
			return nil, err
		}
		if attempt == MaxRetries {
			return nil, fmt.Errorf("%w (%d): %w", ErrStillTooLong, MaxRetries, err)
		}
		ropts := opts
		if pinned != nil { // the caller's pins, where they are in what was sent
			ropts = append(slices.Clip(opts), history.WithPin(adapt.Follow(from, pinned)...))
		}
		var next []int
		perr := err
		if tr != nil {
			send, res, err = tr.RecoverOverflow(msgs, err, attempt+1)
		} else {
			send, res, next, err = codec.Recover(struct{}{}, send, err, attempt+1, ropts)
		}
		if err != nil {
			return nil, err
		}
		// The door's: later budgets for the model stay below what the
		// provider said (a stateful Model's Trimmer keeps that itself: the
		// two would count it twice).
		if name != "" && tr == nil {
			m.limits.Learn(name, perr, budget, res.Budget, cal)
		}
		trimErr, from = nil, adapt.Compose(from, next)
	}
}

// trim trims msgs for a request: with tr, the conversation's Trimmer,
// when there is one, else with Trim and opts. from says where each
// message sent comes from in msgs (nil with tr).
func (m *Model) trim(tr *Trimmer, msgs []llms.MessageContent, budget int, opts []history.Option) ([]llms.MessageContent, history.Result, []int, error) {
	if tr != nil {
		send, res, err := tr.Trim(msgs, budget)
		return send, res, nil, err
	}
	return codec.Decide(struct{}{}, msgs, budget, opts, func(conv []history.Message, opts []history.Option) (history.Result, error) {
		return history.TrimToRecentTurns(conv, budget, opts...)
	})
}

// budget returns the budget of a call with options call, the Counter and
// Calibration its trim uses (nil: none set) and the model it is for under
// the door ("" otherwise): Config.Budget when not zero or without a model
// (the trim then reports an invalid budget), else the door's for the
// model the call or Config.Model names.
func (m *Model) budget(call llms.CallOptions) (int, history.Counter, *history.Calibration, string, error) {
	name := m.cfg.Model
	if call.Model != "" {
		name = call.Model
	}
	if m.cfg.Budget != 0 || name == "" {
		return m.cfg.Budget, m.cfg.Counter, m.cfg.Calibration, "", nil
	}
	cal := m.cfg.Calibration
	if cal == nil {
		cal = m.cals.For(name)
	}
	budget, counter, err := adapt.ModelBudget(name, call.MaxTokens, cal)
	if err != nil {
		return 0, nil, nil, name, fmt.Errorf("history/langchaingo: %w", err)
	}
	if m.cfg.Counter != nil {
		counter = m.cfg.Counter
	}
	return m.limits.Bound(name, budget), counter, cal, name, nil
}

// Call sends prompt as a single human message through GenerateContent and
// returns the text of the first choice, as llms.GenerateFromSinglePrompt
// does.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// SupportsReasoning reports whether the wrapped model is an
// llms.ReasoningModel that supports reasoning.
func (m *Model) SupportsReasoning() bool {
	r, ok := m.inner.(llms.ReasoningModel)
	return ok && r.SupportsReasoning()
}

func (m *Model) emit(ev Event) {
	if m.cfg.OnEvent != nil {
		m.cfg.OnEvent(ev)
	}
}

// callTools returns the tools a call sends: its llms.WithTools, then its
// deprecated llms.WithFunctions as function tools.
func callTools(call llms.CallOptions) []llms.Tool {
	if len(call.Functions) == 0 {
		return call.Tools
	}
	tools := slices.Clip(call.Tools)
	for i := range call.Functions {
		tools = append(tools, llms.Tool{Type: "function", Function: &call.Functions[i]})
	}
	return tools
}

// PromptTokens returns the provider's count of a request's input tokens
// from the GenerationInfo of resp's first choice that reports one, or 0
// when none does (or resp is nil). It reads the keys LangChainGo's
// providers set (v0.1.14): "PromptTokens" (openai, googleai, ollama,
// maritaca; for googleai it includes cached tokens);
// "InputTokens" + "CacheCreationInputTokens" + "CacheReadInputTokens"
// (anthropic, whose input tokens exclude the cached ones); "input_tokens"
// (bedrock). Values of any integer or floating-point type are read;
// negative ones count as 0. It is the reported figure
// history.Calibration.Observe takes.
func PromptTokens(resp *llms.ContentResponse) int {
	if resp == nil {
		return 0
	}
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		if n := promptTokens(c.GenerationInfo); n > 0 {
			return n
		}
	}
	return 0
}

func promptTokens(info map[string]any) int {
	if n, ok := number(info["PromptTokens"]); ok {
		return n
	}
	if n, ok := number(info["InputTokens"]); ok {
		c, _ := number(info["CacheCreationInputTokens"])
		r, _ := number(info["CacheReadInputTokens"])
		return satAdd(satAdd(n, c), r)
	}
	n, _ := number(info["input_tokens"])
	return n
}

// number reads v as a token count: any integer or float type, or a
// json.Number; false when v is none of these. Negative values read as 0,
// huge ones as math.MaxInt.
func number(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case int:
		return max(x, 0), true
	case int32:
		return max(int(x), 0), true
	case int64:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float32:
		f = float64(x)
	case float64:
		f = x
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = g
	default:
		return 0, false
	}
	switch {
	case !(f > 0): // negative or NaN
		return 0, true
	case f >= math.MaxInt:
		return math.MaxInt, true
	}
	return int(f), true
}

func satAdd(a, b int) int {
	if b > 0 && a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
