package history

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replicaRun replays a session request by request (the request before
// every assistant message), sending each to one of replicas at random
// (replicas 1: one process), and returns the prompts sent and the events.
func replicaRun(t *testing.T, full []Message, replicas int, seed uint64, store StateStore, opts []Option) ([][]Message, []Event) {
	t.Helper()
	var events []Event
	opts = append(opts[:len(opts):len(opts)], WithOnTrim(func(e Event) { events = append(events, e) }))
	rs := make([]*Conversations, replicas)
	for i := range rs {
		rs[i] = NewConversations(store, opts...)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	var prompts [][]Message
	for n := 2; n <= len(full); n++ {
		if full[n-1].Role != RoleAssistant {
			continue
		}
		res, err := rs[r.IntN(replicas)].Trim(context.Background(), "conv-1", full[:n-1], 1500)
		if err != nil && !isTooLarge(err) {
			t.Fatalf("request %d: %v", n, err)
		}
		checkResult(t, full[:n-1], res, true)
		prompts = append(prompts, res.Messages)
	}
	return prompts, events
}

// TestConversationsReplicas: three replicas sharing a store send exactly
// the prompts one process sends, with the same maintenance points.
func TestConversationsReplicas(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	for name, opts := range stateOptions(clock) {
		t.Run(name, func(t *testing.T) {
			full := trSession(60, 23)
			single, sev := replicaRun(t, full, 1, 1, &MemoryStateStore{}, opts)
			three, tev := replicaRun(t, full, 3, 2, &MemoryStateStore{}, opts)
			require.Equal(t, len(single), len(three))
			for i := range single {
				require.True(t, reflect.DeepEqual(single[i], three[i]), "request %d: the prompts differ", i)
			}
			require.Equal(t, len(sev), len(tev), "the same maintenance points")
			restored := 0
			for _, e := range tev {
				restored += boolCount(e.State == StateRestored)
			}
			assert.Positive(t, restored, "setup: no event of a trim that restored another replica's state")
		})
	}
}

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// faultyStore is a StateStore that fails while down, and can be made to
// lose a race once.
type faultyStore struct {
	MemoryStateStore
	down     bool
	conflict bool // the next Save finds another writer's save first
	corrupt  bool // the next Load returns garbage
}

func (s *faultyStore) Load(ctx context.Context, key string) ([]byte, int64, error) {
	if s.down {
		return nil, 0, errors.New("connection refused")
	}
	data, v, err := s.MemoryStateStore.Load(ctx, key)
	if s.corrupt && v > 0 {
		s.corrupt = false
		return []byte("htrm garbage"), v, err
	}
	return data, v, err
}

func (s *faultyStore) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	if s.down {
		return 0, errors.New("connection refused")
	}
	if s.conflict {
		s.conflict = false
		// Another replica saved first: its state is this one's, an update
		// the first save must not lose.
		if _, err := s.MemoryStateStore.Save(ctx, key, state, version); err != nil {
			return 0, err
		}
		return 0, ErrStateConflict
	}
	return s.MemoryStateStore.Save(ctx, key, state, version)
}

// TestConversationsFaults: the store down, a save conflict, a corrupt or
// foreign state, the store back: every request is still valid, nothing is
// lost from the history, and the Event says where the state came from.
func TestConversationsFaults(t *testing.T) {
	full := trSession(40, 31)
	store := &faultyStore{}
	var states []string
	opts := []Option{WithLowWater(0.7), WithOnTrim(func(e Event) { states = append(states, e.State) })}
	a, b := NewConversations(store, opts...), NewConversations(store, opts...)
	ctx := context.Background()
	var reqs [][]Message
	for n := 2; n <= len(full); n++ {
		if full[n-1].Role == RoleAssistant {
			reqs = append(reqs, full[:n-1])
		}
	}
	send := func(c *Conversations, i int) Result {
		t.Helper()
		res, err := c.Trim(ctx, "k", reqs[i], 800)
		if err != nil && !isTooLarge(err) {
			t.Fatalf("request %d: %v", i, err)
		}
		checkResult(t, reqs[i], res, true)
		last := reqs[i][len(reqs[i])-1]
		require.Equal(t, last, res.Messages[len(res.Messages)-1], "request %d: the latest message is sent", i)
		return res
	}
	for i := range 10 {
		send(a, i)
	}
	store.down = true
	send(b, 10) // b has nothing: a fresh trim
	send(a, 11) // a trims with what it has
	store.down = false
	store.conflict = true
	send(b, 12)
	store.corrupt = true
	send(a, 13)
	foreign := NewConversations(store, WithLowWater(0.5))
	res, err := foreign.Trim(ctx, "k", reqs[14], 800)
	require.True(t, err == nil || isTooLarge(err))
	checkResult(t, reqs[14], res, true)
	for i := 15; i < len(reqs); i++ {
		send([]*Conversations{a, b}[i%2], i)
	}
	t.Logf("event states: %v", states)
	for _, want := range []string{StateUnavailable, StateRestored} {
		assert.Contains(t, states, want)
	}
	// The store is back and used again: the last requests restore from it
	// or use their own, never fall back.
	last := states[len(states)-3:]
	for _, s := range last {
		assert.Contains(t, []string{StateLocal, StateRestored, StateNew}, s)
	}
}

// TestConversationsConcurrent: replicas racing on one conversation never
// lose a save: the version only grows and every save is one of theirs.
func TestConversationsConcurrent(t *testing.T) {
	full := trSession(30, 9)
	store := &MemoryStateStore{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := NewConversations(store, WithLowWater(0.7))
			for n := 10 + g; n < len(full); n += 5 {
				res, err := c.Trim(context.Background(), "race", full[:n], 700)
				if err != nil && !isTooLarge(err) {
					t.Error(err)
					return
				}
				checkResult(t, full[:n], res, true)
			}
		}()
	}
	wg.Wait()
	data, v, err := store.Load(context.Background(), "race")
	require.NoError(t, err)
	assert.Positive(t, v)
	require.NoError(t, NewTrimmer(WithLowWater(0.7)).UnmarshalBinary(data), "the state saved last is whole")
}

