package storekit

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/histrim/history"
)

func TestResolve(t *testing.T) {
	got, err := Resolve("x", TTLs{})
	if err != nil || got.Retention != DefaultRetention || got.State != DefaultRetention+StateMargin ||
		got.Recall != got.State || got.Calibration != DefaultCalibrationTTL || got.Timeout != DefaultTimeout {
		t.Fatalf("defaults: %+v %v", got, err)
	}
	got, err = Resolve("x", TTLs{Retention: 5 * time.Minute})
	if err != nil || got.State != 5*time.Minute+StateMargin {
		t.Fatalf("a state outlives the cache by a day: %+v %v", got, err)
	}
	for _, bad := range []struct {
		ttl    TTLs
		reason string
	}{
		{TTLs{Timeout: -1}, "a negative timeout"},
		{TTLs{Retention: time.Hour, State: time.Minute}, "a state that expires before the cache"},
		{TTLs{Retention: time.Microsecond, State: 999 * time.Microsecond}, "a state TTL under a millisecond: Redis's PEXPIRE 0 deletes the key"},
		{TTLs{Recall: time.Nanosecond}, "a recall TTL of a nanosecond"},
		{TTLs{Calibration: time.Millisecond - 1}, "a calibration TTL just under a millisecond"},
	} {
		if _, err := Resolve("x", bad.ttl); err == nil || !strings.HasPrefix(err.Error(), "x: ") {
			t.Errorf("%s: %v", bad.reason, err)
		}
	}
	got, err = Resolve("x", TTLs{Retention: time.Millisecond, State: time.Millisecond + 1, Recall: time.Millisecond, Calibration: 2500 * time.Microsecond})
	if err != nil || got.State != 2*time.Millisecond || got.Recall != time.Millisecond || got.Calibration != 3*time.Millisecond {
		t.Fatalf("TTLs are kept to the millisecond, rounded up: %+v %v", got, err)
	}
	for range 100 {
		if v := FirstVersion(); v <= 0 {
			t.Fatalf("first version %d", v)
		}
	}
}

// TestNextVersion: a save never returns 0 or a negative version, whatever
// version it was given.
func TestNextVersion(t *testing.T) {
	for _, tc := range []struct {
		in     int64
		reason string
	}{
		{0, "none saved"},
		{-1, "replacing an unreadable value"},
		{-5, "a negative version read from a foreign value"},
		{math.MinInt64, "the smallest int64"},
		{math.MaxInt64, "the largest int64: +1 would wrap to a negative"},
		{7, "an ordinary save"},
	} {
		if v := NextVersion(tc.in); v <= 0 || (tc.in > 0 && tc.in < math.MaxInt64 && v != tc.in+1) {
			t.Errorf("%s: NextVersion(%d) = %d", tc.reason, tc.in, v)
		}
	}
}

// TestKey: keys a backend can store are kept as they are; the others
// are hashed under a prefix no raw key is stored under.
func TestKey(t *testing.T) {
	for _, tc := range []struct {
		key    string
		raw    bool
		reason string
	}{
		{"conv-1", true, "an ordinary key"},
		{"", true, "empty"},
		{"a/b ü", true, "UTF-8 and a '/'"},
		{strings.Repeat("k", MaxRawKey), true, "MaxRawKey bytes"},
		{strings.Repeat("k", MaxRawKey+1), false, "one byte longer"},
		{"a\x00b", false, "a NUL"},
		{"\xff", false, "not UTF-8"},
		{HashedKeyPrefix + "abc", false, "a key that looks hashed"},
	} {
		got := Key(tc.key)
		if (got == tc.key) != tc.raw {
			t.Errorf("%s: Key(%q) = %q", tc.reason, tc.key, got)
		}
		if !tc.raw && (!strings.HasPrefix(got, HashedKeyPrefix) || Key(got) == got) {
			t.Errorf("%s: hashed to %q, which a raw key could name", tc.reason, got)
		}
	}
}

// FuzzKey: distinct keys get distinct names, and every name is one every
// backend stores as it is.
func FuzzKey(f *testing.F) {
	f.Add("a", "b")
	f.Add("a\x00b", "a\x00c")
	f.Add(HashedKeyPrefix+"x", "x")
	f.Add(strings.Repeat("k", MaxRawKey+1), strings.Repeat("k", MaxRawKey))
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, kb := Key(a), Key(b)
		if a != b && ka == kb {
			t.Fatalf("%q and %q share the name %q", a, b, ka)
		}
		for _, k := range []string{ka, kb} {
			if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 || len(k) > MaxRawKey {
				t.Fatalf("name %q cannot be stored as it is", k)
			}
		}
	})
}

