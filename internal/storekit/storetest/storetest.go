// Package storetest is the suite every state backend under stores/ passes
// against its real server: the compare-and-swap contract of
// history.StateStore, no lost update between racing replicas, TTLs, the
// recall Store and its scopes, the Calibration merged from several
// replicas, three replicas sending exactly one process's prompts, and the
// faults (the server down and back, a save conflict, a corrupt or foreign
// state). Faults are injected in the network (Proxy) or by writing to the
// real server; nothing stands in for the database.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/histrim/history"
)

// Stores is what a backend provides.
type Stores interface {
	history.StateStore
	Recall(scope string) history.Store
	ObserveShared(ctx context.Context, model string, sent, reported int) (history.Verdict, error)
	ObserveOverflowShared(ctx context.Context, model string, sent, limit int) error
	LoadCalibration(ctx context.Context, model string, cal *history.Calibration) error
	// Flush writes the elided results waiting in memory.
	Flush(ctx context.Context) error
}

// Backend opens a backend's stores for the suite.
type Backend struct {
	// Name prefixes the backend's errors ("redisstore").
	Name string
	// Addr is the real server's host:port.
	Addr string
	// Open returns stores connected to addr (the server's or a Proxy's)
	// whose keys live in the namespace ns, with every TTL set to ttl (0:
	// the defaults) and calls bounded by half a second. Each call is a
	// replica: its own client and connections. Open cleans up at the end
	// of the test.
	Open func(t testing.TB, addr, ns string, ttl time.Duration) Stores
	// CorruptCalibration overwrites model's Calibration in namespace ns
	// with bytes that are not one, on the server itself.
	CorruptCalibration func(t *testing.T, ns, model string)
	// Corruptions are values the backend can find under a key that it did
	// not write (corruption, another program, an operator's edit).
	Corruptions []Corruption
	// RecallWrites returns how many elided results s wrote to the server,
	// and in how many calls (round trips that carried some).
	RecallWrites func(s Stores) (entries, calls int)
}

// Corruption is a value the backend did not write, and how to write it
// on the server itself.
type Corruption struct {
	// Name says what the value is ("a non-integer version").
	Name string
	// Write puts the value under key (a plain ASCII key) in namespace ns,
	// in the keyspace of space: "state" or "calibration".
	Write func(t testing.TB, ns, space, key string)
	// Readable is set when the backend reads a version from it (foreign
	// bytes under a valid version): only the state's decoder refuses it.
	Readable bool
}

// Run runs the whole suite.
func Run(t *testing.T, b Backend) {
	t.Run("StateStore", func(t *testing.T) { testStateStore(t, b) })
	t.Run("NoLostUpdate", func(t *testing.T) { testNoLostUpdate(t, b) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, b) })
	t.Run("Recall", func(t *testing.T) { testRecall(t, b) })
	t.Run("Calibration", func(t *testing.T) { testCalibration(t, b) })
	t.Run("Replicas", func(t *testing.T) { testReplicas(t, b) })
	t.Run("Faults", func(t *testing.T) { testFaults(t, b) })
	t.Run("Unreadable", func(t *testing.T) { testUnreadable(t, b) })
	t.Run("HostileKeys", func(t *testing.T) { testHostileKeys(t, b) })
	t.Run("NestedScopes", func(t *testing.T) { testNestedScopes(t, b) })
}

// Server returns the address of the server a backend's tests run against,
// from the environment variable env, which .ci/services sets (source
// .ci/services && histrim_services_start), or skips the test: these tests
// need a real server (what names it).
func Server(t testing.TB, env, what string) string {
	v := os.Getenv(env)
	if v == "" {
		t.Skip(env + " is not set: these tests need a real " + what + " (.ci/services starts one)")
	}
	return v
}

// Namespace returns a namespace no other test uses.
func Namespace() string { return "t" + strconv.FormatUint(rand.Uint64()>>16, 36) }

