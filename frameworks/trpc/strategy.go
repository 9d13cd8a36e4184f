package trpc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// Config configures a Strategy.
type Config struct {
	// Model, when set, names the model the Strategy trims for, looked up
	// in the models table (models.Lookup), in place of the name of the
	// model Wrap wraps (its Info().Name), which the door reads otherwise.
	// The door (a name the table knows, from Model or from Wrap) gives
	// the Strategy what naming the model gives an adapter: every budget
	// trpc-agent-go passes is bounded by the model's window less the
	// output room (the request's MaxTokens, else the model's output
	// limit), less history.MarginShare of the window until the
	// Calibration has observed a response; the model's counter (the exact
	// one when its tokenizer is public) when Counter is nil; a
	// Calibration per model, which the Strategy owns, when Calibration is
	// nil; and the default policy's task preset before Options (fit.Policy
	// without its low-water mark: each request is trimmed afresh from the
	// whole history, where the mark would cost context without saving a
	// cache rewrite). A Model the table does not know fails every request
	// (Wrap returns the error of models.Lookup, wrapping
	// models.ErrUnknownModel, before anything is sent; TailorMessages
	// returns it with the messages unchanged): a budget is never guessed.
	// A wrapped model's name the table does not know leaves the Strategy
	// as the other fields configure it, trimming to trpc-agent-go's
	// budget.
	Model string
	// Counter counts a message's tokens for the trim and for the
	// TokenCounter the Strategy gives trpc-agent-go (Strategy.Counter);
	// nil means the door's model's counter, else history.Heuristic().
	// Wrap it in history.NewCache so that re-trimming a growing history
	// counts only the new messages.
	Counter history.Counter
	// Calibration, when set, learns the provider's count from the usage
	// of every response and from every overflow (through Wrap), and every
	// trim aims at the budget the provider counts. Use one per model.
	// nil under the door: a Calibration per model, the Strategy's own.
	Calibration *history.Calibration
	// Elision, when set, replaces old tool results by placeholders
	// before whole turns go (history.WithElision with these options).
	Elision *history.ElideOptions
	// StepTrim drops the oldest steps of the latest turn when it alone
	// does not fit (history.WithStepTrim).
	StepTrim bool
	// OnTrim, when set, receives one event per trim that dropped or
	// elided something, with the figures of the whole history, but that
	// TokensBefore is -1 (the dropped part is not counted) and that the
	// messages before the part read count as DroppedMessages even where
	// the orphan sweep would have removed them.
	OnTrim func(history.Event)
	// OnObserve, when set, is called by a model wrapped with Wrap after
	// each response it observed into Calibration: the trim's count of
	// what was sent, the provider's count (usage.PromptTokens) and the
	// verdict. It must be safe for concurrent use.
	OnObserve func(sent, reported int, v history.Verdict)
	// Options are more trim options, such as history.WithLowWater,
	// history.WithLabels or history.WithBreadcrumb. Set elision, step
	// trimming, the counter, the calibration and the event callback with
	// the fields above: the Strategy reads only the end of a long history
	// (see TailorMessages), and needs to know them to know how far to
	// read. history.WithPin and history.WithTurnStart are not supported
	// (trpc-agent-go gives the strategy no stable indices, and the
	// Strategy's turns start at user messages, at those
	// history.UserWritten accepts under the door). Under the door, they
	// come after the door's options, which they override.
	Options []history.Option
}

// Strategy is a model.TailoringStrategy that trims with
// history.TrimToRecentTurns: whole turns go, oldest first, behind one
// notice; a tool call is never separated from its result; the system
// messages and the latest turn always stay. Set it on a trpc-agent-go
// model with its WithTailoringStrategy option, and its Counter with
// WithTokenCounter; wrap the model with Wrap to recover from overflows and
// calibrate, and to open the door with the model's name (see
// Config.Model). A Strategy is safe for concurrent use; its state is what
// the providers' refusals said and, under the door without
// Config.Calibration, a Calibration per model.
type Strategy struct {
	counter   history.Counter
	cal       *history.Calibration
	elision   *history.ElideOptions
	onTrim    func(history.Event)
	onObserve func(sent, reported int, v history.Verdict)
	opts      []history.Option
	// model, cfgCounter, cfgOpts and extra are the Config's, for the door:
	// Config.Model, Config.Counter, Config.Options and the options of
	// Elision and StepTrim.
	model      string
	cfgCounter history.Counter
	cfgOpts    []history.Option
	extra      []history.Option
	// cals are the door's Calibrations, one per model, when
	// Config.Calibration is nil.
	cals *adapt.Calibrations
	// limits are what the providers' refusals said, per model, as Wrap
	// learns them: every later budget for the model stays below them.
	limits adapt.Limits
}

