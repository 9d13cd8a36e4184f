// This file owns the options of the trim entry points: every Option, the
// options value they fill, and the validation of option values. Options are
// read once, at the start of a call, into an options value that the planner
// and the entry points read; nothing below this file knows about options.

package history

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/histrim/history/internal/optset"
	"github.com/histrim/history/internal/pins"
	"github.com/histrim/history/internal/rules"
	"github.com/histrim/history/models"
)

// Option configures [TrimToRecentTurns], [Trimmer], [RecoverOverflow] and
// [Turns]. Options are immutable values: one built once may be shared by any
// number of goroutines and calls, and applying it never writes to anything
// but the call's own settings. An option whose value is invalid makes the
// call that uses it return an *[OptionError] wrapping [ErrInvalidOption]. A
// nil Option is ignored.
type Option func(*options)

// options is the settings of one call, filled from its Options.
type options struct {
	counter      Counter
	onTrim       func(Event)
	breadcrumb   Message
	stepCrumb    *Message
	noBreadcrumb bool
	turnStart    func(Message) bool
	labels       map[string]string
	noSweep      bool
	lowWater     float64 // 0: off
	trigger      float64 // 0: off (the budget itself)
	elide        *ElideOptions
	stepTrim     bool
	// looseReasoning: step trimming does not keep the reasoning that
	// opened the final tool loop (rules.LooseReasoning; Gemini and
	// Responses bind reasoning to its own step only).
	looseReasoning bool
	fullCount      bool
	calib          *Calibration
	overhead       int   // tokens the request spends besides the messages
	pins           []int // input indices never dropped, ascending, unique
	goal           int   // WithTask's goal, pinned with the pins when goalSet and >= 0
	goalSet        bool
	err            error // first invalid option

	// byMention (WithTask): a trim aiming below its budget drops first the
	// steps whose results no later message mentions (chooseSalient), and
	// elision takes old calls' arguments, then the results no later
	// message mentions, first (unmentioned).
	byMention bool

	// Read by a Trimmer only (WithColdAfter, WithClock, WithSummarizer,
	// WithPrices).
	coldAfter  time.Duration
	clock      func() time.Time
	summarizer *summarizer
	prices     *Prices
	model      *models.Model // WithModel: what Trimmer.Fit and Observe read
}

// optionsPool recycles option sets: options are applied through caller
// functions, which forces them onto the heap, and a trim before every
// request should not allocate for them.
var optionsPool = sync.Pool{New: func() any { return new(options) }}

// newOptions applies opts over the defaults. Call release when done.
func newOptions(opts []Option) *options {
	o := optionsPool.Get().(*options)
	*o = options{counter: heuristic{}, breadcrumb: Breadcrumb()}
	for _, f := range opts {
		if f != nil {
			f(o)
		}
	}
	o.settle()
	return o
}

// settle checks what the options mean together, once they are all
// applied: a trigger and a low-water mark.
func (o *options) settle() {
	if o.goalSet && o.goal >= 0 {
		if at, found := slices.BinarySearch(o.pins, o.goal); !found {
			o.pins = slices.Insert(slices.Clone(o.pins), at, o.goal) // the option's slice is shared
		}
	}
	if o.trigger == 0 || o.trigger == 1 { // off, or the budget itself
		return
	}
	switch {
	case o.lowWater == 0:
		// A trigger alone keeps its hysteresis: a trim past it goes down
		// to a mark below it, not just under it (else nearly every
		// request past the trigger would be a maintenance point).
		o.lowWater = o.trigger * DefaultLowWaterShare
	case o.lowWater >= o.trigger:
		o.fail(&OptionError{Option: "WithLowWater", Reason: "low-water mark " + strconv.FormatFloat(o.lowWater, 'g', -1, 64) +
			" is not below the trigger " + strconv.FormatFloat(o.trigger, 'g', -1, 64) +
			": both are shares of the budget, and a trim that starts past the trigger goes down to the mark"})
	}
}

// release returns o to the pool. o must not be used afterwards.
func (o *options) release() {
	*o = options{}
	optionsPool.Put(o)
}

