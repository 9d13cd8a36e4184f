// This file owns a Trimmer's saved state: MarshalBinary and UnmarshalBinary,
// a versioned binary form of what it remembers (its plan as indices, its
// anchors as hashes, the summary in the prompt and what it covers, the
// time of the last request), and the fingerprint of the options the state
// was made under, so that a replica refuses a state it would misread.

package history

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
)

// Errors of a Trimmer's saved state. Test with errors.Is; errors.As with
// *[StateError] gives the detail.
var (
	// ErrInvalidState is wrapped by the *StateError of a state that cannot
	// be read: truncated, corrupt, of an unknown version, or describing a
	// plan that no transcript has.
	ErrInvalidState = errors.New("history: invalid trimmer state")
	// ErrForeignState is wrapped by the *StateError of a state saved by a
	// Trimmer with other options (another budget policy, breadcrumb,
	// elision or counter type): its plan would not be the one this Trimmer
	// makes.
	ErrForeignState = errors.New("history: trimmer state saved under other options")
)

// StateError reports a state [Trimmer.UnmarshalBinary] refused. It wraps
// [ErrInvalidState] or [ErrForeignState].
type StateError struct {
	// Reason says what is wrong with the state.
	Reason string
	// Foreign is true for a state saved under other options.
	Foreign bool
}

// Error returns "history: invalid trimmer state: reason", or the foreign
// form.
func (e *StateError) Error() string {
	if e.Foreign {
		return ErrForeignState.Error() + ": " + e.Reason
	}
	return ErrInvalidState.Error() + ": " + e.Reason
}

// Unwrap returns ErrForeignState or ErrInvalidState.
func (e *StateError) Unwrap() error {
	if e.Foreign {
		return ErrForeignState
	}
	return ErrInvalidState
}

// stateMagic and stateVersion start every saved state.
const (
	stateMagic   = "htrm"
	stateVersion = 1
)

// MarshalBinary saves what the Trimmer remembers between calls: the plan
// of its last fresh trim (the messages it sent, as indices into the
// transcript; its notices; the results it elided and the arguments it
// cleared), hashes of the messages its reuse check reads, the summary in
// the prompt and the turns it covers, the time of the last call, and what
// it learnt from a recovery. It holds no copy of the caller's messages but
// the notices and summary the Trimmer wrote. The form is versioned and
// compact (varints), starts with "htrm", and carries a fingerprint of the
// options the Trimmer was built with. It never fails.
func (t *Trimmer) MarshalBinary() ([]byte, error) {
	o := newOptions(t.opts)
	fp := o.fingerprint()
	o.release()
	t.mu.Lock()
	defer t.mu.Unlock()
	var e stateEncoder
	e.b = append(e.b, stateMagic...)
	e.uint(stateVersion)
	e.b = binary.LittleEndian.AppendUint64(e.b, fp)
	last := int64(0)
	if !t.last.IsZero() {
		last = t.last.UnixNano()
	}
	e.int(last)
	e.int(int64(t.sent))
	e.int(int64(t.asked))
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(t.accept))
	e.plan(&t.st)
	e.bool(t.sum.msg != nil)
	if t.sum.msg != nil {
		e.msg(t.sum.msg)
		for _, n := range [...]int{t.sum.from, t.sum.upTo, t.sum.turns, t.sum.messages, t.sum.tokens} {
			e.int(int64(n))
		}
	}
	e.uint(uint64(len(t.prev)))
	for _, k := range t.prev {
		e.b = binary.LittleEndian.AppendUint64(e.b, uint64(k))
	}
	return e.b, nil
}