// NewStrategy returns a Strategy with cfg.
func NewStrategy(cfg Config) *Strategy {
	c := cfg.Counter
	if c == nil && cfg.Model != "" {
		if _, mc, err := adapt.ModelBudget(cfg.Model, 0, nil); err == nil {
			c = mc // the door's: what trpc-agent-go counts the tools with
		}
	}
	if c == nil {
		c = history.Heuristic()
	}
	s := &Strategy{counter: c, cal: cfg.Calibration, onTrim: cfg.OnTrim, onObserve: cfg.OnObserve,
		model: cfg.Model, cfgCounter: cfg.Counter, cfgOpts: slices.Clip(slices.Clone(cfg.Options))}
	if cfg.Calibration == nil {
		s.cals = new(adapt.Calibrations)
	}
	if cfg.Elision != nil {
		e := *cfg.Elision
		s.elision = &e
		s.extra = append(s.extra, history.WithElision(e))
	}
	if cfg.StepTrim {
		s.extra = append(s.extra, history.WithStepTrim())
	}
	opts := append([]history.Option{history.WithCounter(c)}, s.cfgOpts...)
	if cfg.Calibration != nil {
		opts = append(opts, history.WithCalibration(cfg.Calibration))
	}
	s.opts = slices.Clip(append(opts, s.extra...))
	return s
}

// call is what one request is trimmed with: the Strategy's Config, or
// the door's for the model the request goes to.
type call struct {
	model   string // the name the limits are kept under ("": none)
	door    bool   // the door's: budget bounds trpc-agent-go's
	budget  int
	counter history.Counter
	cal     *history.Calibration
	elision *history.ElideOptions // for the lower bounds of window
	// turnStart is the rule that opens turns (nil: user messages).
	turnStart func(history.Message) bool
	opts      []history.Option
}

// doorElision is what the lower bounds of window assume under the door:
// tool results emptied and call arguments cleared, below whatever the
// task preset (or Config.Elision after it) leaves of them.
var doorElision = &history.ElideOptions{ClearArguments: 1}

// plan returns what a request to the model named (the wrapped model's
// name, "" without Wrap) asking output tokens of room (zero or less: the
// model's limit) is trimmed with: the door's when Config.Model or name is
// in the models table, else the Config's. Only a Config.Model the table
// does not know is an error.
func (s *Strategy) plan(name string, output int) (call, error) {
	if s.model != "" {
		name = s.model
	}
	plain := call{model: name, counter: s.counter, cal: s.cal, elision: s.elision, opts: s.opts}
	if name == "" {
		return plain, nil
	}
	door, err := adapt.DoorOptions(name, false)
	if err != nil {
		if s.model != "" {
			return call{}, fmt.Errorf("history/trpc: %w", err)
		}
		return plain, nil // trpc-agent-go's budget, as configured
	}
	cal := s.cal
	if cal == nil {
		cal = s.cals.For(name)
	}
	budget, counter, err := adapt.ModelBudget(name, output, cal)
	if err != nil {
		return call{}, fmt.Errorf("history/trpc: %w", err)
	}
	if s.cfgCounter != nil {
		counter = s.cfgCounter
	}
	opts := make([]history.Option, 0, len(door)+3+len(s.cfgOpts)+len(s.extra))
	opts = append(append(append(opts, door...), history.WithCounter(counter)), s.cfgOpts...)
	opts = append(append(opts, history.WithCalibration(cal)), s.extra...)
	c := call{model: name, door: true, budget: budget, counter: counter, cal: cal,
		elision: doorElision, turnStart: history.UserWritten, opts: opts}
	if s.elision != nil {
		c.elision = s.elision // Config.Elision replaces the preset's
	}
	return c, nil
}

