package history

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requests returns the requests of a session: the transcript before each
// assistant message.
func requests(full []Message) [][]Message {
	var reqs [][]Message
	for n := 2; n <= len(full); n++ {
		if full[n-1].Role == RoleAssistant {
			reqs = append(reqs, full[:n-1])
		}
	}
	return reqs
}

// kept returns how many conversations c keeps, checking that its map, LRU
// list and set of live Trimmers agree.
func kept(t *testing.T, c *Conversations) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Equal(t, len(c.local), c.lru.Len(), "the map and the LRU list")
	if !c.closed {
		require.LessOrEqual(t, len(c.live), len(c.local), "a Trimmer no conversation keeps is still live")
	}
	return len(c.local)
}

// TestConversationsBound: however many conversations a replica serves,
// it keeps at most MaxConversations Trimmers (the default when 0, none
// dropped when negative), and a conversation it dropped restores its state
// from the store on its next request, sending what it would have sent.
func TestConversationsBound(t *testing.T) {
	msgs := []Message{{Role: RoleSystem, Content: "agent"}, {Role: RoleUser, Content: "hello"}}
	for _, tc := range []struct {
		name string
		max  int
		keys int
		want int
	}{
		{"default bound", 0, 10_000, DefaultMaxConversations},
		{"a small bound", 64, 10_000, 64},
		{"no bound", -1, 1_000, 1_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConversations(&MemoryStateStore{}, WithLowWater(0.7))
			c.MaxConversations = tc.max
			var state string
			c.OnState = func(_, s string) { state = s }
			first, err := c.Trim(context.Background(), "k0", msgs, 100)
			require.NoError(t, err)
			for i := range tc.keys {
				_, err := c.Trim(context.Background(), "k"+strconv.Itoa(i), msgs, 100)
				require.NoError(t, err)
				if i%1000 == 0 {
					require.LessOrEqual(t, kept(t, c), tc.want)
				}
			}
			assert.Equal(t, tc.want, kept(t, c))
			again, err := c.Trim(context.Background(), "k0", msgs, 100)
			require.NoError(t, err)
			assert.True(t, reflect.DeepEqual(first.Messages, again.Messages))
			if tc.keys > tc.want {
				assert.Equal(t, StateRestored, state, "k0 was dropped: its state comes from the store")
			}
		})
	}
}

// TestConversationsIdle: with IdleAfter, the Trimmers of conversations
// unused for that long (by the options' clock) are dropped at the next
// call, and those used since are kept.
func TestConversationsIdle(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := NewConversations(&MemoryStateStore{}, WithClock(func() time.Time { return now }))
	c.IdleAfter = time.Hour
	msgs := []Message{{Role: RoleUser, Content: "hello"}}
	trim := func(key string) {
		_, err := c.Trim(context.Background(), key, msgs, 100)
		require.NoError(t, err)
	}
	trim("a")
	trim("b")
	now = now.Add(40 * time.Minute)
	trim("b")
	trim("c")
	assert.Equal(t, 3, kept(t, c), "none idle for an hour yet")
	now = now.Add(30 * time.Minute)
	trim("c")
	assert.Equal(t, 2, kept(t, c), "a was idle for 70 minutes")
	now = now.Add(2 * time.Hour)
	trim("d")
	assert.Equal(t, 1, kept(t, c), "only d, just used")
}

// stopSummarizer writes no summary: each call blocks until its ctx ends,
// and says when it started and how it ended.
type stopSummarizer struct {
	started chan struct{}
	stopped chan error
}

func newStopSummarizer() *stopSummarizer {
	return &stopSummarizer{started: make(chan struct{}, 100), stopped: make(chan error, 100)}
}

func (s *stopSummarizer) Summarize(ctx context.Context, dropped []Message, previous *Message) (Message, error) {
	s.started <- struct{}{}
	<-ctx.Done()
	s.stopped <- ctx.Err()
	return Message{}, ctx.Err()
}

// wait returns what ch receives, failing the test if nothing comes
// within a minute (a summary that is never stopped).
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s: nothing after a minute", what)
		panic("unreachable")
	}
}