// testStateStore: the compare-and-swap contract, on any bytes and keys.
func testStateStore(t *testing.T, b Backend) {
	ctx := context.Background()
	s := b.Open(t, b.Addr, Namespace(), 0)
	data, v, err := s.Load(ctx, "c1")
	must(t, err)
	if data != nil || v != 0 {
		t.Fatalf("an unknown key: %q, version %d; want nil, 0", data, v)
	}
	v1, err := s.Save(ctx, "c1", []byte("one"), 0)
	must(t, err)
	if v1 == 0 {
		t.Fatal("a save returned version 0")
	}
	for _, stale := range []int64{0, v1 + 1, v1 - 1} {
		if _, err := s.Save(ctx, "c1", []byte("lost"), stale); !errors.Is(err, history.ErrStateConflict) {
			t.Fatalf("a save at version %d over %d: %v, want a conflict", stale, v1, err)
		} else if !strings.HasPrefix(err.Error(), b.Name+":") {
			t.Fatalf("error %q does not start with %q", err, b.Name+":")
		}
	}
	bin := make([]byte, 0, 1<<20)
	for i := range cap(bin) {
		bin = append(bin, byte(i*7))
	}
	v2, err := s.Save(ctx, "c1", bin, v1)
	must(t, err)
	if v2 == v1 || v2 == 0 {
		t.Fatalf("version %d after %d", v2, v1)
	}
	data, v, err = s.Load(ctx, "c1")
	must(t, err)
	if v != v2 || string(data) != string(bin) {
		t.Fatalf("loaded %d bytes at version %d, want the %d saved at %d", len(data), v, len(bin), v2)
	}
	odd := "conv/ü:1 *?[x]{}"
	if _, err := s.Save(ctx, odd, []byte{}, 0); err != nil {
		t.Fatal(err)
	}
	data, v, err = s.Load(ctx, odd)
	must(t, err)
	if v == 0 || len(data) != 0 {
		t.Fatalf("an empty state: %q at %d", data, v)
	}
	if _, v, _ := s.Load(ctx, "c2"); v != 0 {
		t.Fatal("keys are not independent")
	}
}

// testNoLostUpdate: replicas (each its own client) increment one counter
// with load and compare-and-swap save, retrying on conflict; every
// increment is there at the end.
func testNoLostUpdate(t *testing.T, b Backend) {
	ctx := context.Background()
	ns := Namespace()
	const replicas, each = 4, 15
	var wg sync.WaitGroup
	conflicts := make([]int, replicas)
	for r := range replicas {
		s := b.Open(t, b.Addr, ns, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					data, v, err := s.Load(ctx, "counter")
					if err != nil {
						t.Error(err)
						return
					}
					n, _ := strconv.Atoi(string(data))
					_, err = s.Save(ctx, "counter", []byte(strconv.Itoa(n+1)), v)
					if err == nil {
						break
					}
					if !errors.Is(err, history.ErrStateConflict) {
						t.Error(err)
						return
					}
					conflicts[r]++
				}
			}
		}()
	}
	wg.Wait()
	data, _, err := b.Open(t, b.Addr, ns, 0).Load(ctx, "counter")
	must(t, err)
	if string(data) != strconv.Itoa(replicas*each) {
		t.Fatalf("counter %s after %d increments: an update was lost", data, replicas*each)
	}
	t.Logf("conflicts per replica (each retried): %v", conflicts)
}

// testExpiry: states, results and calibrations expire after their TTL; a
// state saved again from scratch never reuses the version a replica may
// remember.
func testExpiry(t *testing.T, b Backend) {
	ctx := context.Background()
	// Wide enough margins for a loaded machine: the result is renewed at
	// 0.6 ttl and checked at 1.1 ttl, after the state expired, with half a
	// ttl to spare (at 400 ms the spare was 50 ms, and runs failed).
	const ttl = time.Second
	s := b.Open(t, b.Addr, Namespace(), ttl)
	v1, err := s.Save(ctx, "k", []byte("a"), 0)
	must(t, err)
	rec := s.Recall("conv")
	r1 := history.Message{Role: history.RoleTool, ToolCallID: "c", Content: "x"}
	h1 := history.ElisionHandle(r1)
	must(t, rec.Put(h1, r1))
	must(t, s.Flush(ctx))
	_, err = s.ObserveShared(ctx, "m", 1000, 1100)
	must(t, err)
	time.Sleep(ttl * 6 / 10)
	if _, ok, err := rec.Get(ctx, h1); err != nil || !ok {
		t.Fatalf("a result within its TTL: %v %v", ok, err)
	}
	time.Sleep(ttl / 2)
	if _, v, err := s.Load(ctx, "k"); err != nil || v != 0 {
		t.Fatalf("an expired state: version %d, %v", v, err)
	}
	if _, ok, err := rec.Get(ctx, h1); err != nil || !ok {
		t.Fatalf("a recall renews the result's TTL: %v %v", ok, err)
	}
	var cal history.Calibration
	must(t, s.LoadCalibration(ctx, "m", &cal))
	if _, _, _, warm := cal.Model(); warm {
		t.Fatal("an expired calibration was loaded")
	}
	if _, err := s.Save(ctx, "k", []byte("b"), v1); !errors.Is(err, history.ErrStateConflict) {
		t.Fatalf("a save at the expired version: %v", err)
	}
	v2, err := s.Save(ctx, "k", []byte("b"), 0)
	must(t, err)
	if v2 == v1 {
		t.Fatalf("the state saved again has the version %d it had before it expired", v1)
	}
	time.Sleep(ttl + 150*time.Millisecond)
	if _, ok, _ := rec.Get(ctx, h1); ok {
		t.Fatal("a result past its TTL")
	}
}

