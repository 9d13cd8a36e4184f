package history

import (
	"context"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/histrim/history/internal/race"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryStoreOwnConversations: Conversations reads and saves the
// states of its own MemoryStateStore without the copies the store makes
// for other callers (a trim saves its Trimmer, written only when read; a
// state it loads is only read), and other callers still get copies:
// zeroing the bytes a Load returned changes nothing saved, the next trim
// goes on from the state saved, and another Conversations over the same
// store restores it and sends the same. A trim allocates at least one
// state fewer than through the same store behind another type (which
// takes the copying path).
func TestMemoryStoreOwnConversations(t *testing.T) {
	full := trSession(60, 5)
	msgs := full[:len(full)-1]
	ctx := context.Background()
	trim := func(c *Conversations) Result {
		t.Helper()
		res, err := c.Trim(ctx, "k", msgs, 1500)
		if err != nil && !isTooLarge(err) {
			t.Fatal(err)
		}
		return res
	}
	s := &MemoryStateStore{}
	first := trim(NewConversations(s, WithLowWater(0.7)))
	data, v, err := s.Load(ctx, "k")
	require.NoError(t, err)
	require.NotZero(t, v)
	saved := append([]byte(nil), data...)
	clear(data)
	again, _, _ := s.Load(ctx, "k")
	require.Equal(t, saved, again, "a caller's Load is its own copy")

	c := NewConversations(s, WithLowWater(0.7))
	var states []string
	c.OnState = func(_, state string) { states = append(states, state) }
	assert.Equal(t, first.Messages, trim(c).Messages)
	assert.Equal(t, first.Messages, trim(c).Messages)
	assert.Equal(t, []string{StateRestored, StateLocal}, states)

	if race.Enabled {
		return // the detector's own allocations; the plain run measures
	}
	type copying struct{ *MemoryStateStore }
	const n = 20
	alloc := func(store StateStore) uint64 {
		c := NewConversations(store, WithLowWater(0.7))
		trim(c)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range n {
			trim(c)
		}
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	own, copied := alloc(&MemoryStateStore{}), alloc(copying{&MemoryStateStore{}})
	t.Logf("%d trims: %d bytes allocated through the store's own path, %d copying; a state is %d bytes", n, own, copied, len(saved))
	assert.GreaterOrEqual(t, copied, own+uint64(n*len(saved)), "the own path saves a state's copy per trim at least")
}

// plainStore is a MemoryStateStore that Conversations cannot tell from
// any other store: every state is written at every save.
type plainStore struct{ MemoryStateStore }

func (s *plainStore) Load(ctx context.Context, key string) ([]byte, int64, error) {
	return s.MemoryStateStore.Load(ctx, key)
}

func (s *plainStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	return s.MemoryStateStore.Save(ctx, key, state, version)
}

// TestMemoryStateLazy: over a MemoryStateStore a conversation's state is
// saved as its Trimmer and written only when read. One Conversations and
// a reader that loads the state at some requests send, with the same
// states, exactly what they send over a store that writes every state;
// what a Load returns is the Trimmer's state of that moment; and the
// Trimmer is not written at the requests nobody reads.
func TestMemoryStateLazy(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now } // both sides note the same times
	for name, opts := range stateOptions(clock) {
		opts = append(opts[:len(opts):len(opts)], WithClock(clock))
		t.Run(name, func(t *testing.T) {
			full := trSession(40, 13)
			lazy, plain := &MemoryStateStore{}, &plainStore{}
			a, b := NewConversations(lazy, opts...), NewConversations(plain, opts...)
			var sa, sb []string
			a.OnState = func(_, s string) { sa = append(sa, s) }
			b.OnState = func(_, s string) { sb = append(sb, s) }
			ctx := context.Background()
			unread := 0
			for n := 2; n <= len(full); n++ {
				if full[n-1].Role != RoleAssistant {
					continue
				}
				ra, ea := a.Trim(ctx, "k", full[:n-1], 900)
				rb, eb := b.Trim(ctx, "k", full[:n-1], 900)
				require.Equal(t, eb, ea, "request at %d", n)
				require.True(t, reflect.DeepEqual(ra.Messages, rb.Messages), "request at %d: the prompts differ", n)
				st := lazy.entry("k")
				require.NotNil(t, st.lazy, "request at %d: saved as the Trimmer", n)
				if st.lazy.t != nil {
					unread++
				}
				if n%5 == 0 { // a reader
					got, gv, err := lazy.Load(ctx, "k")
					require.NoError(t, err)
					want, wv, _ := plain.Load(ctx, "k")
					assert.Equal(t, wv, gv)
					assert.Equal(t, want, got, "request at %d: the state read is the one written", n)
				}
			}
			assert.Equal(t, sb, sa, "the same states")
			assert.Positive(t, unread, "setup: every state was written")
		})
	}
}

// TestMemoryStateReaders: replicas racing on one conversation over a
// MemoryStateStore, and readers loading it meanwhile, read only whole
// states whose version never goes back, and no save is lost.
func TestMemoryStateReaders(t *testing.T) {
	full := trSession(30, 9)
	store := &MemoryStateStore{}
	ctx := context.Background()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(0)
			for {
				select {
				case <-done:
					return
				default:
				}
				data, v, err := store.Load(ctx, "race")
				if err != nil || v < last {
					t.Errorf("version %d after %d (%v)", v, last, err)
					return
				}
				if v > 0 {
					if err := NewTrimmer(WithLowWater(0.7)).UnmarshalBinary(data); err != nil {
						t.Errorf("version %d: %v", v, err)
						return
					}
				}
				last = v
			}
		}()
	}
	var trims sync.WaitGroup
	calls, conflicts := 0, 0 // a call saves once, but for three conflicts in a row
	var mu sync.Mutex
	for g := range 3 {
		trims.Add(1)
		go func() {
			defer trims.Done()
			c := NewConversations(store, WithLowWater(0.7))
			c.OnState = func(_, s string) {
				mu.Lock()
				calls++
				conflicts += boolCount(s == StateConflict)
				mu.Unlock()
			}
			for n := 10 + g; n < len(full); n += 4 {
				res, err := c.Trim(ctx, "race", full[:n], 700)
				if err != nil && !isTooLarge(err) {
					t.Error(err)
					return
				}
				checkResult(t, full[:n], res, true)
			}
		}()
	}
	trims.Wait()
	close(done)
	wg.Wait()
	_, v, _ := store.Load(ctx, "race")
	assert.LessOrEqual(t, v, int64(calls), "at most one save a call")
	assert.GreaterOrEqual(t, v, int64(calls-conflicts), "no save lost")
}

