package history

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history/internal/race"
)

// countingCounter counts with Heuristic and records every message it is
// asked about.
type countingCounter struct {
	mu   sync.Mutex
	seen []Message
}

func (c *countingCounter) CountMessage(m Message) int {
	c.mu.Lock()
	c.seen = append(c.seen, m)
	c.mu.Unlock()
	return Heuristic().CountMessage(m)
}

func (c *countingCounter) reset() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.seen
	c.seen = nil
	return s
}

// agentHistory builds a plausible agent conversation of n turns, each a user
// message, an assistant tool call, its result and an assistant answer.
func agentHistory(turns int) []Message {
	msgs := []Message{{Role: RoleSystem, Content: "You are a coding agent."}}
	for i := range turns {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			Message{Role: RoleUser, Content: "Please look at file " + strconv.Itoa(i) + strings.Repeat(" and explain it", 10)},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"f` + strconv.Itoa(i) + `.go"}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("package main // line "+strconv.Itoa(i)+"\n", 40)},
			Message{Role: RoleAssistant, Content: "File " + strconv.Itoa(i) + " defines a main package."},
		)
	}
	return msgs
}

// TestCacheTokenizesOnlyNewMessage is the runtime pattern the cache exists
// for: trim before every request with the history grown by one message.
// After the first trim, only the new message reaches the wrapped counter,
// both when the history fits and when turns are dropped.
func TestCacheTokenizesOnlyNewMessage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int
		trims  bool
		reason string
	}{
		{"fits", 1 << 30, false, "no-trim path: every message counted once, then served from the cache"},
		{"trims", 2000, true, "trim path: the breadcrumb and the old turns are cached too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &countingCounter{}
			c := NewCache(inner, 0)
			msgs := agentHistory(50)
			first, err := TrimToRecentTurns(msgs, tc.budget, WithCounter(c))
			if err != nil {
				t.Fatal(err)
			}
			if first.Trimmed != tc.trims {
				t.Fatalf("budget %d: Trimmed = %v, the case needs %v", tc.budget, first.Trimmed, tc.trims)
			}
			// A history that fits is counted whole; a trim counts newest
			// first and stops once it knows the cut.
			if n := len(inner.reset()); (!tc.trims && n < len(msgs)) || (tc.trims && n >= len(msgs)/2) {
				t.Fatalf("first trim counted %d of %d messages (trims: %v)", n, len(msgs), tc.trims)
			}
			for step := range 5 {
				next := Message{Role: RoleUser, Content: fmt.Sprintf("follow-up question %d", step)}
				if step%2 == 1 {
					next = Message{Role: RoleAssistant, Content: fmt.Sprintf("answer %d", step)}
				}
				msgs = append(msgs[:len(msgs):len(msgs)], next)
				res, err := TrimToRecentTurns(msgs, tc.budget, WithCounter(c))
				if err != nil {
					t.Fatal(err)
				}
				seen := inner.reset()
				if len(seen) != 1 || !equal(&seen[0], &next) {
					t.Fatalf("step %d: the counter saw %d messages %v, want only the new one (%s)", step, len(seen), seen, tc.reason)
				}
				// Cached counts must equal uncached ones.
				plain, _ := TrimToRecentTurns(msgs, tc.budget, WithCounter(inner))
				inner.reset()
				if res.TokensBefore != plain.TokensBefore || res.TokensAfter != plain.TokensAfter {
					t.Fatalf("step %d: cached tokens %d/%d, uncached %d/%d", step, res.TokensBefore, res.TokensAfter, plain.TokensBefore, plain.TokensAfter)
				}
			}
		})
	}
}

