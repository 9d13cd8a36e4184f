// Package adapt is the shape every SDK adapter shares. An adapter supplies
// its conversion both ways (a Codec's Convert, which returns a View whose
// Back maps a decision onto the native messages), its provider's rules (the
// options they add, and a table its Validate walks, see Rules), the reader
// of its SDK's errors and its Overhead; this package does the rest once:
// options applied once per call, the notices recognised, pins translated
// from native indices, the trim, the recovery from an overflow, the
// mapping back, positions in native indices, the stateful Trimmer, and
// the errors every adapter returns.
//
// The contract every adapter keeps (docs/adapters.md, "The contract"):
//
//   - Errors: a native message that does not convert is a *MessageError
//     wrapping history.ErrInvalidMessage; a pairing violation found by
//     Validate a *PairingError carrying the call id; the core's errors
//     otherwise.
//   - The Result describes the native messages: its Messages and Kept are
//     the conversion of the native slice (a system prompt the SDK takes
//     separately counts in its token figures but is not in Messages).
//   - Pins (history.WithPin) are indices into the native slice given;
//     Positions returns native positions in the output.
//   - RecoverOverflow reads the provider's error through the adapter's
//     reader, as the adapter's IsContextOverflow does.
package adapt

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/optset"
	"github.com/histrim/history/internal/pins"
	"github.com/histrim/history/internal/regroup"
)

// View is a native request converted for a trim.
type View[N any] struct {
	// Hist is the converted history: Lead messages that stand for no
	// native message (a system prompt the SDK takes separately), then
	// those of the native messages.
	Hist []history.Message
	Lead int
	// N is the number of native messages.
	N int
	// Of returns the indices in Hist[Lead:] of the messages native message
	// i converted to, ascending; none for a message the conversion leaves
	// out.
	Of func(i int) []int
	// Back maps res, a decision on Hist[Lead:], onto the native messages:
	// the output, and for each of its messages the index of the native
	// message it is or was cut from (-1 for a notice).
	Back func(res history.Result) (out []N, from []int)
	// Release, when not nil, is called by RawSplice's codec once it has
	// read the messages Back returned, which the View may then reuse: a
	// caller that calls it reads nothing Back returned afterwards.
	Release func()
}

// Codec is what an adapter supplies to the entry points of this package,
// for requests whose native messages are of type N and whose other part
// (a system prompt the SDK takes separately) is of type R (struct{} when
// there is none).
type Codec[R, N any] struct {
	// Name names the adapter in errors ("openai": "history/openai: ...").
	Name string
	// Noun names one native message in errors: "message", "item",
	// "content".
	Noun string
	// Convert converts a request, marking as history.KindBreadcrumb the
	// notices a trim with opts inserted (see notice.Mark). A native
	// message that does not convert is a *MessageError (see Invalid).
	Convert func(r R, msgs []N, opts []history.Option) (*View[N], error)
	// Rules are the options the provider's rules add to every trim
	// (rules.LooseReasoning).
	Rules []history.Option
	// Overflow returns the error the core's classifier should read for a
	// provider error (what the SDK hides from it); nil reads it as it is.
	Overflow func(error) error
}

// Once returns opts resolved into one option (see optset), so that the
// reads of one call apply the user's options once; opts itself when the
// core does not provide the resolution.
func Once(opts []history.Option) []history.Option {
	if optset.Resolve == nil || len(opts) == 0 {
		return opts
	}
	return []history.Option{optset.Resolve(opts).(history.Option)}
}

// prepared is a request converted and its options made ready for the
// core: resolved once, the pins translated, the provider's rules added.
type prepared[N any] struct {
	v    *View[N]
	opts []history.Option
}

// prepare converts r and msgs for a trim with opts.
func (c *Codec[R, N]) prepare(r R, msgs []N, opts []history.Option) (prepared[N], error) {
	opts = Once(opts)
	v, err := c.Convert(r, msgs, opts)
	if err != nil {
		return prepared[N]{}, err
	}
	if opts, err = c.TranslatePins(v, opts); err != nil {
		return prepared[N]{}, err
	}
	return prepared[N]{v, append(slices.Clip(opts), c.Rules...)}, nil
}

// Trim is an adapter's Trim: r and msgs converted, trimmed to budget with
// history.TrimToRecentTurns and mapped back. On an error other than a
// *history.BudgetError the messages are nil.
func (c *Codec[R, N]) Trim(r R, msgs []N, budget int, opts []history.Option) ([]N, history.Result, error) {
	out, res, _, err := c.Decide(r, msgs, budget, opts, func(hist []history.Message, opts []history.Option) (history.Result, error) {
		return history.TrimToRecentTurns(hist, budget, opts...)
	})
	return out, res, err
}

// RecoverOverflow is an adapter's RecoverOverflow: msgs, what the
// rejected request sent, converted, trimmed with history.RecoverOverflow
// (providerErr read through c.Overflow) and mapped back. Its results are
// the core's: history.ErrNotOverflow with msgs itself, clipped; a
// *history.RecoverError, whose Err is providerErr as given, with what is
// left; nil messages on any other error.
func (c *Codec[R, N]) RecoverOverflow(r R, msgs []N, providerErr error, attempt int, opts []history.Option) ([]N, history.Result, error) {
	out, res, _, err := c.Recover(r, msgs, providerErr, attempt, opts)
	return out, res, err
}

