package history

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ctxStore is a StateStore that counts its calls and those made with a
// ctx already done. When hung, each call blocks until its ctx is done (a
// server that never answers, behind a client that honours ctx); otherwise
// it answers from memory, then runs onLoad or onSave (the caller's
// deadline passing meanwhile), and the next conflicts Saves find another
// writer's save first.
type ctxStore struct {
	MemoryStateStore
	mu           sync.Mutex
	hung         bool
	conflicts    int
	onLoad       func()
	onSave       func()
	loads, saves int
	doneCalls    int
}

func (s *ctxStore) enter(ctx context.Context, n *int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	*n++
	if ctx.Err() != nil {
		s.doneCalls++
	}
	return s.hung
}

func (s *ctxStore) Load(ctx context.Context, key string) ([]byte, int64, error) {
	if s.enter(ctx, &s.loads) {
		<-ctx.Done()
		return nil, 0, ctx.Err()
	}
	data, v, err := s.MemoryStateStore.Load(ctx, key)
	if s.onLoad != nil {
		s.onLoad()
	}
	return data, v, err
}

func (s *ctxStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	if s.enter(ctx, &s.saves) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	defer func() {
		if s.onSave != nil {
			s.onSave()
		}
	}()
	if s.conflicts > 0 {
		s.conflicts--
		if _, err := s.MemoryStateStore.Save(ctx, key, state, version); err != nil {
			return 0, err
		}
		return 0, ErrStateConflict
	}
	return s.MemoryStateStore.Save(ctx, key, state, version)
}

// TestConversationsContext: a call honours its ctx. A done ctx is never
// handed to the store, the store costs at most one wait that ctx ends (no
// save after a load that failed, none once ctx is done after the trim, no
// second load after a conflict), and the Result is the valid trim of the
// transcript, StateUnavailable saying the state was not kept.
func TestConversationsContext(t *testing.T) {
	full := trSession(30, 5)
	msgs := full[:len(full)-1]
	opts := []Option{WithLowWater(0.7)}
	const budget = 700
	want, err := NewTrimmer(opts...).Trim(msgs, budget)
	require.True(t, err == nil || isTooLarge(err), "%v", err)
	for _, tc := range []struct {
		name         string
		why          string
		setup        func(s *ctxStore, cancel context.CancelFunc)
		timeout      time.Duration // a deadline on the call's ctx
		done         bool          // ctx is done before the call
		loads, saves int
		state        string
	}{
		{name: "the store hangs until the deadline",
			why:     "the load fails when ctx ends: nothing is saved",
			setup:   func(s *ctxStore, _ context.CancelFunc) { s.hung = true },
			timeout: 20 * time.Millisecond, loads: 1, saves: 0, state: StateUnavailable},
		{name: "ctx done before the call",
			why:  "a store that ignores ctx would wait its own timeout for an answer nobody reads",
			done: true, loads: 0, saves: 0, state: StateUnavailable},
		{name: "the deadline passes during the trim",
			why:   "the save would wait on the store once more, past the deadline",
			setup: func(s *ctxStore, cancel context.CancelFunc) { s.onLoad = cancel },
			loads: 1, saves: 0, state: StateUnavailable},
		{name: "the deadline passes at a conflict",
			why: "a second load and trim would wait on the store again",
			setup: func(s *ctxStore, cancel context.CancelFunc) {
				s.conflicts = 1
				s.onSave = cancel
			},
			loads: 1, saves: 1, state: StateUnavailable},
		{name: "no deadline",
			why:   "the control: a load and a save",
			loads: 1, saves: 1, state: StateNew},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &ctxStore{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.timeout > 0 {
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			if tc.setup != nil {
				tc.setup(s, cancel)
			}
			if tc.done {
				cancel()
			}
			c := NewConversations(s, opts...)
			var state string
			c.OnState = func(_, st string) { state = st }
			res, err := c.Trim(ctx, "k", msgs, budget)
			require.True(t, err == nil || isTooLarge(err), "%v", err)
			checkResult(t, msgs, res, true)
			assert.True(t, reflect.DeepEqual(want.Messages, res.Messages), "the trim of the transcript")
			assert.Equal(t, tc.loads, s.loads, "loads: %s", tc.why)
			assert.Equal(t, tc.saves, s.saves, "saves: %s", tc.why)
			assert.Zero(t, s.doneCalls, "store calls with a done ctx: %s", tc.why)
			assert.Equal(t, tc.state, state)
		})
	}
}

// TestConversationsRecoverNotOverflow: an error that is no overflow
// changes no state, so RecoverOverflow answers it without the store.
func TestConversationsRecoverNotOverflow(t *testing.T) {
	s := &ctxStore{}
	c := NewConversations(s, WithLowWater(0.7))
	msgs := trSession(10, 3)
	res, err := c.RecoverOverflow(context.Background(), "k", msgs, errors.New("rate limit exceeded"), 1)
	require.ErrorIs(t, err, ErrNotOverflow)
	assert.Equal(t, msgs, res.Messages)
	assert.Equal(t, 0, s.loads+s.saves, "store calls")
}

// BenchmarkConversationsHungStore: a trim under a 2 ms deadline with a
// store that never answers takes the deadline and the trim's own time
// (compare BenchmarkConversationsLocal, the same trim with the store in
// memory).
func BenchmarkConversationsHungStore(b *testing.B) {
	benchConversations(b, &ctxStore{hung: true}, 2*time.Millisecond)
}

// BenchmarkConversationsLocal: the trim of BenchmarkConversationsHungStore
// with a store that answers at once.
func BenchmarkConversationsLocal(b *testing.B) {
	benchConversations(b, &MemoryStateStore{}, 0)
}

func benchConversations(b *testing.B, store StateStore, timeout time.Duration) {
	full := trSession(60, 5)
	msgs := full[:len(full)-1]
	c := NewConversations(store, WithLowWater(0.7))
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, timeout)
		}
		if _, err := c.Trim(ctx, "k", msgs, 1500); err != nil && !isTooLarge(err) {
			b.Fatal(err)
		}
		cancel()
	}
}