// fail records err as the call's error unless an earlier option failed.
func (o *options) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// checked returns the Option that records err (fail) when it is not nil,
// and applies set otherwise: an option validated when it is made.
func checked(err error, set func(o *options)) Option {
	return func(o *options) {
		if err != nil {
			o.fail(err)
			return
		}
		set(o)
	}
}

// WithCounter sets the [Counter] that measures messages against the budget.
// The default, and what a nil c means, is [Heuristic]. For exact counts use
// [github.com/histrim/history/tiktoken]; wrap it with [NewCache] when
// trimming before every request. The trim calls c at most once per message,
// possibly from several goroutines when the option is shared.
func WithCounter(c Counter) Option {
	if c == nil {
		c = heuristic{}
	}
	return func(o *options) { o.counter = c }
}

// WithOnTrim registers f to receive one [Event], synchronously and before the
// trim returns, each time a trim drops or elides something. It is never
// called when nothing changed. The Event is a copy f may keep. A nil f
// removes the callback.
func WithOnTrim(f func(Event)) Option {
	return func(o *options) { o.onTrim = f }
}

// WithBreadcrumb replaces the default breadcrumb (for another language or
// wording, or another role). Its Kind is forced to [KindBreadcrumb]. It must
// be a valid [Message] whose role is user, system or assistant, with no tool
// calls and no tool call id; otherwise the call returns an *[OptionError]
// that wraps both [ErrInvalidOption] and a *[MessageError] with Index -1.
func WithBreadcrumb(m Message) Option {
	return withNotice("WithBreadcrumb", m, func(o *options, m Message) {
		o.breadcrumb = m
		o.noBreadcrumb = false
	})
}

// WithoutBreadcrumb turns the breadcrumbs off: dropped turns and steps
// leave no notice, and [Result.Kept] holds no -1. Breadcrumbs already in the
// input are then kept as they are.
func WithoutBreadcrumb() Option {
	return func(o *options) { o.noBreadcrumb = true }
}

// WithStepBreadcrumb replaces the notice [WithStepTrim] places after the
// latest turn's opening message (for another language or wording). Its
// Kind is forced to [KindBreadcrumb] and it must obey the rules of
// [WithBreadcrumb]. By default it is [StepBreadcrumbText] in the role of the
// turn breadcrumb.
func WithStepBreadcrumb(m Message) Option {
	return withNotice("WithStepBreadcrumb", m, func(o *options, m Message) { o.stepCrumb = &m })
}

// withNotice returns the Option that sets a breadcrumb m given through
// option: set receives m as notice makes it, and the option records
// notice's error, if any (fail).
func withNotice(option string, m Message, set func(o *options, m Message)) Option {
	m, err := notice(option, m)
	return func(o *options) {
		if err != nil {
			o.fail(err)
		}
		set(o, m)
	}
}

// notice returns the breadcrumb an option was given, as the option keeps it
// (a clone, so the caller's later edits cannot reach it, with Kind
// KindBreadcrumb), and the error the option reports when it is invalid.
func notice(option string, m Message) (Message, error) {
	m = m.Clone()
	m.Kind = KindBreadcrumb
	return m, checkNotice(option, &m)
}

// checkNotice validates a breadcrumb given through an option: a valid
// message in the user, system or assistant role, never part of a tool
// exchange.
func checkNotice(option string, b *Message) error {
	reason := checkMessage(b)
	switch {
	case reason != "":
	case b.Role != RoleUser && b.Role != RoleSystem && b.Role != RoleAssistant:
		reason = "breadcrumb role must be user, system or assistant, not " + quote(string(b.Role))
	case len(b.ToolCalls) > 0:
		reason = "breadcrumb must not carry tool calls"
	}
	if reason == "" {
		return nil
	}
	return &OptionError{Option: option, Reason: "invalid breadcrumb", Err: &MessageError{Index: -1, Reason: reason}}
}

// WithTurnStart replaces the rule that decides which messages open a turn
// (by default: every [RoleUser] message with an empty [Kind]). Use it when
// tool results reach the model as user text, e.g.
//
//	history.WithTurnStart(func(m history.Message) bool {
//		return m.Role == history.RoleUser && !strings.HasPrefix(m.Content, "[Tool results]")
//	})
//
// Whatever f says, tool results, breadcrumbs, nudges and summaries never open
// a turn, and the first message after the prefix always does. [Turns] takes
// the same option, so it reports the turns a trim works with. A nil f
// restores the default.
func WithTurnStart(f func(Message) bool) Option {
	return func(o *options) { o.turnStart = f }
}