// testRecall: results round-trip whole, scopes are separate, a Put waits
// in memory until a flush (or a state's save) writes it, and while the
// server is down a Put is kept and written when it is back, readable from
// this replica meanwhile and from any once written.
func testRecall(t *testing.T, b Backend) {
	ctx := context.Background()
	ns := Namespace()
	p := NewProxy(t, b.Addr)
	s := b.Open(t, p.Addr, ns, 0)
	other := b.Open(t, b.Addr, ns, 0)
	m := history.Message{Role: history.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "package main\n\x00ü",
		Parts: []history.Part{{Type: history.PartText, Text: "more"}, {Type: history.PartImage, MIMEType: "image/png", Width: 3, Height: 4, Size: 99}}}
	h := history.ElisionHandle(m)
	must(t, s.Recall("a").Put(h, m))
	must(t, s.Flush(ctx))
	got, ok, err := other.Recall("a").Get(ctx, h)
	must(t, err)
	if !ok || got.Content != m.Content || len(got.Parts) != 2 || got.Parts[1] != m.Parts[1] || got.Name != m.Name {
		t.Fatalf("round trip: %+v, %v", got, ok)
	}
	if _, ok, err := other.Recall("b").Get(ctx, h); ok || err != nil {
		t.Fatalf("scope b reads scope a's result: %v %v", ok, err)
	}
	text, err := history.RecallContext(ctx, other.Recall("a"), `{"id":"`+h+`"}`)
	must(t, err)
	if !strings.HasPrefix(text, m.Content) {
		t.Fatalf("recall: %q", text)
	}
	if _, err := history.RecallContext(ctx, other.Recall("a"), `{"id":"r000000000000000000000000"}`); !errors.Is(err, history.ErrUnknownHandle) {
		t.Fatalf("an unknown handle: %v", err)
	}

	p.Down()
	m2 := history.Message{Role: history.RoleTool, ToolCallID: "call_2", Content: "written while down"}
	h2 := history.ElisionHandle(m2)
	must(t, s.Recall("a").Put(h2, m2)) // kept in memory
	if got, ok, err := s.Recall("a").Get(ctx, h2); err != nil || !ok || got.Content != m2.Content {
		t.Fatalf("this replica reads what it kept: %v %v", ok, err)
	}
	if _, _, err := s.Recall("a").Get(ctx, h); err == nil || !strings.HasPrefix(err.Error(), b.Name+":") {
		t.Fatalf("a read while down: %v, want an error starting %q", err, b.Name+":")
	} else if _, err := history.RecallContext(ctx, s.Recall("a"), `{"id":"`+h+`"}`); err == nil || errors.Is(err, history.ErrUnknownHandle) {
		t.Fatalf("the recall tool while down: %v, want a store error, not an unknown id", err)
	}
	p.Up()
	m3 := history.Message{Role: history.RoleTool, ToolCallID: "call_3", Content: "after"}
	must(t, s.Recall("a").Put(history.ElisionHandle(m3), m3))
	must(t, s.Flush(ctx)) // writes what waited and m3
	for _, want := range []history.Message{m2, m3} {
		got, ok, err := other.Recall("a").Get(ctx, history.ElisionHandle(want))
		if err != nil || !ok || got.Content != want.Content {
			t.Fatalf("another replica after the server came back: %q %v %v", got.Content, ok, err)
		}
	}
}

