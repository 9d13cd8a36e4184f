package history

import (
	"maps"
	"strconv"
	"sync"
)

// Result is the outcome of a trim. Its slices are new: they never share
// memory with the caller's input (except Messages when nothing changed, see
// below), so the caller may keep or modify them.
type Result struct {
	// Messages is the history to send, breadcrumb included when anything was
	// dropped. When nothing was removed or changed it is the input slice
	// itself, clipped to its length (no copy is made; appending to it cannot
	// write into the caller's array).
	Messages []Message
	// Kept gives, for each element of Messages, its index in the input, or
	// -1 for a message the library inserted (a breadcrumb). Kept is nil
	// when Messages is the input unchanged, i.e. Messages[i] is input[i].
	// Apply uses it to map the decision back onto the caller's own types.
	Kept []int
	// Dropped holds every input message that is not in Messages, oldest
	// first, exactly as the caller gave it, so the caller can archive it.
	// Breadcrumbs the library replaced with a new one are not listed.
	Dropped []Message
	// Trimmed reports that something was dropped or elided to fit the
	// budget: at least one turn, step or tool result. A Result can be
	// Trimmed and still over budget (see ErrLatestTurnTooLarge).
	Trimmed bool
	// DroppedMessages counts the messages dropped with whole turns. Messages
	// removed by the orphan sweep are counted in OrphansRemoved instead, so
	// len(Dropped) can exceed DroppedMessages.
	DroppedMessages int
	// DroppedTurns and KeptTurns count whole turns dropped and sent.
	DroppedTurns int
	KeptTurns    int
	// TokensBefore is the count of the history after the orphan sweep and
	// before trimming; TokensAfter the count of Messages, breadcrumb
	// included. Both are sums of Counter.CountMessage.
	TokensBefore int
	TokensAfter  int
	// Budget is the budget that was asked for.
	Budget int
	// OrphansRemoved counts tool results removed and tool calls stripped by
	// the orphan sweep (SweepReport.Total).
	OrphansRemoved int
	// DroppedSteps counts steps dropped inside the latest turn (WithStepTrim);
	// their messages are included in DroppedMessages.
	DroppedSteps int
	// ElidedResults counts tool results whose content was replaced by a
	// placeholder (WithElision). They stay in Messages, with KindElided.
	ElidedResults int
}

// Option configures TrimToRecentTurns (and the other trim entry points).
// A nil Option is ignored.
type Option func(*options)

type options struct {
	counter      Counter
	onTrim       func(Event)
	breadcrumb   Message
	noBreadcrumb bool
	turnStart    func(Message) bool
	labels       map[string]string
	noSweep      bool
	lowWater     float64
	elide        *ElideOptions
	stepTrim     bool
	stepCrumb    *Message
	err          error // first invalid option

	// Set by the entry points, not by options.
	reason  string
	attempt int
	// budgetFor, when set, replaces the budget once the history is
	// counted (RecoverOverflow derives it from the size that failed), so
	// that no message is counted twice.
	budgetFor func(total int) int
}

// optionsPool recycles option sets: options are applied through caller
// functions, which forces them onto the heap, and a trim before every
// request should not allocate when nothing needs trimming.
var optionsPool = sync.Pool{New: func() any { return new(options) }}

// newOptions applies opts over the defaults. Call release when done.
func newOptions(opts []Option) *options {
	o := optionsPool.Get().(*options)
	*o = options{counter: Heuristic, breadcrumb: Breadcrumb(), reason: ReasonBudget}
	for _, f := range opts {
		if f != nil {
			f(o)
		}
	}
	return o
}

// release returns o to the pool. o must not be used afterwards.
func (o *options) release() {
	*o = options{}
	optionsPool.Put(o)
}

// WithCounter sets the token counter. The default, and what a nil c means,
// is Heuristic. For exact counts use the tiktoken subpackage; wrap it with
// NewCache when trimming before every request.
func WithCounter(c Counter) Option {
	return func(o *options) {
		if c == nil {
			c = Heuristic
		}
		o.counter = c
	}
}

// WithOnTrim registers f to receive one Event, synchronously and before the
// trim returns, each time a trim drops something. It is never called when
// nothing was dropped. f must not retain the Result's slices through
// closures it shares with other goroutines without synchronisation; the
// Event itself is a copy it may keep.
func WithOnTrim(f func(Event)) Option {
	return func(o *options) { o.onTrim = f }
}