// WithLabels attaches caller attribution (session_id, channel, agent,
// turn_id, ...) to every [Event]. The map is copied when the option is built
// and again for every event, so neither side can change the other's.
func WithLabels(labels map[string]string) Option {
	labels = maps.Clone(labels)
	return func(o *options) { o.labels = labels }
}

// WithoutOrphanSweep turns the orphan sweep ([SweepOrphans]) off. Use it
// only when the history is known to be well paired: trimming itself never
// breaks a pair, but it does not repair one the caller broke.
func WithoutOrphanSweep() Option {
	return func(o *options) { o.noSweep = true }
}

// WithElision makes a trim elide old tool results (see [ElideToolResults])
// before it drops anything: oldest results first, and only as many as needed
// to fit. Whole turns are dropped only when eliding every eligible result is
// not enough, and then results are elided only in the turns that are kept.
//
// The trim's [Counter] ([WithCounter]) measures the budget.
// [ElideOptions.Counter], when set, measures the results for the elision
// rules ([ElideOptions.MinTokens] and the token count in the default
// placeholder), as it does for [ElideToolResults]; when nil, the trim's
// Counter does both. An error from [ElideOptions.Archive] aborts the trim:
// it returns that error, wrapped, and a Result with no messages. Elided
// results stay in [Result.Messages] with [KindElided], and [Result.Kept]
// still names the originals.
//
// With [ElideOptions.ClearArguments], eliding a result also clears the
// arguments of the call it answers; the trim counts that saving with the
// result's, so it elides fewer results to reach the same size. A negative
// ClearArguments makes the call return an *[OptionError].
func WithElision(opts ElideOptions) Option {
	opts.ExcludeTools = slices.Clone(opts.ExcludeTools)
	opts.Tools = slices.Clone(opts.Tools)
	err := opts.check("WithElision")
	return func(o *options) {
		if err != nil {
			o.fail(err)
			return
		}
		o.elide = &opts
	}
}

// WithStepTrim lets a trim cut inside the latest turn when that turn alone
// does not fit: the turn's opening user message (the task) is kept, its
// oldest steps are dropped and the newest kept. A step is one assistant
// message with every tool result that answers it (and any nudge between
// them), dropped or kept whole, so no call is ever separated from its
// result. A breadcrumb ([StepBreadcrumbText]) goes right after the opening
// message; the newest step is always kept. When the turn's first step holds
// reasoning (a [PartReasoning] part on its assistant message), it is kept
// too and the steps after it are dropped: providers bind the thinking that
// opened a tool loop to the loop (Anthropic rejects a final assistant turn
// whose first message does not start with its thinking block; see
// docs/providers.md). Its tool results may still be elided. A nudge
// ([KindNudge], such as text beside tool results) opens a new tool loop
// the same way: when that loop's first step holds reasoning, the first
// step kept after the dropped ones holds reasoning too, or only the steps
// before that loop are dropped.
func WithStepTrim() Option {
	return func(o *options) { o.stepTrim = true }
}

// WithFullCount makes a trim count every message, also those it drops, so
// that [Result.TokensBefore] and [Event.TokensBefore] are always known. By
// default a trim counts newest first and stops as soon as it knows what to
// keep, so its cost follows what it keeps, not the length of the history;
// TokensBefore is then -1 whenever the dropped part was not counted. With a
// [NewCache] counter, counting the dropped part is cheap for messages
// counted before.
func WithFullCount() Option {
	return func(o *options) { o.fullCount = true }
}

// WithCalibration makes [TrimToRecentTurns], [Trimmer.Trim] and
// [RecoverOverflow] trim to c.Budget(budget) (see [Calibration.Budget]), so
// that the provider's count of the request, not the Counter's, lands at or
// under the budget; [Result.Budget] is then the calibrated budget.
// RecoverOverflow also records in c the sizes an overflow error states (the
// Counter's count of what was sent against the provider's). A nil c turns
// calibration off.
func WithCalibration(c *Calibration) Option {
	return func(o *options) { o.calib = c }
}