func TestCacheKeyedByContent(t *testing.T) {
	inner := &countingCounter{}
	c := NewCache(inner, 0)
	base := Message{Role: RoleAssistant, Content: "x", Name: "n", ToolCalls: []ToolCall{{ID: "1", Name: "f", Arguments: "{}"}},
		Parts: []Part{{Type: PartImage, Width: 100, Height: 100}}}
	c.CountMessage(base)
	inner.reset()
	// The same content in a fresh value (different backing memory) hits.
	fresh := base
	fresh.Content = strings.Clone(base.Content)
	fresh.ToolCalls = []ToolCall{{ID: "1", Name: "f", Arguments: "{}"}}
	fresh.Parts = []Part{{Type: PartImage, Width: 100, Height: 100}}
	c.CountMessage(fresh)
	if n := len(inner.reset()); n != 0 {
		t.Fatalf("an equal message in new memory missed (%d counts)", n)
	}
	variants := []struct {
		reason string
		edit   func(*Message)
	}{
		{"role", func(m *Message) { m.Role = RoleUser }},
		{"content", func(m *Message) { m.Content = "y" }},
		{"name", func(m *Message) { m.Name = "" }},
		{"kind", func(m *Message) { m.Kind = KindNudge }},
		{"tool call id field", func(m *Message) { m.ToolCallID = "1" }},
		{"call id", func(m *Message) { m.ToolCalls = []ToolCall{{ID: "2", Name: "f", Arguments: "{}"}} }},
		{"call name", func(m *Message) { m.ToolCalls = []ToolCall{{ID: "1", Name: "g", Arguments: "{}"}} }},
		{"call arguments", func(m *Message) { m.ToolCalls = []ToolCall{{ID: "1", Name: "f", Arguments: "{ }"}} }},
		{"no calls", func(m *Message) { m.ToolCalls = nil }},
		{"image width", func(m *Message) { m.Parts = []Part{{Type: PartImage, Width: 101, Height: 100}} }},
		{"image detail", func(m *Message) { m.Parts = []Part{{Type: PartImage, Width: 100, Height: 100, Detail: "low"}} }},
		{"part tokens", func(m *Message) { m.Parts = []Part{{Type: PartImage, Width: 100, Height: 100, Tokens: 5}} }},
		{"field shift", func(m *Message) { m.Content, m.Name = "xn", "" }},
	}
	for _, v := range variants {
		m := base
		v.edit(&m)
		c.CountMessage(m)
		if n := len(inner.reset()); n != 1 {
			t.Errorf("%s changed: %d counts, want 1 (a miss)", v.reason, n)
		}
	}
	// Mutating the caller's slice after caching must not alter the key.
	calls := []ToolCall{{ID: "9", Name: "f"}}
	m := Message{Role: RoleAssistant, ToolCalls: calls}
	c.CountMessage(m)
	calls[0].Name = "a much longer tool name that costs more tokens"
	if got, want := c.CountMessage(m), Heuristic().CountMessage(m); got != want {
		t.Errorf("after the caller mutated ToolCalls: cached %d, want %d", got, want)
	}
}

// TestCacheCollision forces every message onto one hash value: counts must
// stay exact.
func TestCacheCollision(t *testing.T) {
	inner := &countingCounter{}
	c := NewCache(inner, 4).(*cache)
	a := Message{Role: RoleUser, Content: "short"}
	b := Message{Role: RoleUser, Content: strings.Repeat("a much longer message ", 20)}
	for range 3 {
		for _, m := range []Message{a, b} {
			if got, want := c.count(&m, 42), Heuristic().CountMessage(m); got != want {
				t.Fatalf("colliding key: got %d, want %d", got, want)
			}
		}
	}
	if len(c.entries) != 1 {
		t.Errorf("%d entries for one key", len(c.entries))
	}
}