// TestScopeNames: a scope of a Recall names what history.ScopeStore of
// its unscoped store names, for any scope, and no scope's names start
// with another's.
func TestScopeNames(t *testing.T) {
	m := history.Message{Role: history.RoleTool, ToolCallID: "c", Content: "x"}
	h := history.ElisionHandle(m)
	for _, scope := range []string{"a", "tenant1/user2", "a%2Fb", "%", "/", "a\x00/\xff", "ü/%/ü"} {
		mem := history.NewMemoryStore()
		if err := history.ScopeStore(mem, scope).Put(h, m); err != nil {
			t.Fatal(err)
		}
		kv := &flaky{m: map[string][]byte{}}
		r := NewRecall(kv, "x", &Calls{Timeout: time.Second, Unanswered: errDown}, time.Hour)
		if err := r.Scope(scope).Put(h, m); err != nil {
			t.Fatal(err)
		}
		if err := r.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		for k := range kv.m {
			if _, ok, _ := mem.Get(context.Background(), k); !ok {
				t.Errorf("scope %q: Recall stores %q, ScopeStore something else", scope, k)
			}
			if strings.Count(k, "/") != 1 || !strings.HasSuffix(k, "/"+h) {
				t.Errorf("scope %q: name %q", scope, k)
			}
		}
	}
	for _, tc := range []struct {
		h      string
		ok     bool
		reason string
	}{
		{h, true, "a handle"},
		{"conv/" + h, true, "a handle in one scope of ScopeStore"},
		{"a/b%2F/" + h, true, "in two"},
		{"/" + h, false, "an empty scope"},
		{"a//" + h, false, "an empty scope inside"},
		{"../" + h, true, "'..' is a scope's escaped name like any other: no path is walked"},
		{h + "0", false, "too long"},
		{strings.ToUpper(h), false, "upper case"},
		{"rzzzzzzzzzzzzzzzzzzzzzzzz", false, "not hex"},
		{"", false, "empty"},
	} {
		if ValidHandle(tc.h) != tc.ok {
			t.Errorf("%s: ValidHandle(%q) = %v", tc.reason, tc.h, !tc.ok)
		}
	}
}

// flaky is a KV in memory that can be made to fail or to block: the unit
// under test is the queue in front of it, not a database.
type flaky struct {
	mu      sync.Mutex
	m       map[string][]byte
	down    bool
	block   chan struct{} // when set, calls wait for it to close, ignoring ctx
	entered chan struct{} // when set, told of each call that blocks
	puts    int           // calls of Put
}

var errDown = errors.New("down")

func (f *flaky) wait() {
	f.mu.Lock()
	b, e := f.block, f.entered
	f.mu.Unlock()
	if b != nil {
		if e != nil {
			e <- struct{}{}
		}
		<-b
	}
}

func (f *flaky) Put(_ context.Context, entries []Entry) error {
	f.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	if f.down {
		return errDown
	}
	for _, e := range entries {
		f.m[e.Key] = e.Value
	}
	return nil
}

func (f *flaky) Get(_ context.Context, k string) ([]byte, bool, error) {
	f.wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, false, errDown
	}
	v, ok := f.m[k]
	return v, ok, nil
}

