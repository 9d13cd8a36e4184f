package responses

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/notice"
	"github.com/histrim/history/internal/regroup"
	"github.com/histrim/history/internal/rules"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// MessageError reports an input item the adapter cannot convert: a union
// with no variant set, a message of an unknown role, a call or an output
// without its call id, an item_reference without an id, an item built
// with param.Override that does not encode to a JSON object. It wraps
// [history.ErrInvalidMessage], so errors.Is(err, history.ErrInvalidMessage)
// holds for it as for the core's own validation errors. Index is the
// position of the offending item in the caller's slice, Reason says what
// is wrong with it.
type MessageError = adapt.MessageError

// codec is the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways, and the API's rule that a
// reasoning item binds only the item after it, in its own step (no step is
// kept for the reasoning that opened the tool loop).
var codec = &adapt.Codec[reasoningContext, Item]{
	Name: "responses", Noun: "item",
	Convert: func(rc reasoningContext, items []Item, opts []history.Option) (*adapt.View[Item], error) {
		return convertView(items, opts, rc, nil)
	},
	Rules: []history.Option{rules.LooseReasoning().(history.Option)},
}

// convertView is codec's Convert, reading and rewriting items through
// memo when it is not nil (the wire's codec: see wireMemo).
func convertView(items []Item, opts []history.Option, rc reasoningContext, memo *itemMemo) (*adapt.View[Item], error) {
	c, err := convert(items, opts, rc, memo)
	if err != nil {
		return nil, err
	}
	v := &adapt.View[Item]{Hist: c.hist, N: len(items), Of: c.of,
		Back: func(res history.Result) ([]Item, []int) { return c.apply(items, res, nil) }}
	if memo != nil {
		// The wire's codec reads the output once and releases it
		// (adapt.RawSplice): its array goes to the next request's.
		var buf []Item // the array the output was built in
		v.Back = func(res history.Result) ([]Item, []int) {
			var into []Item
			if p, _ := outputs.Get().(*[]Item); p != nil {
				into = *p
			}
			out, from := c.apply(items, res, into)
			if len(out) > 0 && len(items) > 0 && &out[0] == &items[0] {
				// The input itself (nothing trimmed): the array taken
				// goes back as it was.
				if cap(into) > 0 {
					outputs.Put(&into)
				}
				return out, from
			}
			buf = out
			return out, from
		}
		v.Release = func() {
			if vs := c.views; vs != nil && len(vs) <= maxPooledItems {
				// Read by Back alone (Of reads the groups' starts and
				// slots; the history holds the views' strings and parts,
				// never the array).
				c.views = nil
				clear(vs)
				viewArrays.Put(&vs)
			}
			if h, sl, gs, st, is := c.hist, c.slots, c.groups, c.starts, c.ints; cap(h) > 0 && cap(h) <= maxPooledItems &&
				cap(sl) <= maxPooledItems && cap(gs) <= maxPooledItems && cap(st) <= maxPooledItems && cap(is) <= 4*maxPooledItems {
				// Read by the core's trim and Back alone: the core and the
				// output hold copies of the messages, never the arrays
				// (the slots' positions are cut from ints; the messages'
				// calls, which the core's copies hold, are not pooled).
				c.hist, c.slots, c.groups, c.starts, c.ints = nil, nil, nil, nil, nil
				clear(h[:cap(h)])
				clear(sl[:cap(sl)])
				clear(gs[:cap(gs)])
				histArrays.Put(&histArray{h[:0], sl[:0], gs[:0], st[:0], is[:0]})
			}
			if cap(buf) == 0 || cap(buf) > maxPooledItems {
				return
			}
			clear(buf[:cap(buf)]) // the pool keeps no item's memory alive
			b := buf[:0]
			buf = nil
			outputs.Put(&b)
		}
	}
	return v, nil
}

// outputs holds the arrays the wire's codec built its trimmed items in,
// for the next request's (convertView): a trimmed request of 100k tokens
// spent a tenth of its time allocating and collecting one.
var outputs sync.Pool // of *[]Item

// viewArrays holds the arrays of views of the wire codec's conversions
// whose requests are done (convertView), emptied, for the next one's.
var viewArrays sync.Pool // of *[]view

// histArrays holds the arrays of the history messages, slots and groups
// of the wire codec's conversions whose requests are done (convertView),
// emptied, for the next one's: at 100k tokens, a fifth of what a request
// allocated.
var histArrays sync.Pool // of *histArray

type histArray struct {
	hist   []history.Message
	slots  []regroup.Slot
	groups [][]Item
	starts []int
	ints   []int
}

// maxPooledItems is the largest array outputs keeps (17 MB of items), and
// viewArrays.
const maxPooledItems = 1 << 16

// NewTrimmer returns a Trimmer for one conversation that trims with opts
// (history.WithLowWater, history.WithTrigger, history.WithElision, ...),
// fixed for its life.
func NewTrimmer(opts ...history.Option) *Trimmer {
	return &Trimmer{t: codec.NewTrimmer(currentTurn, opts)}
}