// Counter returns the model.TokenCounter that counts as the Strategy
// does, for trpc-agent-go's WithTokenCounter (which also counts the tools
// with it and takes them out of the budget it passes to TailorMessages).
func (s *Strategy) Counter() *Counter { return &Counter{c: s.counter, door: true} }

// TailorMessages returns messages trimmed to maxTokens, trpc-agent-go's
// input budget for the request's messages: the caller's own messages
// where they are kept, in order, with a user message holding the notice
// (history.BreadcrumbText) where turns were dropped. A message the trim
// changed (a tool result Elision elided, an assistant message whose
// unanswered calls the orphan sweep stripped) is a copy; the caller's
// messages are never modified. When messages fit, or there are none, they
// come back as they are.
//
// It reads a long history from its end: the leading system messages, the
// latest turn whole, and the messages before it back to the first at
// which they cost more than the trim can keep, by a lower bound of each
// message's count (one that knows what the orphan sweep removes and, with
// Elision, counts a tool result as if emptied). Nothing older could be
// kept, so the decision is the one history.TrimToRecentTurns takes on the
// whole history, and a trim of a 40,000-message history to a model's
// window converts and counts what it keeps and little more.
//
// Called through a model wrapped by Wrap, the trim also counts the
// request's tools (as overhead, so the budget is maxTokens plus them: the
// tools trpc-agent-go took out) and reports its Result for the
// calibration. Errors: a *MessageError for a message that does not
// convert, the core's error for an invalid budget or option (messages
// then come back unchanged), and a *history.BudgetError when the latest
// turn alone exceeds the budget, with the smallest history that keeps it,
// which trpc-agent-go sends as its best effort.
func (s *Strategy) TailorMessages(ctx context.Context, messages []model.Message, maxTokens int) ([]model.Message, error) {
	if len(messages) == 0 {
		return messages, nil // nothing to tailor
	}
	sl, _ := ctx.Value(slotKey{}).(*slot)
	var c call
	if sl != nil {
		c = sl.call
	} else {
		var err error
		if c, err = s.plan("", 0); err != nil {
			return messages, err
		}
	}
	opts, budget := c.opts, maxTokens
	if sl != nil && sl.overhead > 0 {
		opts = append(opts[:len(opts):len(opts)], history.WithOverhead(sl.overhead))
		budget = saturatingAdd(maxTokens, sl.overhead)
	}
	if c.door {
		budget = min(budget, c.budget)
	}
	if c.model != "" {
		budget = s.limits.Bound(c.model, budget)
	}
	if sl != nil {
		sl.setBudget(budget)
	}
	var event *history.Event // the trim's, reported once the decision stands
	if s.onTrim != nil {
		opts = append(opts[:len(opts):len(opts)], history.WithOnTrim(func(e history.Event) { event = &e }))
	}
	hist, p, w, err := s.window(&c, messages, budget, opts, false)
	if err != nil {
		return messages, err
	}
	res, err := history.TrimToRecentTurns(hist, budget, opts...)
	if w > p && slices.Contains(res.Kept, p) {
		// The trim kept the stand-in for messages[p:w]: Config.Options
		// count otherwise than the Strategy reads (a counter, elision or
		// overhead given there), so the read stopped too early. Decide on
		// the whole history.
		event = nil
		if hist, p, w, err = s.window(&c, messages, budget, opts, true); err != nil {
			return messages, err
		}
		res, err = history.TrimToRecentTurns(hist, budget, opts...)
	}
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return messages, err
	}
	if event != nil {
		e := *event
		if w > p { // the trim dropped the stand-in for messages[p:w]
			e.DroppedTurns += c.turnStarts(messages[p:w]) - 1
			e.DroppedMessages += w - p - 1
			e.TokensBefore = -1
		}
		s.onTrim(e)
	}
	if sl != nil {
		sl.set(res)
	}
	return applyWindow(messages, res, p, w), err
}