func (f *flaky) set(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

// TestRecallPending: puts wait in memory up to the limit, are read from
// memory, and are written by a flush once the backend takes them.
func TestRecallPending(t *testing.T) {
	kv := &flaky{m: map[string][]byte{}}
	r := NewRecall(kv, "x", &Calls{Timeout: time.Second, Unanswered: errDown}, time.Hour)
	r.SetLimit(200)
	s := r.Scope("conv")
	kv.set(true)
	m := history.Message{Role: history.RoleTool, ToolCallID: "c1", Content: strings.Repeat("a", 50)}
	h1 := history.ElisionHandle(m)
	if err := s.Put(h1, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(h1, m); err != nil || r.Pending() != 1 {
		t.Fatalf("the same handle twice: %v, %d pending", err, r.Pending())
	}
	if got, ok, err := s.Get(context.Background(), h1); err != nil || !ok || got.Content != m.Content {
		t.Fatalf("a pending result: %v %v", ok, err)
	}
	if err := r.Flush(context.Background()); !errors.Is(err, errDown) || !strings.HasPrefix(err.Error(), "x: ") {
		t.Fatalf("a flush while down: %v", err)
	}
	big := history.Message{Role: history.RoleTool, ToolCallID: "c2", Content: strings.Repeat("b", 300)}
	if err := s.Put(history.ElisionHandle(big), big); err == nil || !errors.Is(err, errDown) || !strings.HasPrefix(err.Error(), "x: ") {
		t.Fatalf("past the limit: %v", err)
	}
	kv.set(false)
	if _, ok, err := s.Get(context.Background(), "r000000000000000000000000"); ok || err != nil {
		t.Fatalf("an unknown handle: %v %v", ok, err)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.Pending() != 0 || kv.m["conv/"+h1] == nil {
		t.Fatalf("not flushed: %d pending, %v", r.Pending(), kv.m)
	}
	if _, ok, _ := r.Scope("other").Get(context.Background(), h1); ok {
		t.Fatal("scopes share results")
	}
	if err := s.Put("a//"+h1, m); err == nil {
		t.Fatal("a Put under a name no ScopeStore makes")
	}
}

// TestRecallPutNeverWaits: a Put returns without calling the backend,
// even one that hangs; the results wait, readable here, and a result
// written lately is not written again.
func TestRecallPutNeverWaits(t *testing.T) {
	kv := &flaky{m: map[string][]byte{}, block: make(chan struct{})}
	r := NewRecall(kv, "x", &Calls{Timeout: time.Hour, Unanswered: errDown}, time.Hour)
	s := r.Scope("")
	var msgs []history.Message
	for i := range 50 {
		m := history.Message{Role: history.RoleTool, ToolCallID: "c" + string(rune('A'+i)), Content: strings.Repeat("x", i)}
		msgs = append(msgs, m)
		if err := s.Put(history.ElisionHandle(m), m); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok, err := s.Get(context.Background(), history.ElisionHandle(msgs[7])); err != nil || !ok || got.Content != msgs[7].Content {
		t.Fatalf("a waiting result is read from memory: %v %v", ok, err)
	}
	close(kv.block) // the backend answers again
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, calls := r.Writes()
	if entries < 50 || len(kv.m) != 50 {
		t.Fatalf("%d results written, %d stored; want the 50 put", entries, len(kv.m))
	}
	for _, m := range msgs {
		if err := s.Put(history.ElisionHandle(m), m); err != nil {
			t.Fatal(err)
		}
	}
	if r.Pending() != 0 {
		t.Fatalf("%d results written lately queued again", r.Pending())
	}
	t.Logf("50 results in %d calls", calls)
}

// TestRecallBatches: Take gives the newest results first, up to
// BatchLimit bytes (at least one), and Written takes them off the queue
// unless they were put again with another value.
func TestRecallBatches(t *testing.T) {
	kv := &flaky{m: map[string][]byte{}, down: true} // the background flushes fail
	r := NewRecall(kv, "x", &Calls{Timeout: time.Second, Unanswered: errDown}, time.Hour)
	big := strings.Repeat("z", BatchLimit/3)
	for i := range 5 {
		if err := r.Put("k"+string(rune('0'+i)), history.Message{Role: history.RoleTool, Content: big}); err != nil {
			t.Fatal(err)
		}
	}
	b := r.Take(true)
	if len(b.Entries) != 2 || b.Entries[0].Key != "k4" || b.Entries[1].Key != "k3" {
		t.Fatalf("batch %v", keys(b))
	}
	if err := r.Put("k4", history.Message{Role: history.RoleTool, Content: "changed"}); err != nil {
		t.Fatal(err)
	}
	r.Done(b, true)
	if r.Pending() != 4 {
		t.Fatalf("%d pending; want k0-k2 and k4 changed since it was taken", r.Pending())
	}
	huge := history.Message{Role: history.RoleTool, Content: strings.Repeat("h", 2*BatchLimit)}
	if err := r.Put("k9", huge); err != nil {
		t.Fatal(err)
	}
	if b := r.Take(true); b == nil || len(b.Entries) != 1 || b.Entries[0].Key != "k9" {
		t.Fatalf("a result over BatchLimit: batch %v", keys(b))
	}
}

func keys(b *Batch) []string {
	var k []string
	for _, e := range b.Entries {
		k = append(k, e.Key)
	}
	return k
}

// TestCallsBound: a call whose client ignores its context returns to the
// caller when the caller's context ends, without waiting for the client;
// past MaxStragglers such calls, new ones fail at once without calling
// the client; when the client returns, calls go through again.
func TestCallsBound(t *testing.T) {
	sentinel := errors.New("x: no answer")
	c := &Calls{Timeout: time.Hour, Unanswered: sentinel}
	release := make(chan struct{})
	started := make(chan struct{}, MaxStragglers)
	hung := func(context.Context) (int, error) { // ignores its context, as a client may
		started <- struct{}{}
		<-release
		return 1, nil
	}
	for range MaxStragglers {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		if _, err := Do(c, ctx, hung); !errors.Is(err, sentinel) || !errors.Is(err, context.Canceled) {
			t.Fatalf("a hung call: %v", err)
		}
	}
	if got := c.Stragglers(); got != MaxStragglers {
		t.Fatalf("%d stragglers, want %d", got, MaxStragglers)
	}
	called := false
	if _, err := Do(c, context.Background(), func(context.Context) (int, error) { called = true; return 0, nil }); !errors.Is(err, sentinel) || called {
		t.Fatalf("past the cap: %v, called %v", err, called)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Do(c, done, func(context.Context) (int, error) { called = true; return 0, nil }); !errors.Is(err, context.Canceled) || called {
		t.Fatalf("a caller already done: %v, called %v", err, called)
	}
	close(release)
	for c.Stragglers() > 0 {
		runtime.Gosched() // the stragglers return now that the client answers
	}
	if v, err := Do(c, context.Background(), func(ctx context.Context) (int, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the call's context has no deadline")
		}
		return 42, nil
	}); v != 42 || err != nil {
		t.Fatalf("after the server answered: %d %v", v, err)
	}
}