//go:generate go run github.com/histrim/history/internal/adapt/trimmergen -system reasoningContext -message Item -params responses.ResponseNewParams -usage responses.ResponseUsage -conversations Conversations

// reasoningContext is which reasoning items the API reads back
// (reasoning.context): those of the current turn only, or all of them.
// See "Counting reasoning" in the package documentation.
type reasoningContext struct{ allTurns bool }

// currentTurn is the API's documented default: the reasoning items of
// earlier turns are ignored.
var currentTurn = reasoningContext{}

// Conversations trims many conversations, each with its own Trimmer, whose
// state it keeps in a history.StateStore shared by a runtime's replicas
// (history.Conversations over this package's messages): a conversation's
// requests send the prompts of one process wherever they land. Its
// methods are Fit(ctx, key, params) and Observe(params, res, usage) (the
// door), Trim(ctx, key, transcript, budget), RecoverOverflow(ctx,
// key, transcript, providerErr, attempt), Reset, Forget, Close and
// RecallStore; its fields OnState, MaxConversations and IdleAfter. See
// docs/replicas.md.
type Conversations struct {
	*adapt.Conversations[reasoningContext, Item]
}

// NewConversations returns Conversations that keep their state in store
// and trim with opts (those of NewTrimmer, the same on every replica).
func NewConversations(store history.StateStore, opts ...history.Option) *Conversations {
	return &Conversations{adapt.NewConversations(codec, currentTurn, store, opts)}
}

// Positions returns where msgs[i], for each index i, landed in the output
// of the Trim or RecoverOverflow of msgs that returned res: the index to
// pin it at (history.WithPin) when that output is trimmed again; -1 for a
// message the output does not hold.
func Positions(msgs []Item, res history.Result, i ...int) []int {
	return codec.Positions(msgs, res, i...)
}

// invalid is the *MessageError for items[i].
func invalid(i int, err error) error {
	return adapt.Invalid("responses", "item", nil, i, err.Error())
}

// unboundPrefix starts the tool-call id of the tool message that stands for
// a reasoning item with no item it can precede (see convert): no call
// has it, so the orphan sweep removes that message.
const unboundPrefix = "histrim:unbound-reasoning:"

// unpairedPrefix starts the tool-call id of the tool message that stands
// for an output answering no call of its exchange, so that the orphan sweep
// removes it even where the core, which does not see the order of items
// inside an exchange, would pair it with a call that comes after it.
const unpairedPrefix = "histrim:unpaired:"

// duplicatePrefix starts the tool-call id given to a call whose call id an
// earlier call of its exchange has: outputs answer the first, so the
// orphan sweep drops it.
const duplicatePrefix = "histrim:duplicate:"

// ToHistory converts items to the library's message model (see the package
// documentation for the mapping). Items are grouped: the model output of
// one exchange (reasoning, messages, tool calls) becomes one
// history.Message, each tool output one more, so that a reasoning item can
// never be separated from the items it precedes. The result is what the
// library counts and trims; it holds no payloads (image and file data are
// reduced to their size) and is only meant for deciding, never for sending.
// A Result computed from it indexes it, not items.
//
// The notices a trim with default options inserts are marked
// history.KindBreadcrumb (see the package documentation); [Trim] also
// recognises the notices its options configure.
//
// ToHistory never modifies items. An item it cannot convert yields a nil
// slice and a *MessageError naming its index.
func ToHistory(items []Item) ([]history.Message, error) {
	c, err := convert(items, nil, currentTurn, nil)
	if err != nil {
		return nil, err
	}
	return c.hist, nil
}

// Trim trims items to budget tokens with [history.TrimToRecentTurns] and
// returns the caller's own items that the trim kept, in order, with the
// notices the core inserted (for dropped turns, and for dropped steps under
// history.WithStepTrim) rendered as easy input messages. res is the core
// Result: its Messages and Kept describe the converted history
// ([ToHistory]), not items.
//
// Kept items are the caller's values themselves (shallow copies of the
// union, sharing its pointers), so encrypted reasoning, ids, statuses,
// phases, cache breakpoints and extra fields survive untouched. Items are
// dropped only with the exchange they belong to: a reasoning item always
// with the item that follows it. Four kinds of change are made, each to a
// copy, the caller's item untouched:
//
//   - a call that no output answers is dropped, and with it a reasoning
//     item that preceded only it; an output that answers no call before
//     it is dropped (the orphan sweep; see the package documentation);
//   - a reasoning item that precedes nothing it can precede (the end of the
//     input, a user message, a tool output) is dropped: the API rejects it;
//   - a tool output that history.WithElision elided holds the placeholder
//     as its output, a plain string, with its call id;
//   - a function or custom tool call whose arguments
//     history.ElideOptions.ClearArguments cleared holds the core's
//     arguments (a custom tool call as its input). The core never clears a
//     call after reasoning, nor one whose arguments cannot be rewritten
//     (see the package documentation): those are sent as they were.
//
// When nothing needs trimming or repairing, the result is items itself,
// clipped to its length. The result converts back (ToHistory) to messages
// that count as res.Messages (less, after a repair), so it fits the budget
// whenever res does, and it passes [Validate] whenever items converted.
//
// Errors: a *MessageError when items cannot be converted; the core's
// errors unchanged otherwise (history.ErrInvalidBudget for budget <= 0, an
// *history.OptionError for an invalid option). When the latest turn alone
// exceeds the budget, Trim returns the trimmed items, res, and a
// *history.BudgetError wrapping history.ErrLatestTurnTooLarge, as the core
// does. On any other error the items are nil.
func Trim(items []Item, budget int, opts ...history.Option) ([]Item, history.Result, error) {
	return codec.Trim(currentTurn, items, budget, opts)
}