// window converts what the trim needs to read of msgs: msgs[:p], the
// leading system messages, and msgs[w:] (w >= p), in that order, with the
// notices a trim with opts inserts marked, and between them, when w > p,
// a stand-in for the turns of msgs[p:w]. w is the latest message, before
// the latest turn's start, from which the messages, by the lower bounds of
// their counts, cost more than the largest budget the trim can aim at
// (budget, or the calibrated budget when it is larger) together with the
// system messages; p when there is none, or when all is set.
func (s *Strategy) window(c *call, msgs []model.Message, budget int, opts []history.Option, all bool) (hist []history.Message, p, w int, err error) {
	for p < len(msgs) && msgs[p].Role == model.RoleSystem {
		p++
	}
	limit := budget
	if c.cal != nil {
		limit = max(limit, c.cal.Budget(budget))
	}
	turn, _, on := history.Breadcrumbs(opts...)
	dturn, _, _ := history.Breadcrumbs()
	var cv converter
	var blocks [][]history.Message // the messages read from the end, newest first
	b := bounds{c: c}
	for i := range p {
		h, err := cv.message(&msgs[i])
		if err != nil {
			return nil, 0, 0, invalid(i, err)
		}
		b.sum = saturatingAdd(b.sum, max(c.counter.CountMessage(h), 0))
	}
	w = p
	started := false // a turn start was read: the latest turn is whole
	for i := len(msgs) - 1; i >= p; i-- {
		h, err := cv.message(&msgs[i])
		if err != nil {
			return nil, 0, 0, invalid(i, err)
		}
		if len(blocks) == 0 || len(blocks[len(blocks)-1]) == cap(blocks[len(blocks)-1]) {
			blocks = append(blocks, make([]history.Message, 0, min(minBlock<<min(len(blocks), 6), i-p+1)))
		}
		blocks[len(blocks)-1] = append(blocks[len(blocks)-1], h)
		b.add(&h)
		notice := len(h.Parts) == 0 && (h.Content == dturn.Content || on && h.Content == turn.Content)
		started = started || h.Role == history.RoleUser && !notice && (c.turnStart == nil || c.turnStart(h))
		if !all && started && b.sum > limit {
			w = i
			break
		}
	}
	// A cut inside msgs[p:w] with no turn start in it would not be the
	// cut of the whole history: read it all.
	if w > p && !c.hasTurnStart(msgs[p:w]) {
		return s.window(c, msgs, budget, opts, true)
	}
	// The system messages again (converted once more: they are few), a
	// stand-in for the turns before w when there are any, then the
	// messages read, oldest first. The stand-in is one short user message
	// that opens a turn holding what is left of the turn w falls in (w
	// need not be a turn start): a turn the trim must drop, since
	// everything from w on costs more than it can keep, and whose drop
	// makes it insert the notice, as the trim of the whole history does.
	// applyWindow never maps it back.
	hist = make([]history.Message, p, p+1+len(msgs)-w)
	for i := range p {
		hist[i], _ = cv.message(&msgs[i])
	}
	if w > p {
		hist = append(hist, history.Message{Role: history.RoleUser, Content: "."})
	}
	for b := len(blocks) - 1; b >= 0; b-- {
		for k := len(blocks[b]) - 1; k >= 0; k-- {
			hist = append(hist, blocks[b][k])
		}
	}
	markNotices(hist, opts)
	return hist, p, w, nil
}

// bounds sums lower bounds of what a trim counts of the messages it is
// given newest first, as the orphan sweep leaves them: a tool result
// counts once the assistant message before its run of results is read,
// and only when it answers one of its calls (the sweep removes the
// others); an assistant message counts without the calls no result
// answers (the sweep strips them), and nothing when that leaves it empty.
type bounds struct {
	c   *call
	run []result // the results read since the last other message
	sum int
}

type result struct {
	id   string
	cost int
	used bool
}

func (b *bounds) add(h *history.Message) {
	if h.Role == history.RoleTool {
		b.run = append(b.run, result{id: h.ToolCallID, cost: b.c.lowerBound(h)})
		return
	}
	e := *h
	if len(h.ToolCalls) > 0 {
		kept := 0
		for _, c := range h.ToolCalls {
			for r := range b.run {
				if !b.run[r].used && b.run[r].id == c.ID {
					b.run[r].used = true
					b.sum = saturatingAdd(b.sum, b.run[r].cost)
					kept++
					break
				}
			}
		}
		if kept < len(h.ToolCalls) {
			e.ToolCalls = make([]history.ToolCall, 0, kept)
			for _, c := range h.ToolCalls {
				for r := range b.run {
					if b.run[r].used && b.run[r].id == c.ID {
						e.ToolCalls = append(e.ToolCalls, c)
						break
					}
				}
			}
		}
	}
	b.run = b.run[:0]
	if len(h.ToolCalls) > 0 && len(e.ToolCalls) == 0 && e.Content == "" && len(e.Parts) == 0 {
		return
	}
	b.sum = saturatingAdd(b.sum, b.c.lowerBound(&e))
}