// startSummary trims the session of the conversation key through c until
// a background summary is in flight, and returns the next request's
// index.
func startSummary(t *testing.T, c *Conversations, key string, reqs [][]Message, s *stopSummarizer) int {
	t.Helper()
	for i, msgs := range reqs {
		res, err := c.Trim(context.Background(), key, msgs, 2000)
		require.NoError(t, err)
		checkResult(t, msgs, res, true)
		c.mu.Lock()
		tr := c.local[key].t
		c.mu.Unlock()
		select {
		case <-tr.SummaryDone(): // none in flight
		default:
			wait(t, s.started, "the Summarizer's call") // it blocks until stopped
			return i + 1
		}
	}
	t.Fatal("setup: no background summary started")
	return 0
}

// TestConversationsStopSummaries: a background summary in flight is
// stopped (its Summarizer's ctx cancelled) when its Trimmer is dropped:
// by Close, Forget, Reset, the bound on conversations, idleness, or the
// state of another replica replacing it. After Close, calls still trim
// but start no background summary, and no goroutine is left behind.
func TestConversationsStopSummaries(t *testing.T) {
	reqs := requests(trSession(80, 44))
	for _, tc := range []struct {
		name string
		drop func(t *testing.T, c *Conversations, store StateStore, next int, advance func())
	}{
		{"Close", func(t *testing.T, c *Conversations, _ StateStore, _ int, _ func()) { require.NoError(t, c.Close()) }},
		{"Forget", func(t *testing.T, c *Conversations, _ StateStore, _ int, _ func()) { c.Forget("k") }},
		{"Reset", func(t *testing.T, c *Conversations, _ StateStore, _ int, _ func()) {
			require.NoError(t, c.Reset(context.Background(), "k"))
		}},
		{"evicted", func(t *testing.T, c *Conversations, _ StateStore, _ int, _ func()) {
			c.MaxConversations = 1
			_, err := c.Trim(context.Background(), "other", reqs[0], 2000)
			require.NoError(t, err)
		}},
		{"idle", func(t *testing.T, c *Conversations, _ StateStore, _ int, advance func()) {
			advance()
			_, err := c.Trim(context.Background(), "other", reqs[0], 2000)
			require.NoError(t, err)
		}},
		{"replaced by another replica's state", func(t *testing.T, c *Conversations, store StateStore, next int, _ func()) {
			// Another replica with no background summary serves the next
			// request; this one restores its state on the one after.
			other := NewConversations(store, WithTrigger(0.6), WithSummarizer(newStopSummarizer(), SummaryOptions{MaxTokens: 80, Timeout: time.Hour, Background: true}))
			require.NoError(t, other.Close())
			_, err := other.Trim(context.Background(), "k", reqs[next], 2000)
			require.NoError(t, err)
			_, err = c.Trim(context.Background(), "k", reqs[next+1], 2000)
			require.NoError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			now := time.Unix(1_800_000_000, 0)
			s := newStopSummarizer()
			store := &MemoryStateStore{}
			c := NewConversations(store, WithTrigger(0.6), WithClock(func() time.Time { return now }),
				WithSummarizer(s, SummaryOptions{MaxTokens: 80, Timeout: time.Hour, Background: true}))
			c.IdleAfter = 24 * time.Hour
			t.Cleanup(func() { c.Close() })
			next := startSummary(t, c, "k", reqs, s)
			tc.drop(t, c, store, next, func() { now = now.Add(25 * time.Hour) })
			err := wait(t, s.stopped, "the summary in flight")
			assert.ErrorIs(t, err, context.Canceled, "stopped, not timed out")
			require.NoError(t, c.Close())
			require.NoError(t, c.Close(), "Close again")
			// After Close, calls trim but start no background summary.
			for _, key := range []string{"k", "new"} {
				for i := next + 2; i < len(reqs); i += 3 {
					res, err := c.Trim(context.Background(), key, reqs[i], 2000)
					require.NoError(t, err)
					checkResult(t, reqs[i], res, true)
					c.mu.Lock()
					tr := c.local[key].t
					c.mu.Unlock()
					select {
					case <-tr.SummaryDone():
					default:
						t.Fatalf("request %d of %s: a background summary started after Close", i, key)
					}
				}
			}
			goroutines(t, base)
		})
	}
}