// of returns the indices of the history messages item i converted to: the
// message of its exchange that holds it (none for an item the conversion
// leaves out, such as a reasoning item that precedes nothing).
func (c *conversion) of(i int) []int {
	g := sort.Search(len(c.starts), func(g int) bool { return c.starts[g] > i }) - 1
	p := i - c.starts[g]
	var out []int
	for h, sl := range c.slots {
		if sl.Native == g && (sl.Parts == nil || slices.Contains(sl.Parts, p)) {
			out = append(out, h)
		}
	}
	return out
}

// RecoverOverflow is [history.RecoverOverflow] for input items: items is
// the input exactly as it was sent in the request the provider rejected,
// providerErr the provider's error (as openai-go returns it: a
// *openai.Error, possibly wrapped), attempt numbers the recoveries of this
// one request (1 for the first). It converts items as [Trim] does, trims
// them to a target derived from what the provider said and maps the
// decision back the same way, with the same guarantees.
//
// Results, as in the core: providerErr is not a context overflow (a rate
// limit, an invalid request, nil): items itself, clipped, and an error
// wrapping history.ErrNotOverflow; something was dropped: the trimmed
// items and a nil error, and the caller retries; nothing is left to drop:
// the items that are left (the prefix and the latest turn) and a
// *history.RecoverError wrapping history.ErrCannotRecover and providerErr,
// which the caller must surface instead of retrying. Invalid items: a
// *MessageError and nil items.
func RecoverOverflow(items []Item, providerErr error, attempt int, opts ...history.Option) ([]Item, history.Result, error) {
	return codec.RecoverOverflow(currentTurn, items, providerErr, attempt, opts)
}

// conversion is the converted history of a slice of items and where each
// of its messages came from.
type conversion struct {
	// memo, when not nil, keeps what is read of an item and the rewrite
	// of one by its bytes (the wire's codec).
	memo  *itemMemo
	items []Item
	hist  []history.Message
	slots []regroup.Slot
	// views are the items as read; groups, runs of items, are the native
	// messages of regroup: slots name a group and the items inside it.
	views  []view
	groups [][]Item
	starts []int // index in items of each group's first item
	// pairing, answered and callAt are pair's, for each exchange in turn.
	pairing  pairing
	answered []bool
	callAt   callPositions
	// calls and ints are the arrays the exchanges' tool calls, and their
	// slots' part and call positions, are cut from (carve): a few slices
	// for each exchange, hundreds of exchanges in a request.
	calls []history.ToolCall
	ints  []int
}

// carve returns arena[from:] as a slice of its own (its capacity its
// length: an append to it copies), nil when it is empty.
func carve[T any](arena []T, from int) []T {
	if len(arena) == from {
		return nil
	}
	return arena[from:len(arena):len(arena)]
}

// callPositions maps call ids to positions, for one exchange at a time: a
// list searched in order while it is short (an exchange holds a few
// calls; clearing and filling a map for each cost more than the
// search), a map once it holds more than smallCalls.
type callPositions struct {
	ids []string
	at  []int
	m   map[string]int
}

const smallCalls = 16

// reset empties x, keeping its memory.
func (x *callPositions) reset() {
	clear(x.ids) // no call id of an earlier request stays reachable
	x.ids, x.at = x.ids[:0], x.at[:0]
	if x.m != nil {
		clear(x.m)
	}
}

// get returns the position of id, if x holds it.
func (x *callPositions) get(id string) (int, bool) {
	if len(x.ids) > smallCalls {
		at, ok := x.m[id]
		return at, ok
	}
	for k, s := range x.ids {
		if s == id {
			return x.at[k], true
		}
	}
	return 0, false
}

// set records that id is at position at; id is not in x.
func (x *callPositions) set(id string, at int) {
	x.ids, x.at = append(x.ids, id), append(x.at, at)
	switch n := len(x.ids); {
	case n == smallCalls+1:
		if x.m == nil {
			x.m = make(map[string]int, 2*n)
		}
		for k, s := range x.ids {
			x.m[s] = x.at[k]
		}
	case n > smallCalls+1:
		x.m[id] = at
	}
}

// convert converts items (see ToHistory), recognising the notices a trim
// with opts inserts (see notice.Mark), counting the reasoning items the
// API reads under rc; through memo, when it is not nil.
func convert(items []Item, opts []history.Option, rc reasoningContext, memo *itemMemo) (*conversion, error) {
	c, err := convertItems(items, assistantNotices(opts), rc, memo)
	if err != nil {
		return nil, err
	}
	notice.Mark(c.hist, opts, readNotice, nil)
	return c, nil
}