// WithBreadcrumb replaces the default breadcrumb (for another language or
// wording, or another role). Its Kind is forced to KindBreadcrumb. Its role
// must be user, system or assistant and it must not carry tool calls or a
// tool call id; otherwise the trim returns a *MessageError with Index -1.
func WithBreadcrumb(m Message) Option {
	return func(o *options) {
		m.Kind = KindBreadcrumb
		if err := checkBreadcrumb(m); err != nil && o.err == nil {
			o.err = err
		}
		o.breadcrumb = m
		o.noBreadcrumb = false
	}
}

// WithoutBreadcrumb turns the breadcrumb off: dropped turns leave no notice.
// Breadcrumbs already in the input are then kept as they are.
func WithoutBreadcrumb() Option {
	return func(o *options) { o.noBreadcrumb = true }
}

// WithTurnStart replaces the rule that decides which messages open a turn
// (by default: every RoleUser message with an empty Kind). Use it when
// tool results reach the model as user text, e.g.
//
//	history.WithTurnStart(func(m history.Message) bool {
//		return m.Role == history.RoleUser && !strings.HasPrefix(m.Content, "[Tool results]")
//	})
//
// Whatever f says, tool results, breadcrumbs, nudges and summaries never open
// a turn, and the first message after the prefix always does. A nil f
// restores the default.
func WithTurnStart(f func(Message) bool) Option {
	return func(o *options) { o.turnStart = f }
}

// WithLabels attaches caller attribution (session_id, channel, agent,
// turn_id, ...) to every Event. The map is copied when the option is
// applied and again for every event, so neither side can change the other's.
func WithLabels(labels map[string]string) Option {
	labels = maps.Clone(labels)
	return func(o *options) { o.labels = labels }
}

// WithoutOrphanSweep turns the orphan sweep off. Use it only when the
// history is known to be well paired; trimming itself never breaks a pair.
func WithoutOrphanSweep() Option {
	return func(o *options) { o.noSweep = true }
}

// WithLowWater adds hysteresis for prompt caching: when a trim is needed
// (the history exceeds the budget), it trims down to fraction*budget instead
// of just under the budget, so the next requests fit without another trim
// and the provider's cached prefix survives them. Histories that fit the
// budget are still returned untouched. A fraction outside (0, 1) turns it
// off. See docs/prompt-caching.md.
func WithLowWater(fraction float64) Option {
	return func(o *options) { o.lowWater = fraction }
}

// TrimToRecentTurns returns the longest suffix of whole turns of msgs that
// fits budget tokens together with the prefix and a breadcrumb.
//
// Step by step:
//
//  1. msgs is validated (see ErrInvalidMessage) and budget must be
//     positive (ErrInvalidBudget); on error the Result is empty.
//  2. The orphan sweep removes unpaired tool results and calls (see
//     SweepOrphans), unless WithoutOrphanSweep.
//  3. Each message is counted once. If the total fits the budget, the
//     history is returned as it is: no breadcrumb, no event.
//  4. Otherwise the prefix (leading system messages and pinned summaries)
//     is kept, the oldest whole turns are dropped, as few as needed, and one
//     breadcrumb is placed after the prefix, replacing any breadcrumb there
//     before. The breadcrumb's tokens count toward the budget.
//  5. The latest turn is always kept. When the prefix, breadcrumb and
//     latest turn alone exceed the budget, the Result holds them and the
//     error is a *BudgetError wrapping ErrLatestTurnTooLarge.
//
// WithElision and WithStepTrim extend step 4 into a ladder: old tool results
// are elided (as few as needed, and only in what is kept) before turns must
// go, and the oldest steps of the latest turn go before the trim gives up
// (see docs/degradation.md). Summaries in dropped turns are kept, pinned.
//
// A turn runs from a RoleUser message of no Kind up to the next one (see
// Turns), so a tool call and its result are always dropped together.
// TrimToRecentTurns runs in time linear in the number of messages, never
// modifies msgs, is deterministic, and is safe for concurrent use (as long as
// the Counter and callbacks are). Trimming a Result's Messages again with the
// same budget and options returns them unchanged.
func TrimToRecentTurns(msgs []Message, budget int, opts ...Option) (Result, error) {
	o := newOptions(opts)
	defer o.release()
	return trimToBudget(msgs, budget, o)
}

