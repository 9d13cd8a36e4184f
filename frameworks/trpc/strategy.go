package trpc

import (
	"context"
	"errors"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// Config configures a Strategy.
type Config struct {
	// Counter counts a message's tokens for the trim and for the
	// TokenCounter the Strategy gives trpc-agent-go (Strategy.Counter);
	// nil means history.Heuristic(). Wrap it in history.NewCache so that
	// re-trimming a growing history counts only the new messages.
	Counter history.Counter
	// Calibration, when set, learns the provider's count from the usage
	// of every response and from every overflow (through Wrap), and every
	// trim aims at the budget the provider counts. Use one per model.
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
	// Strategy's turns start at user messages).
	Options []history.Option
}

// Strategy is a model.TailoringStrategy that trims with
// history.TrimToRecentTurns: whole turns go, oldest first, behind one
// notice; a tool call is never separated from its result; the system
// messages and the latest turn always stay. Set it on a trpc-agent-go
// model with its WithTailoringStrategy option, and its Counter with
// WithTokenCounter; wrap the model with Wrap to recover from overflows and
// calibrate. A Strategy is safe for concurrent use and keeps no state of
// its own (the Calibration is the caller's).
type Strategy struct {
	counter   history.Counter
	cal       *history.Calibration
	elision   *history.ElideOptions
	onTrim    func(history.Event)
	onObserve func(sent, reported int, v history.Verdict)
	opts      []history.Option
	// limits are what the providers' refusals said, per model, as Wrap
	// learns them: every later budget for the model stays below them.
	limits adapt.Limits
}

// NewStrategy returns a Strategy with cfg.
func NewStrategy(cfg Config) *Strategy {
	c := cfg.Counter
	if c == nil {
		c = history.Heuristic()
	}
	opts := append([]history.Option{history.WithCounter(c)}, cfg.Options...)
	if cfg.Calibration != nil {
		opts = append(opts, history.WithCalibration(cfg.Calibration))
	}
	s := &Strategy{counter: c, cal: cfg.Calibration, onTrim: cfg.OnTrim, onObserve: cfg.OnObserve}
	if cfg.Elision != nil {
		e := *cfg.Elision
		s.elision = &e
		opts = append(opts, history.WithElision(e))
	}
	if cfg.StepTrim {
		opts = append(opts, history.WithStepTrim())
	}
	s.opts = opts
	return s
}

// Counter returns the model.TokenCounter that counts as the Strategy
// does, for trpc-agent-go's WithTokenCounter (which also counts the tools
// with it and takes them out of the budget it passes to TailorMessages).
func (s *Strategy) Counter() *Counter { return &Counter{c: s.counter} }

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
	opts, budget := s.opts, maxTokens
	if sl != nil && sl.overhead > 0 {
		opts = append(opts[:len(opts):len(opts)], history.WithOverhead(sl.overhead))
		budget = saturatingAdd(maxTokens, sl.overhead)
	}
	if sl != nil {
		budget = s.limits.Bound(sl.model, budget)
		sl.setBudget(budget)
	}
	var event *history.Event // the trim's, reported once the decision stands
	if s.onTrim != nil {
		opts = append(opts[:len(opts):len(opts)], history.WithOnTrim(func(e history.Event) { event = &e }))
	}
	hist, p, w, err := s.window(messages, budget, opts, false)
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
		if hist, p, w, err = s.window(messages, budget, opts, true); err != nil {
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
			e.DroppedTurns += turnStarts(messages[p:w]) - 1
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
func (s *Strategy) window(msgs []model.Message, budget int, opts []history.Option, all bool) (hist []history.Message, p, w int, err error) {
	for p < len(msgs) && msgs[p].Role == model.RoleSystem {
		p++
	}
	limit := budget
	if s.cal != nil {
		limit = max(limit, s.cal.Budget(budget))
	}
	turn, _, on := history.Breadcrumbs(opts...)
	dturn, _, _ := history.Breadcrumbs()
	var cv converter
	var blocks [][]history.Message // the messages read from the end, newest first
	b := bounds{s: s}
	for i := range p {
		h, err := cv.message(&msgs[i])
		if err != nil {
			return nil, 0, 0, invalid(i, err)
		}
		b.sum = saturatingAdd(b.sum, max(s.counter.CountMessage(h), 0))
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
		started = started || h.Role == history.RoleUser && !notice
		if !all && started && b.sum > limit {
			w = i
			break
		}
	}
	// A cut inside msgs[p:w] with no turn start in it would not be the
	// cut of the whole history: read it all.
	if w > p && !hasTurnStart(msgs[p:w]) {
		return s.window(msgs, budget, opts, true)
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
	s   *Strategy
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
		b.run = append(b.run, result{id: h.ToolCallID, cost: b.s.lowerBound(h)})
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
	b.sum = saturatingAdd(b.sum, b.s.lowerBound(&e))
}

// lowerBound returns the least the trim can count h as: with elision, a
// tool result as if emptied (and, clearing arguments, a call's arguments
// as if empty); otherwise its count.
func (s *Strategy) lowerBound(h *history.Message) int {
	if s.elision != nil {
		switch {
		case h.Role == history.RoleTool:
			return max(s.counter.CountMessage(history.Message{Role: history.RoleTool, ToolCallID: h.ToolCallID}), 0)
		case s.elision.ClearArguments > 0 && len(h.ToolCalls) > 0:
			e := *h
			e.ToolCalls = make([]history.ToolCall, len(h.ToolCalls))
			for k, c := range h.ToolCalls {
				e.ToolCalls[k] = history.ToolCall{ID: c.ID, Name: c.Name}
			}
			return max(s.counter.CountMessage(e), 0)
		}
	}
	return max(s.counter.CountMessage(*h), 0)
}

// hasTurnStart reports whether msgs holds a user message, reading from
// the end (where one usually is: the turn w falls in starts there).
func hasTurnStart(msgs []model.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return true
		}
	}
	return false
}

// turnStarts counts the user messages of msgs: the turns a trim dropped
// with them.
func turnStarts(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Role == model.RoleUser {
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
type Counter struct{ c history.Counter }

// NewCounter returns a Counter counting with c (nil: history.Heuristic()).
func NewCounter(c history.Counter) *Counter {
	if c == nil {
		c = history.Heuristic()
	}
	return &Counter{c: c}
}

// CountTokens returns the tokens of message.
func (c *Counter) CountTokens(_ context.Context, message model.Message) (int, error) {
	h, err := convert([]model.Message{message}, nil)
	if err != nil {
		return 0, err
	}
	return max(c.c.CountMessage(h[0]), 0), nil
}

// CountTokensRange returns the tokens of messages[start:end], saturating.
// An invalid range is an error, as trpc-agent-go's own counter reports it.
func (c *Counter) CountTokensRange(_ context.Context, messages []model.Message, start, end int) (int, error) {
	if start < 0 || end > len(messages) || start >= end {
		return 0, errors.New("history/trpc: invalid range")
	}
	h, err := convert(messages[start:end], nil)
	if err != nil {
		return 0, err
	}
	total := 0
	for i := range h {
		total = saturatingAdd(total, max(c.c.CountMessage(h[i]), 0))
	}
	return total, nil
}