// WithOverhead counts tokens that the request spends besides the messages,
// in the Counter's units: tool definitions, a system instruction or
// response schema sent outside the messages, per-request framing. A trim
// fits the messages into the budget less tokens, and reports the whole
// request: [Result.TokensBefore], [Result.TokensAfter], the [Event] and a
// [BudgetError] include tokens, so that TokensAfter is what to pass to
// [Calibration.Observe] and the calibration does not learn (and subtract)
// the same overhead a second time. Adapters compute it from their SDK's
// request (for example the tool definitions); tokens must be >= 0,
// otherwise the call returns an *[OptionError]. The default is 0.
func WithOverhead(tokens int) Option {
	var err error
	if tokens < 0 {
		err = &OptionError{Option: "WithOverhead", Reason: "tokens " + strconv.Itoa(tokens) + " is negative"}
	}
	return func(o *options) {
		if err != nil {
			o.fail(err)
			return
		}
		o.overhead = tokens
	}
}

// WithPin pins the messages at the given indices of the history being
// trimmed: they are never dropped or elided, whatever the budget. A pinned
// message in a turn (or a step) that is dropped is kept, in order, right
// after the prefix (the leading system messages and the hoisted summary)
// and its breadcrumb, so that the notice stays in the leading block where
// a later trim of the output recognises it; a pinned message in a kept
// turn stays where it is. [Result.Positions] finds the pinned messages in
// the output, to pin them again when the output is trimmed later. Use it for what the
// caller inserted and must survive: a memory, a plan, instructions given
// mid-conversation. Pinned messages count against the budget first; when
// they and the latest turn cannot fit, the trim returns a *[BudgetError].
//
// A pinned message must not be a tool result or carry tool calls (it would
// be separated from its pair); a trim given such an index, or one outside
// the history, returns an *[OptionError]. Indices refer to the slice passed
// to the call ([TrimToRecentTurns], [Trimmer.Trim], [RecoverOverflow]);
// adapters take indices into the caller's native slice. Duplicates are
// ignored; a later WithPin replaces an earlier one; no index unpins.
func WithPin(indices ...int) Option {
	pins := slices.Clone(indices)
	slices.Sort(pins)
	pins = slices.Compact(pins)
	var err error
	if len(pins) > 0 && pins[0] < 0 {
		err = &OptionError{Option: "WithPin", Reason: "index " + strconv.Itoa(pins[0]) + " is negative"}
	}
	return func(o *options) {
		if err != nil {
			o.fail(err)
			return
		}
		o.pins = pins
	}
}

// stepBreadcrumb returns the notice placed after the latest turn's opening
// message.
func (o *options) stepBreadcrumb() Message {
	if o.stepCrumb != nil {
		return *o.stepCrumb
	}
	return Message{Role: o.breadcrumb.Role, Content: StepBreadcrumbText, Kind: KindBreadcrumb}
}

// Breadcrumbs returns the notices a trim with opts would insert: turn after
// the prefix when turns are dropped ([WithBreadcrumb], or [Breadcrumb]), and
// step after the latest turn's opening message when steps are dropped
// ([WithStepBreadcrumb], or [StepBreadcrumbText] in the turn notice's role).
// enabled is false under [WithoutBreadcrumb]. Adapters use it to recognise,
// in a native history they trimmed before, the notices they inserted, so
// that the next trim replaces them instead of keeping them as turns. Invalid
// options are reported by the trim that uses them, not here.
func Breadcrumbs(opts ...Option) (turn, step Message, enabled bool) {
	o := newOptions(opts)
	defer o.release()
	return o.breadcrumb, o.stepBreadcrumb(), !o.noBreadcrumb
}

func init() {
	optset.Resolve = func(opts any) any {
		o := newOptions(opts.([]Option))
		snap := *o
		o.release()
		return Option(func(dst *options) { *dst = snap })
	}
	rules.LooseReasoning = func() any {
		return Option(func(o *options) { o.looseReasoning = true })
	}
	pins.Read = func(opts any) []int {
		o := newOptions(opts.([]Option))
		defer o.release()
		return slices.Clone(o.pins)
	}
}