// Recover is RecoverOverflow that also returns, for each output message,
// the index in msgs of the message it came from (-1 for a notice).
func (c *Codec[R, N]) Recover(r R, msgs []N, providerErr error, attempt int, opts []history.Option) ([]N, history.Result, []int, error) {
	out, res, from, err := c.Decide(r, msgs, 0, opts, func(hist []history.Message, opts []history.Option) (history.Result, error) {
		return history.RecoverOverflow(hist, c.read(providerErr), attempt, opts...)
	})
	return out, res, from, c.restore(err, providerErr)
}

// Decide converts r and msgs, lets decide trim the conversion with the
// options made ready for the core (resolved once, pins translated, the
// provider's rules added), and maps its decision back: the native output,
// the Result without the messages of no native message, and for each
// output message the index in msgs of the message it came from (-1 for a
// notice). A conversion or pin error comes with a Result holding only
// budget.
func (c *Codec[R, N]) Decide(r R, msgs []N, budget int, opts []history.Option,
	decide func(hist []history.Message, opts []history.Option) (history.Result, error)) ([]N, history.Result, []int, error) {
	p, err := c.prepare(r, msgs, opts)
	if err != nil {
		return nil, history.Result{Budget: budget}, nil, err
	}
	return p.finish(decide(p.v.Hist, p.opts))
}

// read returns what the core's classifier reads for err.
func (c *Codec[R, N]) read(err error) error {
	if c.Overflow == nil || err == nil {
		return err
	}
	return c.Overflow(err)
}

// restore makes a *history.RecoverError carry the provider's error as the
// caller gave it rather than what the classifier read.
func (c *Codec[R, N]) restore(err, providerErr error) error {
	var re *history.RecoverError
	if c.Overflow != nil && errors.As(err, &re) {
		re.Err = providerErr
	}
	return err
}

// IsOverflow reports whether err is a context overflow as the adapter
// reads it (history.IsContextOverflow through c.Overflow).
func (c *Codec[R, N]) IsOverflow(err error) bool {
	return history.IsContextOverflow(c.read(err))
}

// finish maps the core's answer on p's conversion back: the Result
// without the leading messages of no native message, the native output
// and where each of its messages came from. A Result without a decision
// gives nil messages; a decision that leaves nothing to send (an empty
// history, or one whose only message the sweep emptied), an empty
// non-nil slice, so that trimming the output again gives the same output.
func (p prepared[N]) finish(res history.Result, err error) ([]N, history.Result, []int, error) {
	if len(res.Messages) == 0 {
		if err == nil && res.Kept != nil {
			return []N{}, res, []int{}, nil
		}
		return nil, res, nil, err
	}
	res = withoutLead(res, p.v.Lead)
	out, from := p.v.Back(res)
	return out, res, from, err
}

// withoutLead reports res, a Result over lead leading messages (a system
// prompt, which the trim always keeps first) followed by the native
// messages' conversion, in terms of the latter: the leading messages are
// removed from Messages, and Kept and Modified are shifted down.
func withoutLead(res history.Result, lead int) history.Result {
	if lead == 0 || len(res.Messages) < lead {
		return res
	}
	res.Messages = res.Messages[lead:]
	if res.Kept != nil {
		kept := make([]int, len(res.Kept)-lead)
		for j, k := range res.Kept[lead:] {
			kept[j] = k
			if k >= lead {
				kept[j] = k - lead
			}
		}
		res.Kept = kept
	}
	if res.Modified != nil {
		mod := make([]int, 0, len(res.Modified))
		for _, j := range res.Modified {
			if j >= lead { // a leading message is never modified
				mod = append(mod, j-lead)
			}
		}
		res.Modified = mod
	}
	return res
}

// TranslatePins returns opts with the pins of history.WithPin, indices into
// the native messages, translated to the indices of v.Hist: a pinned native
// message pins every message it converted to. A pin the core could not
// honour on the converted messages is refused with the *history.OptionError
// the core returns for one, naming the native index: one outside the
// native messages, on a message left out, on tool calls or results (they
// cannot be kept apart from their pairs), or on a notice (a trim replaces
// it). opts is returned as it is when it pins nothing.
func (c *Codec[R, N]) TranslatePins(v *View[N], opts []history.Option) ([]history.Option, error) {
	native := pins.Read(opts)
	if len(native) == 0 {
		return opts, nil
	}
	out := make([]int, 0, len(native))
	for _, i := range native {
		if i >= v.N {
			return nil, &history.OptionError{Option: "WithPin", Reason: "index " + strconv.Itoa(i) + " is outside the history of " + strconv.Itoa(v.N) + " " + c.Noun + "s"}
		}
		js := v.Of(i)
		if len(js) == 0 {
			return nil, c.pinError(i, "is not sent (the conversion leaves it out)")
		}
		for _, j := range js {
			m := &v.Hist[v.Lead+j]
			switch {
			case m.Role == history.RoleTool:
				return nil, c.pinError(i, "is a tool result; it cannot be kept without its call")
			case len(m.ToolCalls) > 0:
				return nil, c.pinError(i, "has tool calls; it cannot be kept without their results")
			case m.Kind == history.KindBreadcrumb:
				return nil, c.pinError(i, "is a notice, which a trim replaces")
			}
			out = append(out, v.Lead+j)
		}
	}
	return append(slices.Clip(opts), history.WithPin(out...)), nil
}