// lowerBound returns the least the trim can count h as: with elision, a
// tool result as if emptied (and, clearing arguments, a call's arguments
// as if empty); otherwise its count.
func (c *call) lowerBound(h *history.Message) int {
	if c.elision != nil {
		switch {
		case h.Role == history.RoleTool:
			return max(c.counter.CountMessage(history.Message{Role: history.RoleTool, ToolCallID: h.ToolCallID}), 0)
		case c.elision.ClearArguments > 0 && len(h.ToolCalls) > 0:
			e := *h
			e.ToolCalls = make([]history.ToolCall, len(h.ToolCalls))
			for k, tc := range h.ToolCalls {
				e.ToolCalls[k] = history.ToolCall{ID: tc.ID, Name: tc.Name}
			}
			return max(c.counter.CountMessage(e), 0)
		}
	}
	return max(c.counter.CountMessage(*h), 0)
}

// opens reports whether m opens a turn: a user message, that the call's
// rule accepts when it has one (one that does not convert does not).
func (c *call) opens(m *model.Message) bool {
	if m.Role != model.RoleUser {
		return false
	}
	if c.turnStart == nil {
		return true
	}
	var cv converter
	h, err := cv.message(m)
	return err == nil && c.turnStart(h)
}

// hasTurnStart reports whether msgs holds a message that opens a turn,
// reading from the end (where one usually is: the turn w falls in starts
// there).
func (c *call) hasTurnStart(msgs []model.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if c.opens(&msgs[i]) {
			return true
		}
	}
	return false
}

// turnStarts counts the messages of msgs that open turns: the turns a
// trim dropped with them.
func (c *call) turnStarts(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		if c.opens(&msgs[i]) {
			n++
		}
	}
	return n
}

func saturatingAdd(a, b int) int {
	if b > 0 && a > int(^uint(0)>>1)-b {
		return int(^uint(0) >> 1)
	}
	return a + b
}

// Counter is a model.TokenCounter that counts with a history.Counter,
// each message converted as the Strategy converts it. Get one from
// Strategy.Counter, or NewCounter. It is safe for concurrent use when its
// history.Counter is (those of this library are).
type Counter struct {
	c history.Counter
	// door: the Strategy's, which counts a request Wrap sends with the
	// counter its trim uses (the door's model's).
	door bool
}

// counter returns the counter of a count made with ctx.
func (c *Counter) counter(ctx context.Context) history.Counter {
	if c.door && ctx != nil {
		if sl, ok := ctx.Value(slotKey{}).(*slot); ok {
			return sl.call.counter
		}
	}
	return c.c
}

// NewCounter returns a Counter counting with c (nil: history.Heuristic()).
func NewCounter(c history.Counter) *Counter {
	if c == nil {
		c = history.Heuristic()
	}
	return &Counter{c: c}
}

// CountTokens returns the tokens of message.
func (c *Counter) CountTokens(ctx context.Context, message model.Message) (int, error) {
	h, err := convert([]model.Message{message}, nil)
	if err != nil {
		return 0, err
	}
	return max(c.counter(ctx).CountMessage(h[0]), 0), nil
}

// CountTokensRange returns the tokens of messages[start:end], saturating.
// An invalid range is an error, as trpc-agent-go's own counter reports it.
func (c *Counter) CountTokensRange(ctx context.Context, messages []model.Message, start, end int) (int, error) {
	if start < 0 || end > len(messages) || start >= end {
		return 0, errors.New("history/trpc: invalid range")
	}
	h, err := convert(messages[start:end], nil)
	if err != nil {
		return 0, err
	}
	total, cc := 0, c.counter(ctx)
	for i := range h {
		total = saturatingAdd(total, max(cc.CountMessage(h[i]), 0))
	}
	return total, nil
}
