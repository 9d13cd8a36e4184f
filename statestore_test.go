package history

import (
	"context"
	"runtime"
	"testing"

	"github.com/histrim/history/internal/race"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMemoryStoreOwnConversations: Conversations reads and saves the
// states of its own MemoryStateStore without the copies the store makes
// for other callers (a state a trim saves is handed over, one it loads is
// only read), and other callers still get copies: zeroing the bytes a Load
// returned changes nothing saved, the next trim goes on from the state
// saved, and another Conversations over the same store restores it and
// sends the same. A trim allocates at least one state fewer than through
// the same store behind another type (which takes the copying path).
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