func TestCacheCapacity(t *testing.T) {
	for _, tc := range []struct {
		capacity, want int
		reason         string
	}{
		{3, 3, "bounded by capacity"},
		{1, 1, "capacity one"},
		{0, DefaultCacheCapacity, "zero means the default"},
		{-5, DefaultCacheCapacity, "negative means the default"},
	} {
		inner := &countingCounter{}
		c := NewCache(inner, tc.capacity).(*cache)
		msgs := make([]Message, DefaultCacheCapacity+10)
		for i := range msgs {
			msgs[i] = Message{Role: RoleUser, Content: strconv.Itoa(i)}
			c.CountMessage(msgs[i])
		}
		if len(c.entries) != tc.want {
			t.Errorf("capacity %d: %d entries, want %d: %s", tc.capacity, len(c.entries), tc.want, tc.reason)
		}
		inner.reset()
		// The most recent tc.want messages hit; the one before them missed.
		last := msgs[len(msgs)-tc.want:]
		for i := len(last) - 1; i >= 0; i-- {
			c.CountMessage(last[i])
		}
		if n := len(inner.reset()); n != 0 {
			t.Errorf("capacity %d: %d misses among the most recent messages, want 0", tc.capacity, n)
		}
		c.CountMessage(msgs[len(msgs)-tc.want-1])
		if n := len(inner.reset()); n != 1 {
			t.Errorf("capacity %d: the evicted message did not miss", tc.capacity)
		}
	}
}

// TestCacheLRU checks that a hit protects an entry from eviction.
func TestCacheLRU(t *testing.T) {
	inner := &countingCounter{}
	c := NewCache(inner, 2)
	a, b, d := Message{Role: RoleUser, Content: "a"}, Message{Role: RoleUser, Content: "b"}, Message{Role: RoleUser, Content: "d"}
	c.CountMessage(a)
	c.CountMessage(b)
	c.CountMessage(a) // a is now the most recent
	c.CountMessage(d) // evicts b
	inner.reset()
	c.CountMessage(a)
	if len(inner.reset()) != 0 {
		t.Error("a was evicted although recently used")
	}
	c.CountMessage(b)
	if len(inner.reset()) != 1 {
		t.Error("b was not evicted")
	}
}

func TestCacheNilCounter(t *testing.T) {
	m := Message{Role: RoleUser, Content: "hello there"}
	if got, want := NewCache(nil, 1).CountMessage(m), Heuristic().CountMessage(m); got != want {
		t.Errorf("nil counter: %d, want Heuristic() %d", got, want)
	}
}

// TestCacheConcurrent hammers one small cache from many goroutines (run
// with -race): every count must be right and the bound must hold.
func TestCacheConcurrent(t *testing.T) {
	c := NewCache(CounterFunc(func(m Message) int { return len(m.Content) + 1 }), 16).(*cache)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				s := strings.Repeat("x", (i*7+g)%40)
				if got := c.CountMessage(Message{Role: RoleUser, Content: s}); got != len(s)+1 {
					t.Errorf("count of %d bytes = %d", len(s), got)
					return
				}
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for e := c.head; e != nil; e = e.next {
		n++
	}
	if len(c.entries) > 16 || n != len(c.entries) {
		t.Errorf("%d entries, %d in the list; want at most 16 and equal", len(c.entries), n)
	}
}

// TestCacheHitAllocs locks in that hits, and a no-trim TrimToRecentTurns
// through a warm cache, allocate nothing.
func TestCacheHitAllocs(t *testing.T) {
	c := NewCache(Heuristic(), 0)
	msgs := agentHistory(100)
	for i := range msgs {
		c.CountMessage(msgs[i])
	}
	if a := testing.AllocsPerRun(100, func() {
		for i := range msgs {
			c.CountMessage(msgs[i])
		}
	}); a != 0 {
		t.Errorf("cache hits: %v allocations per run, want 0", a)
	}
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop items at random, so the trimmer's pooled scratch memory allocates; measured without -race")
	}
	opt := WithCounter(c)
	if _, err := TrimToRecentTurns(msgs, 1<<30, opt); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() {
		if _, err := TrimToRecentTurns(msgs, 1<<30, opt); err != nil {
			t.Fatal(err)
		}
	}); a != 1 {
		t.Errorf("no-trim path through a warm cache: %v allocations per run, want 1 (the identity Kept)", a)
	}
}