// assistantNotices returns the texts of the notices a trim with opts, or
// with the defaults, renders in the assistant role: such an item is a
// message of its own (see builder.add), as ToHistory reads a rendered
// notice.
func assistantNotices(opts []history.Option) []string {
	var texts []string
	turn, step, _ := history.Breadcrumbs(opts...)
	dturn, dstep, _ := history.Breadcrumbs()
	for _, b := range []history.Message{turn, step, dturn, dstep} {
		if b.Role == history.RoleAssistant {
			texts = append(texts, noticeText(b))
		}
	}
	return texts
}

// readNotice returns the notice b as the conversion reads it once Trim has
// rendered it as an item.
func readNotice(b history.Message) []history.Message {
	c, _ := convertItems([]Item{fromBreadcrumb(b)}, nil, currentTurn, nil) // a rendered notice always converts
	return c.hist
}

// convertItems is convert without the recognition of notices: notices are
// the assistant-role notice texts, whose items stand alone. Items are read
// through memo when it is not nil.
func convertItems(items []Item, notices []string, rc reasoningContext, memo *itemMemo) (*conversion, error) {
	c := &conversion{memo: memo, items: items}
	if memo != nil {
		if p, _ := viewArrays.Get().(*[]view); p != nil && cap(*p) >= len(items) {
			c.views = (*p)[:len(items)] // each set below before it is read
		}
		if p, _ := histArrays.Get().(*histArray); p != nil {
			if cap(p.hist) >= len(items) {
				c.hist = p.hist[:0]
			}
			if cap(p.slots) >= len(items) {
				c.slots = p.slots[:0]
			}
			c.groups, c.starts, c.ints = p.groups[:0], p.starts[:0], p.ints[:0]
		}
	}
	if c.hist == nil {
		c.hist = make([]history.Message, 0, len(items))
	}
	if c.slots == nil {
		c.slots = make([]regroup.Slot, 0, len(items))
	}
	if c.views == nil {
		c.views = make([]view, len(items))
	}
	latest := -1 // the latest user message
	calls := 0   // call items (an output may add a referenced call: rare)
	for i := range items {
		v, err := memo.read(&items[i])
		if err != nil {
			return nil, invalid(i, err)
		}
		c.views[i] = v
		switch v.cls {
		case clsUser:
			latest = i
		case clsCall:
			calls++
		}
	}
	// Each item is at most one part position and one slot's, each call
	// (and each output, for a referenced call) one call position.
	c.calls = make([]history.ToolCall, 0, calls)
	if n := 3 * len(items); cap(c.ints) < n {
		c.ints = make([]int, 0, n)
	}
	if !rc.allTurns {
		// The API ignores the reasoning of earlier turns: it costs
		// nothing. The empty part still marks the exchange as holding
		// reasoning (its calls are sent as they were).
		for i := range latest {
			if v := &c.views[i]; v.cls == clsReasoning {
				v.parts = noReasoning
			}
		}
	}
	b := builder{c: c, items: items, notices: notices, start: -1}
	for i := range items {
		if err := b.add(i); err != nil {
			return nil, err
		}
	}
	if err := b.close(len(items)); err != nil {
		return nil, err
	}
	return c, nil
}

// noReasoning is the parts of a reasoning item of an earlier turn, which
// the API ignores (see convertItems): one empty reasoning part, shared by
// every such view (parts are read, never written to; its capacity is its
// length, so an append copies).
var noReasoning = []history.Part{{Type: history.PartReasoning}}[:1:1]

// builder groups items into exchanges and converts each group.
//
// A group is a run of items that the core must keep or drop together. Model
// output (reasoning, messages, calls, hosted tool calls, references) opens
// a group; the tool outputs that follow it join it, as in the core's
// positional pairing (an output answers the nearest preceding model
// output). Further model output after outputs opens a new group, so that
// each step of an agent turn is a group of its own, unless the group is
// bound: it holds a reasoning item or a reference, and the model output
// that follows its outputs (the rest of a response whose parallel calls
// were answered one by one) may need that reasoning, so it stays in the
// group until the next reasoning item or reference. Any other item (a
// user, system or developer message, a compaction item) closes the group
// and stands alone.
type builder struct {
	c       *conversion
	items   []Item
	notices []string
	// The open group: its first item (-1 when none), whether model output
	// opened it, whether it is bound, whether outputs joined it, and
	// whether model output joined it after outputs (which only binding
	// allows).
	start                                int
	assistant, bound, results, continued bool
}

