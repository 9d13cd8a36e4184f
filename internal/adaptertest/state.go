package adaptertest

// The contract's cases on state: an adapter Trimmer's saved state, and
// the adapter's Conversations over a StateStore shared by replicas.

import (
	"context"
	"errors"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// Conversations is an adapter's Conversations, for native messages of
// type N (a system prompt the adapter takes separately bound, see
// BindSystem).
type Conversations[N any] interface {
	Trim(ctx context.Context, key string, transcript []N, budget int) ([]N, history.Result, error)
	RecoverOverflow(ctx context.Context, key string, transcript []N, providerErr error, attempt int) ([]N, history.Result, error)
	Reset(ctx context.Context, key string) error
	Close() error
}

// BindSystem returns cs with every call's system prompt system.
func BindSystem[R, N any](cs *adapt.SystemConversations[R, N], system R) Conversations[N] {
	return bound[R, N]{cs, system}
}

type bound[R, N any] struct {
	cs     *adapt.SystemConversations[R, N]
	system R
}

func (b bound[R, N]) Trim(ctx context.Context, key string, transcript []N, budget int) ([]N, history.Result, error) {
	return b.cs.Trim(ctx, key, b.system, transcript, budget)
}

func (b bound[R, N]) RecoverOverflow(ctx context.Context, key string, transcript []N, providerErr error, attempt int) ([]N, history.Result, error) {
	return b.cs.RecoverOverflow(ctx, key, b.system, transcript, providerErr, attempt)
}

func (b bound[R, N]) Reset(ctx context.Context, key string) error { return b.cs.Reset(ctx, key) }
func (b bound[R, N]) Close() error                                { return b.cs.Close() }

// stateOptions are the options of the state cases: every rung of the
// ladder that the plan remembers, and a pin.
func (c *Contract[N]) stateOptions() []history.Option {
	return []history.Option{history.WithLowWater(0.7), history.WithPin(c.Pinnable), history.WithStepTrim(),
		history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: 10})}
}

// same fails the test unless two trims gave the same native messages, byte
// for byte, and the same error, or none.
func same[N any](t *testing.T, what string, got, want []N, gerr, werr error) {
	t.Helper()
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("%s: error %v, want %v", what, gerr, werr)
	}
	if JSON(t, got) != JSON(t, want) {
		t.Fatalf("%s: not the prompt one Trimmer sends:\n%s\nwant\n%s", what, JSON(t, got), JSON(t, want))
	}
}

// state: a Trimmer restored (UnmarshalBinary) from another's state
// (MarshalBinary), saved before its first trim or after any request of
// the conversation (a recovery from an overflow among them), sends byte
// for byte what the original sends from then on. A state cut short, a
// core Trimmer's, or another adapter's is refused with the core's
// *history.StateError, and the Trimmer is left as it was.
func (c *Contract[N]) state(t *testing.T) {
	msgs := c.Conversation()
	budget := c.size(t, msgs) / 3
	opts := c.stateOptions()
	first := c.Pinnable + 1 // the pin indexes every request
	for _, at := range []int{0, 2, 6, len(msgs) - first - 1} {
		orig := c.NewTrimmer(opts...)
		var restored Trimmer[N]
		for i, n := 0, first; n <= len(msgs); i, n = i+1, n+1 {
			if i == at {
				data, err := orig.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				restored = c.NewTrimmer(opts...)
				if err := restored.UnmarshalBinary(data); err != nil {
					t.Fatalf("restoring the state of request %d: %v", i, err)
				}
			}
			want, _, werr := orig.Trim(msgs[:n], budget)
			if restored != nil {
				got, _, err := restored.Trim(msgs[:n], budget)
				same(t, "a request after the restore", got, want, err, werr)
			}
			if i == 4 || i == at+1 {
				want, _, werr := orig.RecoverOverflow(msgs[:n], c.Overflows[0], 1)
				if restored != nil {
					got, _, err := restored.RecoverOverflow(msgs[:n], c.Overflows[0], 1)
					same(t, "a recovery after the restore", got, want, err, werr)
				}
			}
		}
	}

	// Refused states leave the Trimmer as it was.
	orig := c.NewTrimmer(opts...)
	for n := first; n < len(msgs)/2+first/2; n++ {
		_, _, _ = orig.Trim(msgs[:n], budget)
	}
	data, err := orig.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	core, _ := history.NewTrimmer().MarshalBinary()
	name := int(data[5]) // the adapter's name, after "htra" and the version
	forged := append([]byte("htra\x01\x05other"), data[6+name:]...)
	tr := c.NewTrimmer(opts...)
	if err := tr.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		name    string
		data    []byte
		foreign bool
	}{
		{"empty", nil, false},
		{"the magic alone", data[:4], false},
		{"cut in the header", data[:7], false},
		{"cut in the core state", data[:len(data)-3], false},
		{"a core Trimmer's", core, false},
		{"another adapter's", forged, true},
	} {
		err := tr.UnmarshalBinary(bad.data)
		var se *history.StateError
		want := history.ErrInvalidState
		if bad.foreign {
			want = history.ErrForeignState
		}
		if !errors.As(err, &se) || !errors.Is(err, want) {
			t.Errorf("%s: %v; want a *history.StateError wrapping %v", bad.name, err, want)
		}
	}
	n := len(msgs)/2 + first/2
	want, _, werr := orig.Trim(msgs[:n], budget)
	got, _, err := tr.Trim(msgs[:n], budget)
	same(t, "after the refusals", got, want, err, werr)
}

// conversations: the adapter's Conversations on two replicas sharing a
// history.MemoryStateStore, the conversation's requests sent to either in
// turn, send byte for byte what one Trimmer sends: recoveries from an
// overflow (made on the replica that did not trim) and a Reset (after
// which both start afresh, as a new Trimmer does) included. An error
// that is no overflow is history.ErrNotOverflow.
func (c *Contract[N]) conversations(t *testing.T) {
	if c.NewConversations == nil {
		t.Fatal("the Contract has no NewConversations")
	}
	msgs := c.Conversation()
	budget := c.size(t, msgs) / 3
	opts := c.stateOptions()
	store := &history.MemoryStateStore{}
	replicas := []Conversations[N]{c.NewConversations(store, opts...), c.NewConversations(store, opts...)}
	ref := c.NewTrimmer(opts...)
	ctx := context.Background()
	first := c.Pinnable + 1
	for i, n := 0, first; n <= len(msgs); i, n = i+1, n+1 {
		r, other := replicas[i%2], replicas[(i+1)%2]
		want, _, werr := ref.Trim(msgs[:n], budget)
		got, _, err := r.Trim(ctx, "conv", msgs[:n], budget)
		same(t, "a request", got, want, err, werr)
		switch i {
		case 3, 9:
			want, _, werr := ref.RecoverOverflow(msgs[:n], c.Overflows[0], 1)
			got, _, err := other.RecoverOverflow(ctx, "conv", msgs[:n], c.Overflows[0], 1)
			same(t, "a recovery on the other replica", got, want, err, werr)
		case 6:
			if err := other.Reset(ctx, "conv"); err != nil {
				t.Fatal(err)
			}
			ref = c.NewTrimmer(opts...)
		}
	}
	if out, _, err := replicas[0].RecoverOverflow(ctx, "conv", msgs, c.NotOverflows[0], 1); !errors.Is(err, history.ErrNotOverflow) || out != nil {
		t.Errorf("RecoverOverflow of no overflow: %d messages, %v; want none and history.ErrNotOverflow", len(out), err)
	}
	for _, r := range replicas {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
