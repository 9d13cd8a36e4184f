package adapt

// The saved state of an adapter's stateful Trimmer: its core Trimmer's
// (history.Trimmer.MarshalBinary), with what that Trimmer was made with
// that the adapter's options do not say: the pins translated onto the
// converted history, which depend on the transcript it was first given.

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/conv"
)

// stateMagic and stateVersion start the state of an adapter's Trimmer.
const (
	stateMagic   = "htra"
	stateVersion = 1
)

// MarshalBinary saves what the Trimmer remembers between calls, for
// UnmarshalBinary on another Trimmer of the same adapter with the same
// options and system prompt (on another replica, or after a restart): its
// core Trimmer's state (history.Trimmer.MarshalBinary: the plan, the
// summary, what a recovery learnt, the time of the last request; no copy
// of the caller's messages) and the pins that Trimmer was made with, as
// indices into the converted transcript. The form starts with "htra" and
// names the adapter. It never fails.
func (t *Trimmer[R, N]) MarshalBinary() ([]byte, error) {
	t.mu.Lock()
	inner, pinned, pending := t.inner, t.pins, t.pending
	t.mu.Unlock()
	if pending != nil { // restored, not yet used: saved as it came
		b := append([]byte(stateMagic), stateVersion)
		b = binary.AppendUvarint(b, uint64(len(t.c.Name)))
		b = append(b, t.c.Name...)
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(pending.pinned)))
		for _, p := range pending.pinned {
			b = binary.AppendUvarint(b, uint64(p))
		}
		return append(b, pending.core...), nil
	}
	size := len(stateMagic) + 1 + binary.MaxVarintLen64 + len(t.c.Name) + 1
	if inner == nil {
		b := append(make([]byte, 0, size), stateMagic...)
		b = append(b, stateVersion)
		b = binary.AppendUvarint(b, uint64(len(t.c.Name)))
		b = append(b, t.c.Name...)
		return append(b, 0), nil // it has not trimmed yet
	}
	// One buffer for the header and the core's state, made about the
	// size of the last state at once.
	hint := conv.StateSize(inner)
	size += (len(pinned)+1)*binary.MaxVarintLen32 + hint + hint/8 + 64
	b := append(make([]byte, 0, size), stateMagic...)
	b = append(b, stateVersion)
	b = binary.AppendUvarint(b, uint64(len(t.c.Name)))
	b = append(b, t.c.Name...)
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(len(pinned)))
	for _, p := range pinned {
		b = binary.AppendUvarint(b, uint64(p))
	}
	return conv.AppendState(inner, b), nil
}