// add places item i in a group.
func (b *builder) add(i int) error {
	v := &b.c.views[i]
	switch v.cls {
	case clsOutput, clsCall, clsReasoning, clsOpaque:
		if v.plain && slices.Contains(b.notices, v.parts[0].Text) {
			// A rendered assistant-role notice stands alone, so that it
			// reads as one.
			if err := b.close(i); err != nil {
				return err
			}
			b.start, b.assistant = i, true
			return b.close(i + 1)
		}
		stays := v.cls != clsReasoning && v.cls != clsOpaque
		if b.start < 0 || !b.assistant || (b.results && !(b.bound && stays)) {
			if err := b.close(i); err != nil {
				return err
			}
			b.start, b.assistant = i, true
		} else if b.results {
			b.continued = true
		}
		if !stays {
			b.bound = true
		}
	case clsResult, clsNudge:
		if b.start >= 0 && b.assistant {
			b.results = b.results || v.cls == clsResult
			return nil
		}
		if err := b.close(i); err != nil {
			return err
		}
		b.start = i
		return b.close(i + 1)
	default:
		if err := b.close(i); err != nil {
			return err
		}
		b.start = i
		return b.close(i + 1)
	}
	return nil
}

// close converts the open group, items [b.start, end), if any.
//
// A group that model output joined after its outputs on the strength of
// its binding is bound only by a reasoning item that stays (one that
// precedes an item it can precede) or a reference. When none stays, the
// repaired output would not be bound, and would read as more steps than
// the core counted: the group is then split where that model output
// begins, and the rest is grouped anew.
func (b *builder) close(end int) error {
	start := b.start
	if start < 0 {
		return nil
	}
	assistant, continued := b.assistant, b.continued
	b.start, b.assistant, b.bound, b.results, b.continued = -1, false, false, false, false
	c := b.c
	if !assistant {
		c.groups = append(c.groups, b.items[start:end:end])
		c.starts = append(c.starts, start)
		c.hist = append(c.hist, standalone(&c.views[start]))
		c.slots = append(c.slots, regroup.Slot{Native: len(c.groups) - 1})
		return nil
	}
	x := c.pair(start, end)
	if continued && !x.bound {
		split := start
		for split < end && c.views[split].cls != clsResult {
			split++
		}
		for split < end && (c.views[split].cls == clsResult || c.views[split].cls == clsNudge) {
			split++
		}
		c.exchange(start, split, c.pair(start, split))
		for i := split; i < end; i++ {
			if err := b.add(i); err != nil {
				return err
			}
		}
		return b.close(end)
	}
	c.exchange(start, end, x)
	return nil
}

// resized returns s with n zero elements, in s's array when it is large
// enough.
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// standalone converts an item that is a group of its own and is no model
// output: a message, a compaction item, a trigger, an output that follows
// no model output (an orphan the sweep removes).
func standalone(v *view) history.Message {
	m := history.Message{Content: v.content, Parts: v.parts}
	switch v.cls {
	case clsUser:
		m.Role = history.RoleUser
	case clsSystem:
		m.Role = history.RoleSystem
	case clsCompaction:
		m.Role, m.Kind = history.RoleAssistant, history.KindSummary
	case clsNudge:
		m.Role, m.Kind = history.RoleUser, history.KindNudge
	case clsResult:
		m.Role, m.ToolCallID = history.RoleTool, v.callID
		if v.fixed {
			m.Kind = history.KindElided
		}
	}
	return m
}

// pairing is how the items of an exchange pair: the assistant message's
// tool calls (each with the position of its call item, -1 for a
// referenced call), the call id each output answers, and the reasoning
// items that precede nothing they can precede.
type pairing struct {
	calls   []history.ToolCall
	callPos []int
	pair    []string // per item: the call id an output answers; "" for none
	unbound []bool   // per item: a reasoning item that precedes nothing it can precede
	// bound reports that a reasoning item that stays, or a reference,
	// binds the exchange.
	bound bool
}

// pair pairs the items [start, end) of an exchange as the core will: each
// output answers a call of the exchange before it by id, once; later
// answers are orphans. In a bound exchange calls may follow outputs, which
// they never answer. An output whose call is not in the exchange answers a
// referenced item when a reference precedes it (see the package
// documentation). A call whose call id an earlier call of the exchange
// has answers nothing. A reasoning item stays only while the item after
// it stays: model output, a reference, an answered call, or a reasoning
// item that stays.
//
// The pairing returned is valid until the next call (an exchange is
// converted before the next is paired); its calls and callPos are new.
func (c *conversion) pair(start, end int) *pairing {
	vs := c.views[start:end]
	x := &c.pairing
	*x = pairing{pair: resized(x.pair, len(vs)), unbound: resized(x.unbound, len(vs))}
	calls0, pos0 := len(c.calls), len(c.ints)
	defer func() { x.calls, x.callPos = carve(c.calls, calls0), carve(c.ints, pos0) }()
	callAt := &c.callAt // position of the first call with each call id; -1: a referenced call
	callAt.reset()
	c.answered = resized(c.answered, len(vs))
	answered := c.answered // per call item: answered
	for p := range vs {
		v := &vs[p]
		if v.cls != clsCall {
			continue
		}
		id := v.callID
		if _, dup := callAt.get(id); dup {
			// A second call with an id in one exchange answers nothing:
			// outputs answer the first. The sweep drops it.
			id = duplicatePrefix + strconv.Itoa(start+p) + ":" + id
		} else {
			callAt.set(id, p)
		}
		c.calls = append(c.calls, history.ToolCall{ID: id, Name: v.name, Arguments: v.args})
		c.ints = append(c.ints, p)
	}
	ref := false // a reference came before
	for p := range vs {
		v := &vs[p]
		if v.cls == clsOpaque {
			ref, x.bound = true, true
		}
		if v.cls != clsResult {
			continue
		}
		id := v.callID
		if v.typ == "local_shell_call_output" {
			id = shellCallID(vs[:p], id)
		}
		at, known := callAt.get(id)
		switch {
		case known && at >= 0 && at < p && !answered[at]:
			answered[at], x.pair[p] = true, id
		case !known && ref:
			c.calls = append(c.calls, history.ToolCall{ID: id, Name: "referenced"})
			c.ints = append(c.ints, -1)
			callAt.set(id, -1)
			x.pair[p] = id
		}
	}
	for p := len(vs) - 1; p >= 0; p-- {
		if vs[p].cls != clsReasoning {
			continue
		}
		ok := false
		if p+1 < len(vs) {
			switch vs[p+1].cls {
			case clsOutput, clsOpaque:
				ok = true
			case clsCall:
				ok = answered[p+1]
			case clsReasoning:
				ok = !x.unbound[p+1]
			}
		}
		x.unbound[p] = !ok
		x.bound = x.bound || ok
	}
	return x
}

