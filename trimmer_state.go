// This file owns a Trimmer's saved state: MarshalBinary and UnmarshalBinary,
// a versioned, checksummed binary form of what it remembers (its plan as
// indices, its anchors as hashes, the summary in the prompt and a hash of
// what it covers, the time of the last request), and the fingerprint of the
// options the state was made under, so that a replica refuses a state it
// would misread. trimmer_state_check.go checks a restored state against the
// transcript before it is used.

package history

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"time"
)

// Errors of a Trimmer's saved state. Test with errors.Is; errors.As with
// *[StateError] gives the detail.
var (
	// ErrInvalidState is wrapped by the *StateError of a state that cannot
	// be read (truncated, corrupt, of an unknown version: its checksum or
	// its fields do not hold), or that describes a request no trim of the
	// transcript sends (a plan that leaves out the system prompt, a pin or
	// the latest request, sends a message twice or out of order, or holds
	// a notice this Trimmer does not write; a summary of other messages).
	ErrInvalidState = errors.New("history: invalid trimmer state")
	// ErrForeignState is wrapped by the *StateError of a state saved by a
	// Trimmer with other options (another budget policy, breadcrumb, pins,
	// goal, turn rule, elision policy or counter type): its plan would not
	// be the one this Trimmer makes.
	ErrForeignState = errors.New("history: trimmer state saved under other options")
)

// StateError reports a state [Trimmer.UnmarshalBinary] refused, or one a
// Trimmer dropped when it first checked it against the transcript (see
// [Trimmer.UnmarshalBinary]; [Conversations] reports it as
// [StateRefused]). It wraps [ErrInvalidState] or [ErrForeignState].
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

// stateMagic and stateVersion start every saved state. Version 2 added
// the checksum, the hash of what the summary covers, and the pins, goal,
// turn rule, digests, cut rung and tool policies to the fingerprint;
// version 3 changed the checksum (see stateSumSize). A state of version 2
// is still read.
const (
	stateMagic   = "htrm"
	stateVersion = 3
)

// MarshalBinary saves what the Trimmer remembers between calls: the plan
// of its last fresh trim (the messages it sent, as indices into the
// transcript; its notices; the results it elided and the arguments it
// cleared), hashes of the messages its reuse check reads, the summary in
// the prompt with the turns it covers and a hash of their messages, the
// time of the last call, and what it learnt from a recovery. It holds no
// copy of the caller's messages but the notices, placeholders and summary
// the Trimmer wrote. The form is versioned and compact (varints), starts
// with "htrm", carries a fingerprint of the options the Trimmer was built
// with, and ends with two CRC-32s of everything before it, so that a corrupt
// state is refused. It never fails.
func (t *Trimmer) MarshalBinary() ([]byte, error) {
	t.mu.Lock()
	hint := t.stateSize
	t.mu.Unlock()
	return t.appendState(make([]byte, 0, hint+hint/8+64)), nil
}

// appendState appends the state MarshalBinary returns to b, and remembers
// its size, so that the next one is written into a buffer of about the
// right size at once (a state holds the notices, placeholders and digests
// the Trimmer wrote: hundreds of kilobytes in a long session, saved after
// every trim by Conversations).
func (t *Trimmer) appendState(b []byte) []byte {
	o := newOptions(t.opts)
	fp := o.fingerprint()
	o.release()
	t.mu.Lock()
	defer t.mu.Unlock()
	start := len(b)
	e := stateEncoder{b: b}
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
		e.b = binary.LittleEndian.AppendUint64(e.b, t.sum.covered)
	}
	e.uint(uint64(len(t.prev)))
	for _, k := range t.prev {
		e.b = binary.LittleEndian.AppendUint64(e.b, uint64(k))
	}
	b = binary.LittleEndian.AppendUint64(e.b, stateSum(e.b[start:])) // sealState of what was appended
	t.stateSize = len(b) - start
	return b
}