// UnmarshalBinary restores a state saved by MarshalBinary, replacing what
// the Trimmer remembers (its options and system prompt stay its own): the
// next Trim sends, byte for byte, what the Trimmer that saved it would
// have sent. A state that cannot be read, that another adapter's Trimmer
// saved, or whose core state history.Trimmer.UnmarshalBinary refuses, is
// refused with a *history.StateError (wrapping history.ErrInvalidState or
// history.ErrForeignState) and the Trimmer is left unchanged. A
// background summary the Trimmer had in flight is stopped.
func (t *Trimmer[R, N]) UnmarshalBinary(data []byte) error {
	invalid := func(reason string) error { return &history.StateError{Reason: reason} }
	if len(data) < len(stateMagic)+1 || string(data[:len(stateMagic)]) != stateMagic {
		return invalid("not the state of an adapter's trimmer")
	}
	d := data[len(stateMagic):]
	if d[0] != stateVersion {
		return invalid("version " + strconv.Itoa(int(d[0])) + ", want " + strconv.Itoa(stateVersion))
	}
	d = d[1:]
	n, k := binary.Uvarint(d)
	if k <= 0 || n > uint64(len(d)-k) {
		return invalid("truncated")
	}
	if name := string(d[k : k+int(n)]); name != t.c.Name {
		return &history.StateError{Reason: "saved by the " + strconv.Quote(name) + " adapter's trimmer, not " + strconv.Quote(t.c.Name) + "'s", Foreign: true}
	}
	d = d[k+int(n):]
	switch {
	case len(d) == 1 && d[0] == 0:
		t.install(nil, nil)
		return nil
	case len(d) == 0 || d[0] != 1:
		return invalid("neither a trimmer nor none")
	}
	d = d[1:]
	n, k = binary.Uvarint(d)
	if k <= 0 || n > uint64(len(d)-k) { // a pin takes a byte at least
		return invalid("truncated pins")
	}
	d = d[k:]
	pinned := make([]int, 0, n)
	for range n {
		p, k := binary.Uvarint(d)
		if k <= 0 || p > math.MaxInt32 {
			return invalid("a pin out of range")
		}
		pinned = append(pinned, int(p))
		d = d[k:]
	}
	opts, key := t.lastOptions()
	inner := history.NewTrimmer(t.coreOptions(opts, pinned)...)
	if len(pinned) == 0 {
		pinned = nil // as pins.Read reads no pins
	}
	if err := inner.UnmarshalBinary(d); err != nil {
		if !errors.Is(err, history.ErrForeignState) {
			return err
		}
		// Saved under other options: those of the door (Fit), which a
		// Trimmer that has not fitted yet does not know. The state is
		// restored by the next call, with its options, or planned afresh
		// when they are not those it was saved under either.
		t.mu.Lock()
		t.installLocked(nil, nil)
		t.pending = &pendingState{core: slices.Clone(d), pinned: pinned}
		t.mu.Unlock()
		return nil
	}
	t.mu.Lock()
	t.installLocked(inner, pinned)
	t.key, t.pending = key, nil
	t.mu.Unlock()
	return nil
}

// pendingState is a saved core state the Trimmer restores at its next
// call, with that call's options (see UnmarshalBinary).
type pendingState struct {
	core   []byte
	pinned []int
}

// lastOptions returns the options of the Trimmer's last call, and what
// its core Trimmer was made for: the last Fit's, or the Trimmer's own.
func (t *Trimmer[R, N]) lastOptions() ([]history.Option, doorKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.fit != nil {
		return t.fit.opts, t.fit.key
	}
	return t.opts, doorKey{}
}

// coreOptions returns the options of a core Trimmer made for a trim with
// opts whose pins translated to pinned: what prepare makes of them.
func (t *Trimmer[R, N]) coreOptions(opts []history.Option, pinned []int) []history.Option {
	opts = Once(opts)
	if len(pinned) > 0 {
		opts = append(slices.Clip(opts), history.WithPin(pinned...))
	}
	return append(slices.Clip(opts), t.c.Rules...)
}

// install makes inner, made with pinned, the Trimmer's core Trimmer (nil:
// none yet), closed at once if the Trimmer is; the one it replaces has its
// background summary, which covers a plan that is gone, stopped.
func (t *Trimmer[R, N]) install(inner *history.Trimmer, pinned []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.installLocked(inner, pinned)
}

// installLocked is install with t.mu held.
func (t *Trimmer[R, N]) installLocked(inner *history.Trimmer, pinned []int) {
	if old := t.inner; old != nil && !t.closed { // once closed, Close closed it or it was made closed
		t.retired.Add(1)
		go func() {
			defer t.retired.Done()
			old.Close()
		}()
	}
	t.inner, t.pins = inner, pinned
	if inner != nil && t.closed {
		inner.Close() // none in flight: it returns at once
	}
}

// Refused reports, and forgets, whether the state restored into t failed
// its check against the transcript of the trim just run (the core
// Trimmer's refusal, history.StateRefused), for Conversations to report
// it (conv.Refuser).
func (t *Trimmer[R, N]) Refused() bool {
	inner := t.current()
	return inner != nil && conv.TakeRefusal(inner)
}