// exchange converts the exchange of items [start, end), paired as x, as
// a group of its own: one assistant message holding the model output (its
// text, reasoning and media as parts, its calls as tool calls), then, in
// item order, one tool message for each output, one nudge for each
// trigger, and one orphan tool message for each reasoning item that
// precedes nothing it can precede, which the core's orphan sweep then
// removes.
func (c *conversion) exchange(start, end int, x *pairing) {
	c.groups = append(c.groups, c.items[start:end:end])
	c.starts = append(c.starts, start)
	g := len(c.groups) - 1
	vs := c.views[start:end]
	a := history.Message{Role: history.RoleAssistant, ToolCalls: x.calls}
	parts0 := len(c.ints)
	hasResults := false
	for p := range vs {
		switch v := &vs[p]; {
		case v.cls == clsResult || v.cls == clsNudge:
			hasResults = hasResults || v.cls == clsResult
		case !x.unbound[p]:
			c.ints = append(c.ints, p)
			if len(a.Parts) == 0 && len(v.parts) > 0 {
				// Parts are never written to once read (the core reads
				// its messages; a.Parts is clipped): the first item's
				// parts are the message's until another's join them.
				a.Parts = slices.Clip(v.parts)
			} else {
				a.Parts = append(a.Parts, v.parts...)
			}
		}
	}
	parts := carve(c.ints, parts0)
	if len(parts) == 1 && len(a.ToolCalls) == 0 && vs[parts[0]].plain {
		// One assistant message holding a string: its text is the
		// content, as in a notice the core inserts in the assistant role.
		a.Content, a.Parts = vs[parts[0]].parts[0].Text, nil
	}
	if bindsCalls(vs, x) && !slices.ContainsFunc(a.Parts, isReasoning) {
		// Reasoning with nothing to count (a bare reasoning item, a
		// reference that may be one) or a call Trim cannot rewrite: an
		// empty reasoning part, which costs nothing, tells the core that
		// the message must be sent as it was, its calls' arguments
		// included (history.ElideOptions.ClearArguments).
		a.Parts = append(a.Parts, history.Part{Type: history.PartReasoning})
	}
	if len(parts) > 0 || hasResults {
		if parts == nil {
			parts = []int{} // an empty message that maps to no item: it ends the previous exchange
		}
		c.hist = append(c.hist, a)
		c.slots = append(c.slots, regroup.Slot{Native: g, Parts: parts, Calls: x.callPos})
	}
	for p := range vs {
		v := &vs[p]
		var m history.Message
		switch {
		case v.cls == clsResult:
			// An output that answers no call of the group must not pair
			// with one in the core either (a call after it, a call
			// answered before): its id is made one no call has.
			m = standalone(v)
			m.ToolCallID = x.pair[p]
			if m.ToolCallID == "" {
				m.ToolCallID = unpairedPrefix + v.callID
			}
		case v.cls == clsNudge:
			m = standalone(v)
		case x.unbound[p]:
			id := v.id
			if id == "" {
				id = "#" + strconv.Itoa(start+p)
			}
			m = history.Message{Role: history.RoleTool, ToolCallID: unboundPrefix + id, Parts: v.parts, Kind: history.KindElided}
		default:
			continue
		}
		c.hist = append(c.hist, m)
		c.ints = append(c.ints, p)
		c.slots = append(c.slots, regroup.Slot{Native: g, Parts: carve(c.ints, len(c.ints)-1)})
	}
}