// TestMemoryStateReleased: a claim the trim did not follow with a save (it
// panicked) drops the state, which the Trimmer moved on from: a reader
// plans afresh, the owner goes on with what it has.
func TestMemoryStateReleased(t *testing.T) {
	store := &MemoryStateStore{}
	full := trSession(20, 5)
	ctx := context.Background()
	c := NewConversations(store, WithLowWater(0.7))
	_, err := c.Trim(ctx, "k", full[:20], 700)
	require.True(t, err == nil || isTooLarge(err))
	cv := c.local["k"]
	require.NotNil(t, cv)
	require.Nil(t, store.claim("k", NewTrimmer(), cv.version), "no other Trimmer claims it")
	lz := store.claim("k", cv.t, cv.version)
	require.NotNil(t, lz, "the owner claims its state")
	store.release("k", lz)
	data, v, _ := store.Load(ctx, "k")
	assert.Empty(t, data)
	assert.Equal(t, cv.version, v, "the version stays: the next save replaces it")

	var states []string
	other := NewConversations(store, WithLowWater(0.7))
	other.OnState = func(_, s string) { states = append(states, s) }
	c.OnState = other.OnState
	_, err = other.Trim(ctx, "k", full[:24], 700)
	require.True(t, err == nil || isTooLarge(err))
	_, err = c.Trim(ctx, "k", full[:26], 700)
	require.True(t, err == nil || isTooLarge(err))
	assert.Equal(t, []string{StateRefused, StateRestored}, states)
}