// UnmarshalBinary restores a state saved by [Trimmer.MarshalBinary],
// replacing what the Trimmer remembers (its options stay its own). The
// next Trim behaves as the Trimmer that saved the state would have:
// replicas that pass a conversation's state along send the same prompts
// as one process would. A state that cannot be read (its checksum does
// not match: corrupt or truncated; an unknown version; a field out of
// range), or that was saved under other options, is refused with a
// *[StateError] (wrapping [ErrInvalidState] or [ErrForeignState]) and the
// Trimmer is left unchanged; its next Trim then plans afresh from the
// transcript, which is always valid, only not cache-stable. Decoding takes
// time linear in len(data) and allocates at most a small multiple of it,
// whatever data claims.
//
// The checksum detects corruption, not forgery. So the next Trim first
// checks what it restored against the transcript it is given, as a fresh
// trim would keep it: the plan sends the leading system messages first,
// every pin ([WithPin], [WithTask]'s goal) and the user's latest request,
// each message at most once and in transcript order (but for the pinned
// messages and summary a trim lifts ahead of the kept turns), only the
// notices this Trimmer writes (its breadcrumbs, or its summary), elided
// placeholders only in place of tool results and cleared arguments only
// in their cleared form; and the summary is one of the very messages it
// covers (a hash of them is saved with it), not another conversation's.
// A state that fails is dropped, plan and summary: that Trim plans afresh,
// and the refusal is reported as a *StateError wrapping ErrInvalidState
// through [Conversations] ([StateRefused]). What a state with a valid
// checksum can still change is the text the Trimmer wrote itself and
// cannot write again without the provider's help: a placeholder's text
// (in place of that tool result) and the summary's (over the messages it
// covers). See docs/replicas.md.
func (t *Trimmer) UnmarshalBinary(data []byte) error {
	o := newOptions(t.opts)
	fp := o.fingerprint()
	o.release()
	d := stateDecoder{b: data, budget: stateDecodeBudget(len(data))}
	if len(data) < len(stateMagic) || string(data[:len(stateMagic)]) != stateMagic {
		return &StateError{Reason: "not a trimmer state"}
	}
	d.b = d.b[len(stateMagic):]
	v := d.uint()
	if d.err == nil && v != stateVersion && v != 2 {
		return &StateError{Reason: "version " + strconv.FormatUint(v, 10) + ", want " + strconv.Itoa(stateVersion)}
	}
	if d.err != nil || len(d.b) < stateSumSize || !sealed(data, v) {
		return &StateError{Reason: "corrupt: its checksum does not match"}
	}
	d.b = d.b[:len(d.b)-stateSumSize]
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
		next.sum = summaryState{msg: &m, from: d.count(), upTo: d.count(), turns: d.count(), messages: d.count(), tokens: d.count(), covered: d.u64()}
		if d.err == nil && next.sum.from > next.sum.upTo {
			d.fail("a summary covering nothing")
		}
	}
	if n := d.items(8, 8); n > 0 {
		next.prev = make([]promptKey, n)
		for i := range next.prev {
			next.prev[i] = promptKey(d.u64())
		}
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
	t.restored, t.refusal = true, nil // checked against the transcript by the next Trim
	t.mu.Unlock()
	return nil
}

// fingerprint hashes the options a remembered plan depends on: the budget
// policy, the notices, the pins and goal, the turn rule, the ladder with
// every elision setting that changes what is kept or how it reads, the
// summary's room and the counter's type (a Counter cannot be compared
// beyond its type, nor a function beyond its name).
func (o *options) fingerprint() uint64 {
	var h sum64
	h.str(typeName(o.counter))
	h.num(int64(messageSum(&o.breadcrumb)))
	if o.stepCrumb != nil {
		h.num(int64(messageSum(o.stepCrumb)))
	}
	flags := []bool{o.noBreadcrumb, o.turnStart != nil, o.noSweep, o.stepTrim, o.looseReasoning,
		o.fullCount, o.calib != nil, o.summarizer != nil, o.elide != nil, o.goalSet}
	for _, f := range flags {
		h.num(boolInt(f))
	}
	h.num(int64(math.Float64bits(o.lowWater)))
	h.num(int64(math.Float64bits(o.trigger)))
	h.str(funcName(o.turnStart))
	h.num(int64(len(o.pins))) // the goal among them (settle)
	for _, p := range o.pins {
		h.num(int64(p))
	}
	if o.goalSet {
		h.num(int64(o.goal))
	}
	if e := o.elide; e != nil {
		h.num(int64(e.KeepRecent))
		h.num(int64(e.MinTokens))
		h.num(int64(e.ClearArguments))
		h.num(boolInt(e.KeepErrors))
		h.str(funcName(e.Placeholder))
		h.num(boolInt(e.Store != nil))
		h.str(typeName(e.Counter))
		h.num(int64(len(e.ExcludeTools)))
		for _, name := range e.ExcludeTools {
			h.str(name)
		}
		h.num(int64(e.Digest))
		h.num(boolInt(e.Cut))
		h.num(int64(len(e.Tools)))
		for _, tp := range e.Tools {
			h.str(tp.Name)
			h.num(boolInt(tp.Keep))
			h.num(boolInt(tp.First))
			h.num(int64(tp.Digest))
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

// funcName returns the name of the function f (a func value; "" when
// nil): the same in every process built from the same code, so replicas
// agree on it (closures of one function share its name).
func funcName(f any) string {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Func || v.IsNil() {
		return ""
	}
	if fn := runtime.FuncForPC(v.Pointer()); fn != nil {
		return fn.Name()
	}
	return ""
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
	if notices != len(st.notices) || notices > 3 || len(st.plan)-notices > st.n || st.tail > st.n || st.saved < -1 {
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