// UnmarshalBinary restores a state saved by [Trimmer.MarshalBinary],
// replacing what the Trimmer remembers (its options stay its own). The
// next Trim behaves as the Trimmer that saved the state would have:
// replicas that pass a conversation's state along send the same prompts
// as one process would. A state that cannot be read, or that was saved
// under other options, is refused with a *[StateError] (wrapping
// [ErrInvalidState] or [ErrForeignState]) and the Trimmer is left
// unchanged; its next Trim then plans afresh from the transcript, which is
// always valid, only not cache-stable.
func (t *Trimmer) UnmarshalBinary(data []byte) error {
	o := newOptions(t.opts)
	fp := o.fingerprint()
	o.release()
	d := stateDecoder{b: data}
	if len(data) < len(stateMagic) || string(data[:len(stateMagic)]) != stateMagic {
		return &StateError{Reason: "not a trimmer state"}
	}
	d.b = d.b[len(stateMagic):]
	if v := d.uint(); d.err == nil && v != stateVersion {
		return &StateError{Reason: "version " + strconv.FormatUint(v, 10) + ", want " + strconv.Itoa(stateVersion)}
	}
	if got := d.u64(); d.err == nil && got != fp {
		return &StateError{Reason: "its options differ from this Trimmer's", Foreign: true}
	}
	var next Trimmer
	if ns := d.int(); ns != 0 {
		next.last = time.Unix(0, ns)
	}
	next.sent, next.asked = d.count(), d.count()
	next.accept = math.Float64frombits(d.u64())
	next.st = d.plan()
	if d.bool() {
		m := d.msg()
		next.sum = summaryState{msg: &m, from: d.count(), upTo: d.count(), turns: d.count(), messages: d.count(), tokens: d.count()}
		if d.err == nil && next.sum.from > next.sum.upTo {
			d.fail("a summary covering nothing")
		}
	}
	for range d.len(8) {
		next.prev = append(next.prev, promptKey(d.u64()))
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail("trailing bytes")
	}
	if d.err == nil && !(next.accept >= 0 && next.accept <= 1) {
		d.fail("accept share " + strconv.FormatFloat(next.accept, 'g', -1, 64))
	}
	if d.err != nil {
		return &StateError{Reason: d.err.Error()}
	}
	t.mu.Lock()
	t.st, t.last, t.sum, t.prev = next.st, next.last, next.sum, next.prev
	t.prevKept = nil // the first reuse hashes its whole prompt
	t.sent, t.asked, t.accept = next.sent, next.asked, next.accept
	t.mu.Unlock()
	return nil
}

// fingerprint hashes the options a remembered plan depends on: the budget
// policy, the notices, the turn rule's presence, the ladder, the summary's
// room and the counter's type (a Counter or function cannot be compared
// beyond its type).
func (o *options) fingerprint() uint64 {
	var h sum64
	h.str(typeName(o.counter))
	h.num(int64(messageSum(&o.breadcrumb)))
	if o.stepCrumb != nil {
		h.num(int64(messageSum(o.stepCrumb)))
	}
	flags := []bool{o.noBreadcrumb, o.turnStart != nil, o.noSweep, o.stepTrim, o.looseReasoning,
		o.fullCount, o.calib != nil, o.summarizer != nil, o.elide != nil}
	for _, f := range flags {
		h.num(boolInt(f))
	}
	h.num(int64(math.Float64bits(o.lowWater)))
	h.num(int64(math.Float64bits(o.trigger)))
	if e := o.elide; e != nil {
		h.num(int64(e.KeepRecent))
		h.num(int64(e.MinTokens))
		h.num(int64(e.ClearArguments))
		h.num(boolInt(e.KeepErrors))
		h.num(boolInt(e.Placeholder != nil))
		h.num(boolInt(e.Store != nil))
		h.str(typeName(e.Counter))
		h.num(int64(len(e.ExcludeTools)))
		for _, name := range e.ExcludeTools {
			h.str(name)
		}
	}
	if o.summarizer != nil {
		h.num(int64(o.summarizer.opts.MaxTokens))
	}
	return h.sum()
}

func typeName(v any) string {
	if v == nil {
		return ""
	}
	return reflect.TypeOf(v).String()
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// check returns why st cannot describe a transcript of st.n messages, or
// "".
func (st *trimState) check() string {
	if st.n == 0 {
		if len(st.plan)+len(st.notices)+len(st.anchors) > 0 {
			return "a plan without a transcript"
		}
		return ""
	}
	in := func(i int) bool { return i >= 0 && i < st.n }
	notices := 0
	for _, k := range st.plan {
		switch {
		case k == -1:
			notices++
		case !in(k):
			return "a plan index " + strconv.Itoa(k) + " outside the transcript"
		}
	}
	if notices != len(st.notices) || st.tail > st.n || st.saved < -1 {
		return "a plan that does not add up"
	}
	for _, a := range st.anchors {
		if !in(a.i) {
			return "an anchor outside the transcript"
		}
	}
	for k := range st.elided {
		if !in(k) {
			return "an elided index outside the transcript"
		}
	}
	for k := range st.cleared {
		if !in(k) {
			return "a cleared index outside the transcript"
		}
	}
	for _, k := range st.replaced {
		if !in(k) {
			return "a replaced index outside the transcript"
		}
	}
	return ""
}

// sortedInts returns the keys of m, ascending.
func sortedInts[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
