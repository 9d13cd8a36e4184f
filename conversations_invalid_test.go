package history

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unreadableStore is a StateStore with the contract of the backends for a
// value they cannot read as a state and version: Load returns nil, -1 and
// an error wrapping ErrInvalidState, and Save at version -1 replaces it
// only while it is still unreadable.
type unreadableStore struct {
	MemoryStateStore
	mu       sync.Mutex
	bad      map[string]bool
	repaired []int64 // versions the repairs returned
}

func (s *unreadableStore) Load(ctx context.Context, key string) ([]byte, int64, error) {
	s.mu.Lock()
	bad := s.bad[key]
	s.mu.Unlock()
	if bad {
		return nil, -1, fmt.Errorf("store: %q holds the version \"x\": %w", key, ErrInvalidState)
	}
	return s.MemoryStateStore.Load(ctx, key)
}

func (s *unreadableStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad[key] != (version == -1) {
		return 0, ErrStateConflict
	}
	if version == -1 {
		delete(s.bad, key)
		s.MemoryStateStore.mu.Lock()
		delete(s.MemoryStateStore.m, key)
		s.MemoryStateStore.mu.Unlock()
		v, err := s.MemoryStateStore.Save(ctx, key, state, 0)
		s.repaired = append(s.repaired, v)
		return v, err
	}
	return s.MemoryStateStore.Save(ctx, key, state, version)
}

// TestConversationsRepairUnreadable: a value the store cannot read as a
// state (its Load error wraps ErrInvalidState) is reported as refused,
// once: the trim is fresh and its state replaces the value (a save at
// version -1), and the next request uses it as its own.
func TestConversationsRepairUnreadable(t *testing.T) {
	store := &unreadableStore{bad: map[string]bool{}}
	c := NewConversations(store, WithLowWater(0.7))
	var states []string
	c.OnState = func(_, state string) { states = append(states, state) }
	full := trSession(20, 3)
	n := 0
	for end := 2; end <= len(full); end++ {
		if full[end-1].Role != RoleAssistant {
			continue
		}
		if n == 5 {
			store.mu.Lock()
			store.bad["k"] = true
			store.mu.Unlock()
		}
		res, err := c.Trim(context.Background(), "k", full[:end-1], 900)
		require.True(t, err == nil || isTooLarge(err), "%v", err)
		checkResult(t, full[:end-1], res, true)
		n++
	}
	require.Greater(t, n, 8, "setup: a long enough session")
	assert.Equal(t, StateRefused, states[5], "an unreadable value is refused, not unavailable")
	for i, st := range states[6:] {
		assert.Equal(t, StateLocal, st, "request %d after the repair", 6+i)
	}
	require.Len(t, store.repaired, 1, "one repair")
	assert.Positive(t, store.repaired[0])
	assert.False(t, store.bad["k"], "the value was replaced")
}