// bindsCalls reports whether the calls of the exchange vs, paired as x,
// must be sent as they were: it holds a reasoning item that stays (the API
// binds reasoning to the items after it), an item the adapter cannot see
// into (a reference, which may be a reasoning item, or an unknown type),
// or a call whose arguments Trim cannot rewrite (view.keepArgs).
func bindsCalls(vs []view, x *pairing) bool {
	for p := range vs {
		v := &vs[p]
		switch {
		case v.cls == clsReasoning && !x.unbound[p], v.cls == clsOpaque, v.cls == clsCall && v.keepArgs:
			return true
		}
	}
	return false
}

func isReasoning(p history.Part) bool { return p.Type == history.PartReasoning }

// shellCallID returns the call id a local_shell_call_output with id
// answers: id itself, unless no call of the group has that call id and a
// local_shell_call has it as its item id, in which case that call's call id.
func shellCallID(vs []view, id string) string {
	for p := range vs {
		if vs[p].cls == clsCall && vs[p].callID == id {
			return id
		}
	}
	for p := range vs {
		if vs[p].cls == clsCall && vs[p].typ == "local_shell_call" && vs[p].id == id {
			return vs[p].callID
		}
	}
	return id
}

// apply maps res, a decision on c.hist, back onto items (see Trim), and
// says where each item of the output came from (its index in items, -1 for
// a notice).
func (c *conversion) apply(items []Item, res history.Result, into []Item) ([]Item, []int) {
	if regroup.Unchanged(res, c.hist) {
		from := make([]int, len(items))
		for i := range from {
			from[i] = i
		}
		return items[:len(items):len(items)], from
	}
	// keep and item keep none of the groups: their array goes back.
	groups := regroup.Borrowed(res, c.hist, c.slots)
	defer regroup.Return(groups)
	n := 0 // the items of the groups kept, and the notices: the most the output holds
	for i := range groups {
		if g := groups[i].Native; g >= 0 {
			n += len(c.groups[g])
		} else {
			n++
		}
	}
	out := into[:0]
	if cap(out) < n {
		out = make([]Item, 0, n)
	}
	from := make([]int, 0, n)
	for i := range groups {
		g := &groups[i]
		if g.Native < 0 {
			out, from = append(out, fromBreadcrumb(g.Notice)), append(from, -1)
			continue
		}
		orig, start := c.groups[g.Native], c.starts[g.Native]
		for p, ok := range c.keep(g, orig) {
			if ok {
				out, from = append(out, c.item(g, orig, p)), append(from, start+p)
			}
		}
	}
	return out, from
}

// keep says which items of the group orig the trim keeps: those its kept
// messages stand for, without the calls the orphan sweep stripped, and
// without a reasoning item whose following item is not kept, so that the
// output never holds one the API rejects. A group kept whole keeps all.
func (c *conversion) keep(g *regroup.Group, orig []Item) []bool {
	if g.Whole {
		keep := make([]bool, len(orig))
		for p := range keep {
			keep[p] = true
		}
		return keep
	}
	vs := c.views[c.starts[g.Native]:]
	keep := g.Keep(len(orig))
	for p := len(orig) - 1; p >= 0; p-- {
		if keep[p] && vs[p].cls == clsReasoning && (p+1 == len(orig) || !keep[p+1]) {
			keep[p] = false
		}
	}
	return keep
}

// item returns item p of the group orig as the trim sends it: the
// caller's, an output the core elided as its elided copy, a call whose
// arguments the core cleared as a copy holding them. The core clears only
// calls of exchanges that bindsCalls leaves unmarked, whose calls are all
// function and custom tool calls the model made: withArguments rewrites
// each of them.
func (c *conversion) item(g *regroup.Group, orig []Item, p int) Item {
	v := &c.views[c.starts[g.Native]+p]
	if text, ok := g.Elided[p]; ok && v.cls == clsResult && !v.fixed {
		return c.memo.rewrite(orig[p], text, false)
	}
	if args, ok := g.Args[p]; ok {
		return c.memo.rewrite(orig[p], args, true)
	}
	return orig[p]
}

// withArguments returns a copy of the call item u holding args, the
// arguments history.ElideOptions.ClearArguments left: as the arguments of
// a function call, the input of a custom tool call. Its ids, name,
// namespace, status and extra fields are kept; an item built with
// param.Override is rewritten at the JSON level, keeping unknown keys. u
// is not modified. Other items are returned as they are: the conversion
// keeps the core from clearing them (see bindsCalls).
func withArguments(u Item, args string) Item {
	if needsJSON(&u) {
		return withArgumentsJSON(u, args)
	}
	switch {
	case u.OfFunctionCall != nil:
		c := *u.OfFunctionCall
		c.Arguments = args
		u.OfFunctionCall = &c
	case u.OfCustomToolCall != nil:
		c := *u.OfCustomToolCall
		c.Input = args
		u.OfCustomToolCall = &c
	}
	return u
}

// withArgumentsJSON is withArguments for an item built with
// param.Override: it replaces the "arguments" (or "input") of its JSON
// form and returns an override.
func withArgumentsJSON(u Item, args string) Item {
	raw, err := rawJSON(&u)
	return rewriteJSON(u, raw, err, func(typ string, obj map[string]json.RawMessage) bool {
		key := ""
		switch typ {
		case "function_call":
			key = "arguments"
		case "custom_tool_call":
			key = "input"
		default:
			return false
		}
		obj[key], _ = json.Marshal(args) // a string always encodes
		return true
	})
}