func BenchmarkCacheHit(b *testing.B) {
	c := NewCache(Heuristic(), 0)
	msgs := agentHistory(250) // 1001 messages
	size := 0
	for i := range msgs {
		c.CountMessage(msgs[i])
		size += len(msgs[i].Content)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for i := range msgs {
			c.CountMessage(msgs[i])
		}
	}
}

// TestCacheSmallerThanHistory: a history of 20,000 messages, more than twice
// the default capacity, trimmed statelessly before every request. A trim
// counts newest first and stops at the cut, so the cache holds the kept tail
// and every later trim reaches the wrapped counter only for the new message.
func TestCacheSmallerThanHistory(t *testing.T) {
	inner := &countingCounter{}
	c := NewCache(inner, 0)
	msgs := longChat(5_000) // 20,001 messages
	if _, err := TrimToRecentTurns(msgs, 4_000, WithCounter(c)); err != nil {
		t.Fatal(err)
	}
	if n := len(inner.reset()); n >= DefaultCacheCapacity {
		t.Fatalf("the first trim counted %d messages, more than the cache holds", n)
	}
	for step := range 20 {
		next := Message{Role: RoleUser, Content: fmt.Sprintf("next request %d", step)}
		msgs = append(msgs[:len(msgs):len(msgs)], next)
		if _, err := TrimToRecentTurns(msgs, 4_000, WithCounter(c)); err != nil {
			t.Fatal(err)
		}
		if seen := inner.reset(); len(seen) != 1 || !equal(&seen[0], &next) {
			t.Fatalf("step %d: the counter saw %d messages, want only the new one", step, len(seen))
		}
	}
}

// TestCarriedKeysOnCorpus replays the corpus's sessions request by request
// through a Trimmer that reports events, and checks that the keys it keeps
// of each prompt (carried over from the previous prompt where its plan is
// reused) are those of hashing the whole prompt: the next event's
// Rewritten depends on them.
func TestCarriedKeysOnCorpus(t *testing.T) {
	convs := loadRefCorpus(t)
	carried, hashed := 0, 0
	for _, c := range convs {
		total := Estimate(c.msgs, nil)
		budget := max(total/4, 2000)
		tr := NewTrimmer(WithElision(ElideOptions{}), WithStepTrim(), WithLowWater(0.6), WithOnTrim(func(Event) {}))
		for k := 1; k <= len(c.msgs); k++ {
			// Every prefix, including those that end in calls whose
			// results have not come yet (swept from this prompt, sent
			// whole in the next).
			res, err := tr.Trim(c.msgs[:k], budget)
			if err != nil && !isBudgetError(err) {
				t.Fatalf("%s at %d: %v", c.file, k, err)
			}
			tr.mu.Lock()
			got, kept := tr.prev, tr.prevKept
			tr.mu.Unlock()
			want := promptKeys(&res)
			if !slices.Equal(got, want) {
				t.Fatalf("%s at %d: carried keys differ from the prompt's", c.file, k)
			}
			if !slices.Equal(kept, res.Kept) {
				t.Fatalf("%s at %d: prevKept is not the prompt's Kept", c.file, k)
			}
			hashed += len(want)
		}
		carried++
	}
	if carried == 0 || hashed == 0 {
		t.Fatal("no session replayed")
	}
}

