package history

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var handleRE = regexp.MustCompile(`\br[0-9a-f]{24}\b`)

func TestRestorableElision(t *testing.T) {
	msgs := coldSession(5)
	store := NewMemoryStore()
	res, err := ElideToolResults(msgs, ElideOptions{KeepRecent: 1, Store: store})
	require.NoError(t, err)
	require.Equal(t, 4, res.Elided)
	assert.Equal(t, 4, store.Len())
	for i, m := range res.Messages {
		if m.Kind != KindElided {
			continue
		}
		h := handleRE.FindString(m.Content)
		require.NotEmpty(t, h, "placeholder %q names no handle", m.Content)
		assert.Equal(t, ElisionHandle(msgs[i]), h)
		assert.Contains(t, m.Content, RecallToolName)
		got, err := Recall(store, `{"id":"`+h+`"}`)
		require.NoError(t, err)
		assert.Equal(t, msgs[i].Content, got, "the model gets the original back")
	}
	// Eliding again (a replay after a crash) gives the same handles.
	again, err := ElideToolResults(msgs, ElideOptions{KeepRecent: 1, Store: store})
	require.NoError(t, err)
	assert.Equal(t, res.Messages, again.Messages)
	assert.Equal(t, 4, store.Len())
}

func TestRecallErrors(t *testing.T) {
	store := NewMemoryStore()
	m := Message{Role: RoleTool, ToolCallID: "c", Content: "body",
		Parts: []Part{{Type: PartText, Text: "more"}, {Type: PartImage, Width: 1, Height: 1}}}
	h := ElisionHandle(m)
	require.NoError(t, store.Put(h, m))
	require.NoError(t, store.Put("rabc", m))
	tests := []struct {
		args    string
		want    string
		wantErr bool
		unknown bool
	}{
		{args: `{"id":"` + h + `"}`, want: "body\nmore"},
		{args: `{"id":" ` + h + ` "}`, want: "body\nmore"},
		{args: `{"id":"r000000000000000000000000"}`, wantErr: true, unknown: true},
		{args: `{"id":"rabc"}`, wantErr: true, unknown: true}, // kept, but no placeholder names it
		{args: `{"id":"rzzz"}`, wantErr: true, unknown: true},
		{args: `{}`, wantErr: true},
		{args: `not json`, wantErr: true},
		{args: `{"id":7}`, wantErr: true},
		{args: ``, wantErr: true},
	}
	for _, tc := range tests {
		got, err := Recall(store, tc.args)
		if !tc.wantErr {
			require.NoError(t, err, tc.args)
			assert.Equal(t, tc.want, got)
			continue
		}
		require.Error(t, err, tc.args)
		assert.True(t, strings.HasPrefix(err.Error(), "history: "))
		assert.Equal(t, tc.unknown, err == ErrUnknownHandle, tc.args)
	}
}

func TestElisionHandle(t *testing.T) {
	a := Message{Role: RoleTool, ToolCallID: "c1", Content: "x"}
	b := a
	b.ToolCallID = "c2"
	c := a
	c.Content = "y"
	d := a
	d.Parts = []Part{{Type: PartText, Text: "p"}}
	seen := map[string]bool{}
	for _, m := range []Message{a, b, c, d} {
		h := ElisionHandle(m)
		assert.Regexp(t, `^r[0-9a-f]{24}$`, h)
		assert.False(t, seen[h], "two results share handle %s", h)
		seen[h] = true
		assert.Equal(t, h, ElisionHandle(m.Clone()))
	}
}

func TestTrimmerStoresEachElidedResultOnce(t *testing.T) {
	full := trSession(150, 31)
	store := &countingStore{MemoryStore: NewMemoryStore()}
	tr := NewTrimmer(WithLowWater(0.7), WithElision(ElideOptions{MinTokens: -1, Store: store}),
		WithSummarizer(&recordingSummarizer{}, SummaryOptions{MaxTokens: 200}))
	for n := 10; n <= len(full); n += 3 {
		res, err := tr.Trim(full[:n], 2500)
		require.NoError(t, err)
		for j, m := range res.Messages {
			if m.Kind == KindElided {
				h := handleRE.FindString(m.Content)
				orig, ok, err := store.Get(context.Background(), h)
				require.NoError(t, err)
				require.True(t, ok, "request %d: placeholder %q has no stored original", n, m.Content)
				assert.Equal(t, full[res.Kept[j]].Content, orig.Content)
			}
		}
	}
	require.Positive(t, store.Len())
	for h, n := range store.puts {
		assert.LessOrEqual(t, n, 2, "handle %s stored %d times", h, n)
	}
}

// countingStore counts Puts per handle.
type countingStore struct {
	*MemoryStore
	mu   sync.Mutex
	puts map[string]int
}

func (s *countingStore) Put(h string, m Message) error {
	s.mu.Lock()
	if s.puts == nil {
		s.puts = map[string]int{}
	}
	s.puts[h]++
	s.mu.Unlock()
	return s.MemoryStore.Put(h, m)
}

func TestMemoryStoreConcurrent(t *testing.T) {
	var s MemoryStore
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				m := Message{Role: RoleTool, ToolCallID: "c", Content: itoa(i*1000 + j)}
				h := ElisionHandle(m)
				_ = s.Put(h, m)
				got, ok, err := s.Get(context.Background(), h)
				if err != nil || !ok || got.Content != m.Content {
					t.Errorf("lost %s", h)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1600, s.Len())
}