// rewriteJSON returns u, whose JSON form is raw (or err), rewritten at the
// JSON level: edit changes the keys of its object, given its "type", and
// the result is an override of that object, so unknown keys survive. u
// is returned as it is when it does not encode to an object or edit
// returns false.
func rewriteJSON(u Item, raw []byte, err error, edit func(typ string, obj map[string]json.RawMessage) bool) Item {
	if err != nil {
		return u
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return u
	}
	var typ string
	_ = json.Unmarshal(obj["type"], &typ)
	if !edit(typ, obj) {
		return u
	}
	if raw, err = json.Marshal(obj); err != nil {
		return u
	}
	return newOverride(raw)
}

// elide returns a copy of the output item u holding text, the placeholder
// the core elided it to, as its output: a plain string for function,
// custom tool and local shell outputs, the output of an apply_patch output,
// the result of a program output, and one chunk of stdout (with the last
// chunk's outcome) for a shell output. Its call id, status and extra
// fields are kept. An item built with param.Override is rewritten at the
// JSON level, keeping unknown keys. u is not modified.
func elide(u Item, text string) Item {
	if needsJSON(&u) {
		return elideJSON(u, text)
	}
	switch {
	case u.OfFunctionCallOutput != nil:
		o := *u.OfFunctionCallOutput
		o.Output = responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(text)}
		u.OfFunctionCallOutput = &o
	case u.OfCustomToolCallOutput != nil:
		o := *u.OfCustomToolCallOutput
		o.Output = responses.ResponseCustomToolCallOutputOutputUnionParam{OfString: param.NewOpt(text)}
		u.OfCustomToolCallOutput = &o
	case u.OfLocalShellCallOutput != nil:
		o := *u.OfLocalShellCallOutput
		o.Output = text
		u.OfLocalShellCallOutput = &o
	case u.OfShellCallOutput != nil:
		o := *u.OfShellCallOutput
		chunk := responses.ResponseFunctionShellCallOutputContentParam{Stdout: text}
		if n := len(o.Output); n > 0 {
			chunk.Outcome = o.Output[n-1].Outcome
		} else {
			chunk.Outcome.OfExit = &responses.ResponseFunctionShellCallOutputContentOutcomeExitParam{}
		}
		o.Output = []responses.ResponseFunctionShellCallOutputContentParam{chunk}
		u.OfShellCallOutput = &o
	case u.OfApplyPatchCallOutput != nil:
		o := *u.OfApplyPatchCallOutput
		o.Output = param.NewOpt(text)
		u.OfApplyPatchCallOutput = &o
	case u.OfProgramOutput != nil:
		o := *u.OfProgramOutput
		o.Result = text
		u.OfProgramOutput = &o
	}
	return u
}

// elideJSON is elide for an item built with param.Override: it replaces
// the output (or result) of its JSON form and returns an override.
func elideJSON(u Item, text string) Item {
	raw, err := json.Marshal(u)
	return rewriteJSON(u, raw, err, func(typ string, obj map[string]json.RawMessage) bool {
		str, _ := json.Marshal(text) // a string always encodes
		switch typ {
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output", "apply_patch_call_output":
			obj["output"] = str
		case "program_output":
			obj["result"] = str
		case "shell_call_output":
			outcome := json.RawMessage(`{"type":"exit","exit_code":0}`)
			var chunks []struct {
				Outcome json.RawMessage `json:"outcome"`
			}
			if json.Unmarshal(obj["output"], &chunks) == nil && len(chunks) > 0 && len(chunks[len(chunks)-1].Outcome) > 0 {
				outcome = chunks[len(chunks)-1].Outcome
			}
			obj["output"], _ = json.Marshal([]map[string]json.RawMessage{{"stdout": str, "stderr": json.RawMessage(`""`), "outcome": outcome}})
		default:
			return false
		}
		return true
	})
}

// fromBreadcrumb renders the notice b as an easy input message of its role
// (developer for history.RoleSystem) whose content is one string: its
// Content and the text of its text parts, a line each. Responses messages
// have no author name: b.Name is not rendered.
func fromBreadcrumb(b history.Message) Item {
	role := adapt.ByRole(b.Role, responses.EasyInputMessageRoleDeveloper, responses.EasyInputMessageRoleUser, responses.EasyInputMessageRoleAssistant)
	return Item{OfMessage: &responses.EasyInputMessageParam{
		Role:    role,
		Content: responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(noticeText(b))},
	}}
}

// noticeText is the text fromBreadcrumb renders for b.
func noticeText(b history.Message) string {
	texts := []string{b.Content}
	for _, p := range b.Parts {
		if p.Type == history.PartText {
			texts = append(texts, p.Text)
		}
	}
	return joinText(texts)
}

func quote(s string) string { return strconv.Quote(s) }