// TestConversationsCloseConcurrent: Close racing with calls on many
// conversations and with itself (run under the race detector) returns,
// and every call's Result stays valid.
func TestConversationsCloseConcurrent(t *testing.T) {
	reqs := requests(trSession(30, 12))
	s := newStopSummarizer()
	c := NewConversations(&MemoryStateStore{}, WithTrigger(0.6), WithSummarizer(s, SummaryOptions{MaxTokens: 80, Timeout: time.Hour, Background: true}))
	c.MaxConversations = 3
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "k" + strconv.Itoa(g%4)
			for i := g % 3; i < len(reqs); i += 2 {
				res, err := c.Trim(context.Background(), key, reqs[i], 1200)
				if err != nil && !isTooLarge(err) {
					t.Error(err)
					return
				}
				checkResult(t, reqs[i], res, true)
				if i == 15 && g < 2 {
					_ = c.Close()
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, c.Close())
}

// overflowAt is a provider's refusal of a request of used tokens over a
// window of limit.
func overflowAt(limit, used int) error {
	return errors.New("This model's maximum context length is " + strconv.Itoa(limit) +
		" tokens. However, your messages resulted in " + strconv.Itoa(used) + " tokens.")
}

// TestConversationsReset: after an overflow, every replica trims to the
// share of the budget the provider accepted; after Reset, every replica
// plans afresh at the full budget, as one Trimmer that was Reset does.
// With the store down, Reset fails and says so: the replica starts afresh
// meanwhile, and the state saved comes back with the store.
func TestConversationsReset(t *testing.T) {
	reqs := requests(trSession(50, 8))
	opts := []Option{WithLowWater(0.7)}
	const budget = 1500
	store := &faultyStore{}
	a, b := NewConversations(store, opts...), NewConversations(store, opts...)
	ref := NewTrimmer(opts...) // one process
	ctx := context.Background()
	send := func(c *Conversations, i int) Result {
		t.Helper()
		res, err := c.Trim(ctx, "k", reqs[i], budget)
		require.True(t, err == nil || isTooLarge(err), "%v", err)
		want, _ := ref.Trim(reqs[i], budget)
		require.True(t, reflect.DeepEqual(want.Messages, res.Messages), "request %d: not one process's prompt", i)
		return res
	}
	fresh := func(i int) Result {
		res, _ := NewTrimmer(opts...).Trim(reqs[i], budget)
		return res
	}
	i := 0
	for ; i < 12; i++ {
		send([]*Conversations{a, b}[i%2], i)
	}
	sent := send(a, i)
	limit := sent.TokensAfter * 6 / 10
	res, err := a.RecoverOverflow(ctx, "k", reqs[i], overflowAt(limit, sent.TokensAfter), 1)
	require.NoError(t, err)
	_, err = ref.RecoverOverflow(reqs[i], overflowAt(limit, sent.TokensAfter), 1)
	require.NoError(t, err)
	require.Less(t, res.TokensAfter, sent.TokensAfter)
	over := 0
	for i++; i < 20; i++ {
		res := send([]*Conversations{b, a}[i%2], i)
		assert.LessOrEqual(t, res.TokensAfter, limit, "request %d: the learnt share applies on every replica", i)
		over += boolCount(fresh(i).TokensAfter > limit)
	}
	require.Positive(t, over, "setup: the share never mattered")

	store.down = true
	require.Error(t, a.Reset(ctx, "k"), "the store is down")
	res, err = a.Trim(ctx, "k", reqs[i], budget)
	require.NoError(t, err)
	assert.True(t, reflect.DeepEqual(fresh(i).Messages, res.Messages), "meanwhile this replica starts afresh")
	store.down = false
	send(a, i) // the state saved comes back: it was not reset
	i++

	require.NoError(t, a.Reset(ctx, "k"))
	ref.Reset()
	res = send(b, i)
	assert.True(t, reflect.DeepEqual(fresh(i).Messages, res.Messages), "another replica plans afresh at the full budget")
	require.Greater(t, res.TokensAfter, limit, "setup: the full budget is not the share")
	for i++; i < len(reqs); i++ {
		send([]*Conversations{b, a}[i%2], i)
	}
}