// scratch holds per-call working memory, pooled so that steady-state trims
// allocate only their output.
type scratch struct {
	counts []int // token count of each message of the swept view
	starts []int // view index of the first message of each turn
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// trimToBudget is the shared implementation of the trim entry points.
func trimToBudget(msgs []Message, budget int, o *options) (Result, error) {
	res := Result{Budget: budget}
	if budget <= 0 {
		return res, ErrInvalidBudget
	}
	if o.err != nil {
		return res, o.err
	}
	if err := validate(msgs); err != nil {
		return res, err
	}

	// The view is what the caller would send without trimming: msgs after
	// the orphan sweep. index maps view positions to msgs (nil: identity).
	view, index := msgs, []int(nil)
	if !o.noSweep {
		if out, idx, rep := sweep(msgs, true); out != nil {
			view, index = out, idx
			res.OrphansRemoved = rep.Total()
		}
	}

	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if cap(sc.counts) < len(view) {
		sc.counts = make([]int, len(view))
	}
	counts := sc.counts[:len(view)]
	starts := sc.starts[:0]

	lead := leadEnd(view)
	total, pinnedTok, crumbTok := 0, 0, 0
	opened := false // a real turn start has been seen
	for i := range view {
		c := o.counter.CountMessage(view[i])
		counts[i] = c
		total += c
		switch {
		case i < lead && view[i].Kind == KindBreadcrumb:
			crumbTok += c
		case i < lead:
			pinnedTok += c
		default:
			// The first turn starts right after the prefix and runs to the
			// second real turn start: what precedes the first user
			// message belongs to the first turn.
			if isTurnStart(view[i], o.turnStart) {
				if opened {
					starts = append(starts, i)
				}
				opened = true
			}
			if i == lead {
				starts = append(starts, i)
			}
		}
	}
	sc.starts = starts
	res.TokensBefore = total
	if o.budgetFor != nil {
		budget = max(o.budgetFor(total), 1)
		res.Budget = budget
	}
	turns := len(starts)

	if total <= budget || turns == 0 || (turns == 1 && o.elide == nil && !o.stepTrim) {
		// Fits, or nothing can be dropped: send the (swept) view.
		res.Messages = view[:len(view):len(view)]
		res.Kept = index
		res.Dropped = dropped(msgs, index, nil)
		res.TokensAfter = total
		res.KeptTurns = turns
		if total > budget {
			return res, &BudgetError{Need: total, Budget: budget, Pinned: pinnedTok + crumbTok}
		}
		return res, nil
	}

	target := budget
	if o.lowWater > 0 && o.lowWater < 1 {
		target = max(int(float64(budget)*o.lowWater), 1)
	}
	p := planner{
		view: view, counts: counts, starts: starts, lead: lead, o: o,
		target: target, total: total, pinnedTok: pinnedTok, oldCrumbTok: crumbTok, hoist: -1,
	}
	p.crumbTok = crumbTok // WithoutBreadcrumb keeps the old ones
	if !o.noBreadcrumb {
		p.crumbTok = o.counter.CountMessage(o.breadcrumb)
	}
	if o.elide != nil {
		p.cands = elisionCandidates(view, counts, o.elide, o.counter)
	}
	p.chooseTurns()
	if o.stepTrim && p.over() {
		p.chooseSteps()
	}
	items := p.items()
	tokens, elide, at := p.chooseElisions(items)
	if o.elide != nil && len(elide) > 0 {
		chosen := make([]elideCand, len(elide))
		for i, c := range elide {
			chosen[i] = p.cands[c]
		}
		if err := archive(view, chosen, o.elide); err != nil {
			return Result{Budget: budget}, err
		}
	}

	// Materialise: messages, original indices, replaced breadcrumbs. Runs
	// of consecutive view indices (nearly all of the output) are copied in
	// bulk; elided results are patched in afterwards.
	out := make([]Message, len(items))
	keptView := 0
	for j := 0; j < len(items); {
		switch it := items[j]; it {
		case itemTurnCrumb:
			out[j] = o.breadcrumb
			items[j] = -1
			j++
		case itemStepCrumb:
			out[j] = o.stepBreadcrumb()
			items[j] = -1
			j++
		default:
			r := j + 1
			for r < len(items) && items[r] == items[r-1]+1 {
				r++
			}
			copy(out[j:r], view[it:it+r-j])
			keptView += r - j
			for ; j < r; j++ {
				if index != nil {
					items[j] = index[items[j]]
				}
			}
		}
	}
	for e, ci := range elide {
		c := &p.cands[ci]
		out[at[e]] = elided(view[c.idx], c.text)
	}
	orig := func(i int) int {
		if index == nil {
			return i
		}
		return index[i]
	}
	replaced := make([]int, len(p.replaced))
	for i, v := range p.replaced {
		replaced[i] = orig(v)
	}

	res.Messages = out
	res.Kept = items
	res.Dropped = dropped(msgs, items, replaced)
	res.DroppedMessages = len(view) - keptView - len(replaced)
	res.DroppedTurns = p.k
	res.KeptTurns = turns - p.k
	res.DroppedSteps = p.d
	res.ElidedResults = len(elide)
	res.TokensAfter = tokens
	res.Trimmed = p.k > 0 || p.d > 0 || len(elide) > 0

	o.emit(&res)
	if res.TokensAfter > budget {
		return res, &BudgetError{Need: res.TokensAfter, Budget: budget, Pinned: p.pinnedTok + p.hoistTok + p.crumbPart(p.k)}
	}
	return res, nil
}

// Markers in a planner's item list for the breadcrumbs it inserts.
const (
	itemTurnCrumb = -1 // after the prefix: earlier turns omitted
	itemStepCrumb = -2 // after the latest turn's opening: earlier steps omitted
)

// planner decides what a trim keeps, in three rungs: drop the oldest whole
// turns, then the oldest steps of the latest turn, and elide tool results
// wherever that saves dropping. All sums come from counts, computed once.
type planner struct {
	view   []Message
	counts []int
	starts []int // first view index of each turn
	lead   int   // end of the leading block (prefix and breadcrumbs)
	o      *options
	cands  []elideCand // elision candidates, ascending index

	target, total          int
	pinnedTok, oldCrumbTok int // prefix tokens; tokens of breadcrumbs in the leading block
	crumbTok               int // tokens of the turn breadcrumb a trim leaves

	k        int // turns dropped
	hoist    int // view index of the newest summary in what is dropped, or -1
	hoistTok int
	cost     int // tokens of the planned output with every kept candidate elided

	// Step level, when the latest turn alone is too large.
	d        int   // steps dropped
	openEnd  int   // end of the latest turn's opening block
	steps    []int // first view index of each step of the latest turn
	replaced []int // view indices of breadcrumbs replaced by new ones
}

func (p *planner) over() bool { return p.cost > p.target }

// crumbPart returns the tokens of the leading breadcrumb(s) when k turns
// are dropped.
func (p *planner) crumbPart(k int) int {
	if k == 0 {
		return p.oldCrumbTok
	}
	return p.crumbTok
}

// chooseTurns finds the fewest oldest turns to drop so that the rest fits
// the target once every kept candidate is elided; at most all but the
// latest.
func (p *planner) chooseTurns() {
	saved := 0
	for _, c := range p.cands {
		saved += c.saved
	}
	body := p.total - p.pinnedTok - p.oldCrumbTok
	next, ci := p.lead, 0
	hoist, hoistTok := -1, 0
	k := 0
	cost := p.pinnedTok + p.oldCrumbTok + body - saved
	for cost > p.target && k < len(p.starts)-1 {
		k++
		end := p.starts[k]
		for ; next < end; next++ {
			body -= p.counts[next]
			if p.view[next].Kind == KindSummary {
				hoist, hoistTok = next, p.counts[next]
			}
		}
		for ; ci < len(p.cands) && p.cands[ci].idx < end; ci++ {
			saved -= p.cands[ci].saved
		}
		cost = p.pinnedTok + hoistTok + p.crumbPart(k) + body - saved
	}
	p.k, p.hoist, p.hoistTok, p.cost = k, hoist, hoistTok, cost
}

// chooseSteps, called when the latest turn alone is too large, drops the
// fewest oldest steps of it so that the rest fits; at most all but the
// newest step.
func (p *planner) chooseSteps() {
	ls, n := p.starts[len(p.starts)-1], len(p.view)
	// The opening block runs from the turn's start to its first assistant
	// message after the opening user message.
	open := ls
	for open < n && !isTurnStart(p.view[open], p.o.turnStart) {
		open++
	}
	if open == n {
		open = ls // no user message: the block is what precedes the first assistant
	}
	end := open
	for end < n && !startsStep(p.view[end]) {
		end++
	}
	p.openEnd = end
	p.steps = p.steps[:0]
	for i := end; i < n; i++ {
		if startsStep(p.view[i]) {
			p.steps = append(p.steps, i)
		}
	}
	if len(p.steps) < 2 {
		return
	}
	oldInner, innerTok := 0, 0
	for i := ls; i < end; i++ {
		if p.view[i].Kind == KindBreadcrumb {
			oldInner += p.counts[i]
		}
	}
	switch {
	case p.o.noBreadcrumb:
		innerTok = oldInner
	case end == ls:
		// No opening message: the step breadcrumb would sit right after
		// the leading one. One notice stands at the leading position
		// instead, replacing what is there.
		oldInner = p.crumbPart(p.k)
		innerTok = p.o.counter.CountMessage(p.mergedCrumb())
	default:
		innerTok = p.o.counter.CountMessage(p.o.stepBreadcrumb())
	}
	// cost is the plan with no step dropped; drop steps until it fits.
	cost := p.cost
	hoist, hoistTok := p.hoist, p.hoistTok
	next, ci := end, 0
	for ci < len(p.cands) && p.cands[ci].idx < end {
		ci++
	}
	d := 0
	for cost > p.target && d < len(p.steps)-1 {
		if d == 0 {
			cost += innerTok - oldInner
		}
		d++
		stop := p.steps[d]
		for ; next < stop; next++ {
			cost -= p.counts[next]
			if p.view[next].Kind == KindSummary {
				cost += p.counts[next] - hoistTok // the newest dropped summary is pinned instead
				hoist, hoistTok = next, p.counts[next]
			}
		}
		for ; ci < len(p.cands) && p.cands[ci].idx < stop; ci++ {
			cost += p.cands[ci].saved // already subtracted from cost: undo
		}
	}
	p.d, p.hoist, p.hoistTok, p.cost = d, hoist, hoistTok, cost
}

// startsStep reports whether m opens a step: an assistant message that is
// not a notice (a breadcrumb may have any role).
func startsStep(m Message) bool {
	return m.Role == RoleAssistant && m.Kind != KindBreadcrumb
}

// items lists the planned output: view indices in order, with
// itemTurnCrumb and itemStepCrumb where breadcrumbs go. It records the
// breadcrumbs it replaces.
func (p *planner) items() []int {
	n := len(p.view)
	cut := p.starts[p.k]
	items := make([]int, 0, p.lead+3+n-cut)
	merged := p.mergesCrumbs()
	newTurnCrumb := (p.k > 0 || merged) && !p.o.noBreadcrumb
	for i := range p.lead {
		if newTurnCrumb && p.view[i].Kind == KindBreadcrumb {
			p.replaced = append(p.replaced, i)
			continue
		}
		items = append(items, i)
	}
	if p.hoist >= 0 {
		items = append(items, p.hoist)
	}
	switch {
	case newTurnCrumb && merged && p.k == 0:
		items = append(items, itemStepCrumb)
	case newTurnCrumb:
		items = append(items, itemTurnCrumb)
	}
	if p.d == 0 {
		for i := cut; i < n; i++ {
			items = append(items, i)
		}
		return items
	}
	newStepCrumb := !p.o.noBreadcrumb && !merged
	for i := cut; i < p.openEnd; i++ {
		if newStepCrumb && p.view[i].Kind == KindBreadcrumb {
			p.replaced = append(p.replaced, i)
			continue
		}
		items = append(items, i)
	}
	if newStepCrumb {
		items = append(items, itemStepCrumb)
	}
	for i := p.steps[p.d]; i < n; i++ {
		items = append(items, i)
	}
	return items
}

// mergesCrumbs reports that steps are dropped from a latest turn with no
// opening message, so that one breadcrumb at the leading position stands
// for both notices.
func (p *planner) mergesCrumbs() bool {
	return p.d > 0 && p.openEnd == p.starts[p.k]
}

// mergedCrumb is the single notice used when mergesCrumbs: the turn
// breadcrumb if turns were dropped too, else the step breadcrumb.
func (p *planner) mergedCrumb() Message {
	if p.k > 0 {
		return p.o.breadcrumb
	}
	return p.o.stepBreadcrumb()
}

// chooseElisions returns the token count of items and the candidates to
// elide (positions in p.cands, ascending) with their positions in items:
// the oldest kept ones first, only as many as needed to reach the target.
func (p *planner) chooseElisions(items []int) (tokens int, elide, at []int) {
	for _, it := range items {
		switch it {
		case itemTurnCrumb:
			tokens += p.crumbTok
		case itemStepCrumb:
			tokens += p.o.counter.CountMessage(p.o.stepBreadcrumb())
		default:
			tokens += p.counts[it]
		}
	}
	if len(p.cands) == 0 || tokens <= p.target {
		return tokens, nil, nil
	}
	// Walk items and candidates together (both ascending by view index).
	j := 0
	for ci := range p.cands {
		if tokens <= p.target {
			break
		}
		idx := p.cands[ci].idx
		for j < len(items) && items[j] < idx {
			j++
		}
		if j < len(items) && items[j] == idx {
			elide = append(elide, ci)
			at = append(at, j)
			tokens -= p.cands[ci].saved
		}
	}
	return tokens, elide, at
}

// emit sends the event for res to the OnTrim callback.
func (o *options) emit(res *Result) {
	if o.onTrim == nil || !res.Trimmed {
		return
	}
	o.onTrim(Event{
		Type:            EventType,
		Reason:          o.reason,
		DroppedMessages: res.DroppedMessages,
		DroppedTurns:    res.DroppedTurns,
		KeptTurns:       res.KeptTurns,
		DroppedSteps:    res.DroppedSteps,
		ElidedResults:   res.ElidedResults,
		TokensBefore:    res.TokensBefore,
		TokensAfter:     res.TokensAfter,
		Budget:          res.Budget,
		Attempt:         o.attempt,
		Labels:          maps.Clone(o.labels),
	})
}

// dropped returns, in order, the messages of msgs whose index is neither
// in kept (-1 entries ignored) nor in replaced (breadcrumbs the trim
// replaced with new ones). kept == nil means every message was kept. Runs of
// dropped messages are copied in bulk.
func dropped(msgs []Message, kept, replaced []int) []Message {
	if kept == nil {
		return nil
	}
	stay := make([]bool, len(msgs))
	n := len(msgs)
	for _, k := range kept {
		if k >= 0 {
			stay[k] = true
			n--
		}
	}
	for _, r := range replaced {
		stay[r] = true
		n--
	}
	if n <= 0 {
		return nil
	}
	out := make([]Message, 0, n)
	for i := 0; i < len(msgs); {
		if stay[i] {
			i++
			continue
		}
		j := i + 1
		for j < len(msgs) && !stay[j] {
			j++
		}
		out = append(out, msgs[i:j]...)
		i = j
	}
	return out
}

// validate checks every message against the message model.
func validate(msgs []Message) error {
	for i := range msgs {
		if reason := checkMessage(&msgs[i]); reason != "" {
			return &MessageError{Index: i, Reason: reason}
		}
	}
	return nil
}

// checkMessage returns why m is invalid, or "".
func checkMessage(m *Message) string {
	switch m.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
	default:
		return "unknown role " + quote(string(m.Role))
	}
	switch m.Kind {
	case "", KindBreadcrumb, KindSummary, KindNudge:
		if m.Kind != "" && (m.Role == RoleTool || len(m.ToolCalls) > 0) {
			return "a " + string(m.Kind) + " message cannot be part of a tool exchange"
		}
	case KindElided:
		if m.Role != RoleTool {
			return "only tool messages can be elided"
		}
	default:
		return "unknown kind " + quote(string(m.Kind))
	}
	if m.Role == RoleTool {
		if m.ToolCallID == "" {
			return "tool message without tool_call_id"
		}
	} else if m.ToolCallID != "" {
		return "tool_call_id on a " + string(m.Role) + " message"
	}
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return "tool calls on a " + string(m.Role) + " message"
	}
	for j := range m.ToolCalls {
		id := m.ToolCalls[j].ID
		if id == "" {
			return "tool call " + strconv.Itoa(j) + " has an empty id"
		}
		for k := range j {
			if m.ToolCalls[k].ID == id {
				return "tool call id " + quote(id) + " used twice in one message"
			}
		}
	}
	for j := range m.Parts {
		p := &m.Parts[j]
		switch p.Type {
		case PartText, PartImage, PartFile, PartReasoning:
		default:
			return "part " + strconv.Itoa(j) + " has unknown type " + quote(string(p.Type))
		}
		if p.Tokens < 0 || p.Width < 0 || p.Height < 0 || p.Size < 0 {
			return "part " + strconv.Itoa(j) + " has a negative size"
		}
	}
	return ""
}

func quote(s string) string { return strconv.Quote(s) }