// TestConversationsRecallScoped: two conversations that elide the same
// result keep it apart in one shared Store, and each conversation's recall
// tool reads its own through RecallStore.
func TestConversationsRecallScoped(t *testing.T) {
	shared := NewMemoryStore()
	c := NewConversations(&MemoryStateStore{}, WithElision(ElideOptions{KeepRecent: 1, MinTokens: 20, Store: shared}))
	full := []Message{{Role: RoleSystem, Content: "agent"}, {Role: RoleUser, Content: "fix the build"}}
	for i := range 8 {
		id := "c" + strconv.Itoa(i)
		full = append(full,
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "sh", Arguments: `{"cmd":"make"}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("output "+id+" ", 100)})
	}
	var elided []Message // the originals
	for _, key := range []string{"alice", "bob"} {
		res, err := c.Trim(context.Background(), key, full, 800)
		require.True(t, err == nil || isTooLarge(err), "%v", err)
		require.Positive(t, res.ElidedResults, "setup: nothing elided")
		for j, m := range res.Messages {
			if m.Role == RoleTool && strings.Contains(m.Content, RecallToolName) {
				elided = append(elided, full[res.Kept[j]])
			}
		}
	}
	require.NotEmpty(t, elided)
	handle := ElisionHandle(elided[0])
	for _, key := range []string{"alice", "bob"} {
		out, err := Recall(c.RecallStore(key), `{"id":"`+handle+`"}`)
		require.NoError(t, err, key)
		assert.NotContains(t, out, RecallToolName, "%s recalls the original", key)
	}
	_, err := Recall(c.RecallStore("carol"), `{"id":"`+handle+`"}`)
	assert.ErrorIs(t, err, ErrUnknownHandle, "another conversation cannot read it")
	_, err = Recall(shared, `{"id":"`+handle+`"}`)
	assert.ErrorIs(t, err, ErrUnknownHandle, "nothing is kept unscoped")
	assert.Nil(t, NewConversations(&MemoryStateStore{}).RecallStore("alice"), "no Store, no RecallStore")
}

// TestConversationsOnState: OnState sees every call's state, also the
// calls that reuse a plan and make no event, and a store that is down.
func TestConversationsOnState(t *testing.T) {
	store := &faultyStore{}
	events := 0
	c := NewConversations(store, WithLowWater(0.7), WithOnTrim(func(Event) { events++ }))
	var states []string
	c.OnState = func(key, state string) {
		assert.Equal(t, "k", key)
		states = append(states, state)
	}
	full := trSession(20, 3)
	calls := 0
	for n := 2; n <= len(full); n++ {
		if full[n-1].Role != RoleAssistant {
			continue
		}
		store.down = calls == 7
		_, err := c.Trim(context.Background(), "k", full[:n-1], 900)
		require.True(t, err == nil || isTooLarge(err), "%v", err)
		calls++
	}
	require.Len(t, states, calls, "one state per call")
	assert.Less(t, events, calls, "setup: some calls made no event")
	assert.Equal(t, StateNew, states[0])
	assert.Equal(t, StateUnavailable, states[7])
	assert.Equal(t, StateLocal, states[len(states)-1])
}