// pinError is the *history.OptionError for a pin on native message i.
func (c *Codec[R, N]) pinError(i int, reason string) error {
	return &history.OptionError{Option: "WithPin", Reason: c.Noun + " " + strconv.Itoa(i) + " " + reason}
}

// Positions is an adapter's Positions: where the native messages of msgs
// at indices i landed in the native output of the trim of msgs that
// returned res (Trim's or RecoverOverflow's), for history.WithPin on a
// later trim of that output. msgs is converted again, with the default
// notices; an index that is not in the output (dropped, or out of range)
// gives -1, and a message cut down gives the position of its copy.
func (c *Codec[R, N]) Positions(msgs []N, res history.Result, i ...int) []int {
	var zero R
	v, err := c.Convert(zero, msgs, nil)
	if err != nil || len(res.Messages) == 0 {
		return minusOnes(len(i))
	}
	_, from := v.Back(res)
	return Find(from, i)
}

// Find returns, for each index of i, the position of its first occurrence
// in from, or -1.
func Find(from, i []int) []int {
	out := minusOnes(len(i))
	for q, k := range i {
		if k >= 0 {
			out[q] = slices.Index(from, k)
		}
	}
	return out
}

func minusOnes(n int) []int {
	out := make([]int, n)
	for q := range out {
		out[q] = -1
	}
	return out
}

// Follow returns where the pinned native messages of a trim's input are in
// its output, ascending: Find(from, pinned) without the ones the output
// lost.
func Follow(from, pinned []int) []int {
	var out []int
	for _, j := range Find(from, pinned) {
		if j >= 0 {
			out = append(out, j)
		}
	}
	slices.Sort(out)
	return out
}

// OneForOne returns the View of msgs, which convert one for one to hist,
// mapped back with regroup.OneForOne.
func OneForOne[N any](msgs []N, hist []history.Message, notice func(b history.Message) N, elide, calls func(orig N, m *history.Message) N) *View[N] {
	return &View[N]{Hist: hist, N: len(msgs),
		Of: func(i int) []int { return []int{i} },
		Back: func(res history.Result) ([]N, []int) {
			return regroup.OneForOne(msgs, hist, res, notice, elide, calls)
		}}
}

// Grouped returns the View of msgs converted to hist, whose first lead
// messages stand for no native message and whose others come from
// slots[j].Native (consecutive, ascending), mapped back with regroup.Apply.
func Grouped[N any](msgs []N, hist []history.Message, lead int, slots []regroup.Slot,
	notice func(b history.Message, next *regroup.Group) N, cut func(orig N, g *regroup.Group) (N, bool)) *View[N] {
	conv := hist[lead:]
	return &View[N]{Hist: hist, Lead: lead, N: len(msgs),
		Of: func(i int) []int {
			j, _ := slices.BinarySearchFunc(slots, i, func(s regroup.Slot, i int) int { return s.Native - i })
			var out []int
			for ; j < len(slots) && slots[j].Native == i; j++ {
				out = append(out, j)
			}
			return out
		},
		Back: func(res history.Result) ([]N, []int) {
			return regroup.Apply(msgs, conv, slots, res, notice, cut)
		}}
}

// Compose returns, for each message of the output of a second trim whose
// input was the output of a first, where it came from in the first's
// input: prev[next[j]], -1 for a notice of either.
func Compose(prev, next []int) []int {
	out := make([]int, len(next))
	for j, k := range next {
		out[j] = -1
		if k >= 0 && k < len(prev) {
			out[j] = prev[k]
		}
	}
	return out
}

// Overhead returns what texts, the JSON a request sends besides its
// messages (tool definitions, a response schema), cost with c (nil:
// history.Heuristic): each that is not empty, null, {} or [] counted as
// the content of one system message, framing included. The sum is never
// negative and saturates at math.MaxInt.
func Overhead(c history.Counter, texts ...string) int {
	if c == nil {
		c = history.Heuristic()
	}
	total := 0
	for _, text := range texts {
		switch text {
		case "", "null", "{}", "[]":
			continue
		}
		n := max(c.CountMessage(history.Message{Role: history.RoleSystem, Content: text}), 0)
		if n > math.MaxInt-total {
			return math.MaxInt
		}
		total += n
	}
	return total
}

// JSONIf returns the JSON text of v when set is true (see JSON), else "".
func JSONIf(set bool, v any) string {
	if !set {
		return ""
	}
	return JSON(v)
}

// JSON returns the JSON text of v, or "" when it does not encode.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