// TestCacheByText: a message found by the address of its text is the very
// message cached, never another that shares that memory: the same text
// with another field changed, a shorter or longer text starting there, a
// call's arguments or a part's text where the content is empty; each
// counts as the counter counts it. An evicted entry is no longer found by
// its address, and the index never outgrows the entries.
func TestCacheByText(t *testing.T) {
	text := strings.Repeat("word and symbol; ", 40)
	base := Message{Role: RoleTool, ToolCallID: "a", Content: text}
	cases := []Message{
		base,
		{Role: RoleTool, ToolCallID: "b", Content: text},            // the same memory, another call
		{Role: RoleUser, Content: text},                             // another role
		{Role: RoleTool, ToolCallID: "a", Content: text[:40]},       // a prefix: the same first byte
		{Role: RoleTool, ToolCallID: "a", Content: text, Name: "n"}, // a field added
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: text}}},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: text[:10]}}},
		{Role: RoleUser, Parts: []Part{{Type: PartText, Text: text}}},
		{Role: RoleUser, Parts: []Part{{Type: PartText, Text: text}, {Type: PartText, Text: "x"}}},
	}
	inner := &countingCounter{}
	c := NewCache(inner, 64).(*cache)
	for round := range 3 {
		for i, m := range cases {
			if got, want := c.CountMessage(m), Heuristic().CountMessage(m); got != want {
				t.Fatalf("round %d, case %d: %d tokens, want %d", round, i, got, want)
			}
		}
		if n := len(inner.reset()); round > 0 && n != 0 {
			t.Errorf("round %d: %d of %d messages counted again", round, n, len(cases))
		}
	}
	if len(c.byText) > 2*len(c.entries) { // its text and an alias each
		t.Errorf("%d addresses indexed for %d entries", len(c.byText), len(c.entries))
	}

	small := NewCache(inner, 2).(*cache)
	msgs := make([]Message, 50)
	for i := range msgs {
		msgs[i] = Message{Role: RoleUser, Content: strconv.Itoa(i) + text}
		small.CountMessage(msgs[i])
	}
	if len(small.byText) > 2 {
		t.Errorf("%d addresses indexed for a cache of 2", len(small.byText))
	}
	for p, e := range small.byText {
		if textAddress(&e.msg) != p && e.alias != p || small.entries[e.key] != e {
			t.Error("an address indexes an entry evicted or filed under another address")
		}
	}
}

// TestCacheAlias: a message equal to an entry's whose text lies elsewhere
// (a placeholder the core wrote again after a new plan) is found by its
// hash once, then by the address of its text (the entry's alias), never
// counted again; a newer copy moves the alias; an entry evicted takes its
// alias with it, and no address is listed for an entry that is gone.
func TestCacheAlias(t *testing.T) {
	text := strings.Repeat("[elided tool result: read_file, 299 tokens] ", 8)
	copyOf := func() Message {
		return Message{Role: RoleTool, ToolCallID: "a", Content: strings.Clone(text), Kind: KindElided}
	}
	inner := &countingCounter{}
	c := NewCache(inner, 64).(*cache)
	first, second, third := copyOf(), copyOf(), copyOf()
	c.CountMessage(first)
	if n := len(inner.reset()); n != 1 {
		t.Fatalf("first copy: counted %d times, want 1", n)
	}
	for _, m := range []Message{second, second, third, third, first, second} {
		c.CountMessage(m)
		e := c.byText[textAddress(&m)]
		if e == nil || !equal(&e.msg, &m) {
			t.Fatal("a copy counted is not listed by the address of its text")
		}
	}
	if n := len(inner.reset()); n != 0 {
		t.Fatalf("copies counted again %d times", n)
	}
	e := c.byText[textAddress(&first)]
	if e.alias != textAddress(&second) || c.byText[textAddress(&third)] != nil {
		t.Fatalf("the alias is not the latest copy's, or an older alias is still listed (%d addresses)", len(c.byText))
	}

	small := NewCache(inner, 2).(*cache)
	for i := range 40 {
		m := Message{Role: RoleUser, Content: strconv.Itoa(i%5) + text}
		small.CountMessage(m)
		m.Content = strings.Clone(m.Content)
		small.CountMessage(m)
	}
	if len(small.byText) > 2*len(small.entries) {
		t.Fatalf("%d addresses listed for %d entries", len(small.byText), len(small.entries))
	}
	for p, e := range small.byText {
		if small.entries[e.key] != e || textAddress(&e.msg) != p && e.alias != p {
			t.Fatal("an address lists an entry evicted, or under an address neither its text's nor its alias")
		}
	}
}