// testCalibration: replicas observing one model at once all count; the
// merged Calibration loads anywhere; a corrupt one is replaced.
func testCalibration(t *testing.T, b Backend) {
	ctx := context.Background()
	ns := Namespace()
	const replicas, each = 4, 3
	var wg sync.WaitGroup
	for r := range replicas {
		s := b.Open(t, b.Addr, ns, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				sent := 10_000 + 1000*(r*each+j)
				if v, err := s.ObserveShared(ctx, "gpt-x", sent, sent*12/10+300); err != nil {
					t.Error(err)
				} else if v != history.VerdictUsed && v != history.VerdictRestarted {
					t.Errorf("verdict %v", v)
				}
			}
		}()
	}
	wg.Wait()
	s := b.Open(t, b.Addr, ns, 0)
	var cal history.Calibration
	must(t, s.LoadCalibration(ctx, "gpt-x", &cal))
	data, _ := cal.MarshalJSON()
	if n := strings.Count(string(data), "],["); n+1 != replicas*each {
		t.Fatalf("%d observations merged, want %d: %s", n+1, replicas*each, data)
	}
	scale, overhead, _, ok := cal.Model()
	if !ok || scale < 1.15 || scale > 1.25 {
		t.Fatalf("merged model: scale %v overhead %v ok %v", scale, overhead, ok)
	}
	if got := cal.Budget(100_000); got >= 100_000*10/12 {
		t.Fatalf("Budget(100000) = %d: the merged calibration does not aim below the provider's count", got)
	}
	if v, err := s.ObserveShared(ctx, "gpt-x", 0, 5); err != nil || v != history.VerdictInvalid {
		t.Fatalf("an invalid observation: %v %v", v, err)
	}
	must(t, s.ObserveOverflowShared(ctx, "gpt-x", 90_000, 80_000))

	// A corrupt calibration: refused by LoadCalibration, replaced by the
	// next observation.
	ns2 := Namespace()
	other := b.Open(t, b.Addr, ns2, 0)
	_, err := other.ObserveShared(ctx, "m2", 1000, 1100)
	must(t, err)
	b.CorruptCalibration(t, ns2, "m2")
	var c2 history.Calibration
	if err := other.LoadCalibration(ctx, "m2", &c2); !errors.Is(err, history.ErrInvalidCalibration) {
		t.Fatalf("a corrupt calibration loaded: %v", err)
	} else if !strings.HasPrefix(err.Error(), b.Name+":") {
		t.Fatalf("error %q does not start with %q", err, b.Name+":")
	}
	if v, err := other.ObserveShared(ctx, "m2", 1000, 1200); err != nil || v != history.VerdictUsed {
		t.Fatalf("observing over a corrupt calibration: %v %v", v, err)
	}
	must(t, other.LoadCalibration(ctx, "m2", &c2))
	if scale, _, _, ok := c2.Model(); !ok || scale < 1.19 || scale > 1.21 {
		t.Fatalf("the replaced calibration: scale %v, %v", scale, ok)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Session returns a synthetic tool-heavy agent session of turns turns: a
// system prompt, then for each turn a user request, one to four tool
// steps whose results are 20 to 600 words, and a reply.
func Session(turns int, seed uint64) []history.Message {
	r := rand.New(rand.NewPCG(seed, 11))
	words := func(n int) string { return strings.Repeat("lorem ", n) + strconv.Itoa(n) }
	msgs := []history.Message{{Role: history.RoleSystem, Content: "You are a coding agent. " + words(60)}}
	for i := range turns {
		id := "t" + strconv.Itoa(i)
		msgs = append(msgs, history.Message{Role: history.RoleUser, Content: "request " + id + ": " + words(5+r.IntN(30))})
		for c := range 1 + r.IntN(4) {
			cid := fmt.Sprintf("%sc%d", id, c)
			msgs = append(msgs,
				history.Message{Role: history.RoleAssistant, Content: "looking", ToolCalls: []history.ToolCall{{ID: cid, Name: "read_file", Arguments: `{"path":"f` + cid + `.go"}`}}},
				history.Message{Role: history.RoleTool, ToolCallID: cid, Name: "read_file", Content: id + " " + words(20+r.IntN(580))})
		}
		msgs = append(msgs, history.Message{Role: history.RoleAssistant, Content: "done " + words(10+r.IntN(40))})
	}
	return msgs
}

// Requests returns the transcripts sent, one before every assistant
// message of full.
func Requests(full []history.Message) [][]history.Message {
	var reqs [][]history.Message
	for n := 1; n < len(full); n++ {
		if full[n].Role == history.RoleAssistant {
			reqs = append(reqs, full[:n])
		}
	}
	return reqs
}
