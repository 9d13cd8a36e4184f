package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/histrim/history"
)

// budget is the replica tests' budget: a tenth of the session, so that
// every rung and maintenance point is exercised.
const budget = 3000

// policy is an option set of the replica tests, built per replica around
// its recall store, the shared clock and the run's summariser.
type policy struct {
	name string
	opts func(recall history.Store, clock func() time.Time, sum history.Summarizer) []history.Option
}

func policies() []policy {
	return []policy{
		{"low water", func(_ history.Store, clock func() time.Time, _ history.Summarizer) []history.Option {
			return []history.Option{history.WithLowWater(0.7), history.WithClock(clock)}
		}},
		{"trigger", triggerPolicy},
		{"summaries", func(_ history.Store, clock func() time.Time, sum history.Summarizer) []history.Option {
			return []history.Option{history.WithLowWater(0.6), history.WithSummarizer(sum, history.SummaryOptions{MaxTokens: 300}), history.WithClock(clock)}
		}},
		{"cold after", func(recall history.Store, clock func() time.Time, _ history.Summarizer) []history.Option {
			return []history.Option{history.WithLowWater(0.7), history.WithElision(history.ElideOptions{KeepRecent: 1, Store: recall}),
				history.WithColdAfter(5 * time.Minute), history.WithClock(clock)}
		}},
	}
}

// triggerPolicy is the compact trigger policy docs/prompt-caching.md
// recommends, with the recall store.
func triggerPolicy(recall history.Store, clock func() time.Time, _ history.Summarizer) []history.Option {
	return []history.Option{history.WithTrigger(0.6), history.WithLowWater(0.36),
		history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: 64, Store: recall}), history.WithStepTrim(),
		history.WithClock(clock)}
}

// run is what one replay sent and reported.
type run struct {
	prompts                        [][]history.Message
	summaries, coldResumes, events int
	states                         map[string]int
	elided                         map[string]string // handle → original content
	stores                         []Stores
	puts                           *puts
}

// puts counts the puts of elided results of a replay's replicas, and the
// distinct keys put.
type puts struct {
	mu   sync.Mutex
	n    int
	keys map[string]bool
}

// putCounter is a replica's recall Store, counting its puts in c.
type putCounter struct {
	history.Store
	c *puts
}

func (p putCounter) Put(handle string, m history.Message) error {
	p.c.mu.Lock()
	p.c.n++
	p.c.keys[handle] = true
	p.c.mu.Unlock()
	return p.Store.Put(handle, m)
}

// replay sends every request of full to one of replicas replicas (each its
// own connection, in namespace ns) at random, a minute apart and two hours
// apart before every ninth, and checks every request.
func replay(t *testing.T, b Backend, full []history.Message, p policy, replicas int, ns string, seed uint64) run {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var calls atomic.Int64
	sum := summarizer(&calls)
	r := run{states: map[string]int{}, elided: map[string]string{}, puts: &puts{keys: map[string]bool{}}}
	var events []history.Event
	onTrim := history.WithOnTrim(func(e history.Event) { events = append(events, e) })
	convs := make([]*history.Conversations, replicas)
	for i := range convs {
		s := b.Open(t, b.Addr, ns, 0)
		r.stores = append(r.stores, s)
		rec := putCounter{s.Recall(""), r.puts}
		convs[i] = history.NewConversations(s, append(p.opts(rec, clock, sum), onTrim)...)
	}
	orig := cloneAll(full)
	rnd := rand.New(rand.NewPCG(seed, 3))
	for i, req := range Requests(full) {
		now = now.Add(time.Minute)
		if i%9 == 8 {
			now = now.Add(2 * time.Hour)
		}
		res, err := convs[rnd.IntN(replicas)].Trim(ctx, "conv", req, budget)
		checkRequest(t, i, req, res, err, r.elided)
		r.prompts = append(r.prompts, res.Messages)
	}
	if !reflect.DeepEqual(full, orig) {
		t.Fatal("the transcript was modified")
	}
	for _, e := range events {
		r.states[e.State]++
		r.summaries += boolInt(e.Summary == history.SummaryWritten)
		r.coldResumes += boolInt(e.Reason == history.ReasonColdResume)
	}
	r.events = len(events)
	if int(calls.Load()) != r.summaries {
		t.Fatalf("%d summariser calls, %d events say written", calls.Load(), r.summaries)
	}
	return r
}

// summarizer writes a summary that is never the same twice (it numbers its
// calls), as a model's is not: replicas send one process's prompts only
// if they reuse the summary saved in the state instead of writing another.
func summarizer(calls *atomic.Int64) history.Summarizer {
	return history.SummarizerFunc(func(_ context.Context, dropped []history.Message, prev *history.Message) (history.Message, error) {
		n := calls.Add(1)
		text := fmt.Sprintf("Summary #%d of %d messages. ", n, len(dropped)) + strings.Repeat("gist ", 80)
		return history.Message{Role: history.RoleUser, Content: text}, nil
	})
}

// testReplicas: three replicas sharing the store, each request to one at
// random, send byte for byte the prompts one replica sends, write no more
// summaries, and any replica recalls every result elided.
func testReplicas(t *testing.T, b Backend) {
	full := Session(40, 5)
	for _, p := range policies() {
		t.Run(p.name, func(t *testing.T) {
			one := replay(t, b, full, p, 1, Namespace(), 1)
			three := replay(t, b, full, p, 3, Namespace(), 2)
			if len(one.prompts) != len(three.prompts) {
				t.Fatalf("%d requests against %d", len(one.prompts), len(three.prompts))
			}
			for i := range one.prompts {
				if !reflect.DeepEqual(one.prompts[i], three.prompts[i]) {
					t.Fatalf("request %d: three replicas sent another prompt than one", i)
				}
			}
			if three.summaries > one.summaries || three.coldResumes != one.coldResumes || three.events != one.events {
				t.Fatalf("three replicas: %d summaries, %d cold resumes, %d events; one: %d, %d, %d",
					three.summaries, three.coldResumes, three.events, one.summaries, one.coldResumes, one.events)
			}
			if three.states[history.StateRestored] == 0 || three.states[history.StateRefused]+three.states[history.StateUnavailable]+three.states[history.StateConflict] > 0 {
				t.Fatalf("event states %v", three.states)
			}
			recallAll(t, three.stores, three.elided)
			if b.RecallWrites != nil && three.puts.n > 0 {
				written := func(r run) (entries, calls int) {
					for _, s := range r.stores {
						must(t, s.Flush(context.Background()))
						e, c := b.RecallWrites(s)
						entries, calls = entries+e, calls+c
					}
					return entries, calls
				}
				e1, c1 := written(one)
				e3, c3 := written(three)
				t.Logf("elided results: 1 replica wrote %d in %d calls, 3 replicas %d in %d calls, for %d distinct results put %d times",
					e1, c1, e3, c3, len(three.puts.keys), three.puts.n)
				if e1 != len(one.puts.keys) || e3 > 3*len(three.puts.keys) {
					t.Fatalf("results written again: %d by one replica for %d distinct, %d by three for %d", e1, len(one.puts.keys), e3, len(three.puts.keys))
				}
			}
			t.Logf("%d requests, %d events (states %v), %d summaries, %d cold resumes, %d results elided",
				len(one.prompts), three.events, three.states, three.summaries, three.coldResumes, len(three.elided))
		})
	}
}

// recallAll recalls every elided result through the recall tool of a
// replica chosen in turn, and checks that the original comes back.
func recallAll(t *testing.T, stores []Stores, elided map[string]string) {
	t.Helper()
	i := 0
	for _, h := range slices.Sorted(maps.Keys(elided)) {
		s := stores[i%len(stores)]
		i++
		// Conversations keep each conversation's results under its key.
		text, err := history.RecallContext(context.Background(), history.ScopeStore(s.Recall(""), "conv"), `{"id":"`+h+`"}`)
		if err != nil || text != elided[h] {
			t.Fatalf("recalling %s from replica %d: %v (%d bytes, want %d)", h, i%len(stores), err, len(text), len(elided[h]))
		}
	}
}

var handleRE = regexp.MustCompile(`r[0-9a-f]{24}`)

// checkRequest checks what holds for every request whatever happened to
// the state: an error only for a latest turn too large, no broken tool
// pair, the latest message sent, every message sent the transcript's (or a
// notice, or a placeholder of a result the transcript has), within the
// budget unless the error says why. Placeholders naming a handle are
// recorded in elided.
func checkRequest(t testing.TB, i int, req []history.Message, res history.Result, err error, elided map[string]string) {
	t.Helper()
	var be *history.BudgetError
	if err != nil && !errors.As(err, &be) {
		t.Fatalf("request %d: %v", i, err)
	}
	if _, rep := history.SweepOrphans(res.Messages); rep.Total()+rep.Messages > 0 {
		t.Fatalf("request %d: broken tool pairs %+v", i, rep)
	}
	if len(res.Messages) == 0 || !reflect.DeepEqual(res.Messages[len(res.Messages)-1], req[len(req)-1]) {
		t.Fatalf("request %d: the latest message is not sent", i)
	}
	if len(res.Kept) != len(res.Messages) {
		t.Fatalf("request %d: Kept does not parallel Messages", i)
	}
	for j, k := range res.Kept {
		m := res.Messages[j]
		switch {
		case k < 0:
			if m.Kind != history.KindBreadcrumb && m.Kind != history.KindSummary {
				t.Fatalf("request %d: an inserted message of kind %q", i, m.Kind)
			}
		case k >= len(req):
			t.Fatalf("request %d: Kept %d past the transcript", i, k)
		case m.Kind == history.KindElided:
			if m.ToolCallID != req[k].ToolCallID {
				t.Fatalf("request %d: a placeholder for another result", i)
			}
			if h := handleRE.FindString(m.Content); h != "" {
				if h != history.ElisionHandle(req[k]) {
					t.Fatalf("request %d: placeholder handle %s is not the result's", i, h)
				}
				elided[h] = req[k].Content
			}
		case m.Role == history.RoleAssistant:
			if m.Content != req[k].Content || len(m.ToolCalls) != len(req[k].ToolCalls) {
				t.Fatalf("request %d: message %d differs from the transcript's %d", i, j, k)
			}
		default:
			if !reflect.DeepEqual(m, req[k]) {
				t.Fatalf("request %d: message %d differs from the transcript's %d", i, j, k)
			}
		}
	}
	if err == nil && history.Estimate(res.Messages, history.Heuristic()) > budget {
		t.Fatalf("request %d: over budget without an error", i)
	}
}

// interleaved is a replica's StateStore (the real one) through which
// another replica's request runs between this one's load and save, once:
// the race of two replicas on one conversation, made deterministic.
type interleaved struct {
	history.StateStore
	between func()
}

func (s *interleaved) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	if f := s.between; f != nil {
		s.between = nil
		f()
	}
	return s.StateStore.Save(ctx, key, state, version)
}

// testFaults: the server down (through a proxy), a save conflict between
// two replicas, a corrupt and a foreign state, the server back. Every
// request is valid and sends its latest message, the transcript is never
// modified, every result elided (even while down) is recalled afterwards,
// and each Event says where its state came from.
func testFaults(t *testing.T, b Backend) {
	ctx := context.Background()
	ns := Namespace()
	full := Session(40, 9)
	orig := cloneAll(full)
	reqs := Requests(full)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var states []string
	onTrim := history.WithOnTrim(func(e history.Event) { states = append(states, e.State) })
	p := NewProxy(t, b.Addr)
	elided := map[string]string{}
	var stores []Stores
	replica := func(opts func(history.Store, func() time.Time, history.Summarizer) []history.Option, wrap func(history.StateStore) history.StateStore) *history.Conversations {
		s := b.Open(t, p.Addr, ns, 0)
		stores = append(stores, s)
		var st history.StateStore = s
		if wrap != nil {
			st = wrap(s)
		}
		return history.NewConversations(st, append(opts(s.Recall(""), clock, nil), onTrim)...)
	}
	var between *interleaved
	a := replica(triggerPolicy, nil)
	bb := replica(triggerPolicy, func(s history.StateStore) history.StateStore { between = &interleaved{StateStore: s}; return between })
	// send returns the request's Result and its Event.State, "" when it
	// had no event (a Conversations trim reports one only when it trimmed
	// something: a plan reused as it is has none).
	send := func(c *history.Conversations, i int) (history.Result, string) {
		t.Helper()
		now = now.Add(time.Minute)
		n := len(states)
		res, err := c.Trim(ctx, "conv", reqs[i], budget)
		checkRequest(t, i, reqs[i], res, err, elided)
		if len(states) == n {
			return res, ""
		}
		return res, states[len(states)-1]
	}
	expect := func(i int, got string, want ...string) {
		t.Helper()
		if !slices.Contains(want, got) {
			t.Fatalf("request %d: Event.State %q, want one of %v", i, got, want)
		}
	}
	version := func() int64 {
		t.Helper()
		_, v, err := stores[0].Load(ctx, "conv")
		must(t, err)
		return v
	}
	i := 0
	for ; i < 20; i++ {
		_, st := send([]*history.Conversations{a, bb}[i%2], i)
		if i > 0 {
			expect(i, st, "", history.StateRestored)
		}
	}

	// The store is down: trims go on, with what the replica has or fresh,
	// and save nothing.
	saved := version()
	fresh := replica(triggerPolicy, nil) // a replica that never saw the conversation
	p.Down()
	_, st := send(bb, i)
	expect(i, st, "", history.StateUnavailable)
	i++
	_, st = send(fresh, i)
	expect(i, st, history.StateUnavailable) // a fresh trim over the budget: always an event
	i++
	_, st = send(a, i)
	expect(i, st, "", history.StateUnavailable)
	i++
	p.Up()
	if v := version(); v != saved {
		t.Fatalf("version %d after the store was down, %d before", v, saved)
	}

	// The store is back and used again.
	_, st = send(bb, i)
	expect(i, st, "", history.StateLocal, history.StateRestored)
	i++
	if v := version(); v != saved+1 {
		t.Fatalf("version %d after a save at %d", v, saved)
	}

	// A save conflict: replica a's request runs between b's load and save.
	before := version()
	var ares history.Result
	between.between = func() {
		var ast string
		ares, ast = send(a, i)
		expect(i, ast, "", history.StateRestored)
	}
	bres, st := send(bb, i)
	expect(i, st, "", history.StateConflict)
	if !reflect.DeepEqual(ares.Messages, bres.Messages) {
		t.Fatal("the replica that lost the race did not trim again from the winner's state")
	}
	if after := version(); after != before+2 {
		t.Fatalf("version %d after two saves from %d: one was lost", after, before)
	}
	i++

	// A corrupt state is refused (a fresh trim: an event), and replaced by
	// the next save.
	data, v, err := stores[0].Load(ctx, "conv")
	must(t, err)
	_, err = stores[0].Save(ctx, "conv", append([]byte("htrm"), data[len(data)/2:]...), v)
	must(t, err)
	_, st = send(a, i)
	expect(i, st, history.StateRefused)
	i++
	_, st = send(bb, i)
	expect(i, st, "", history.StateRestored)
	i++

	// A replica with other options refuses the state, and the others
	// refuse the one it saves.
	foreign := replica(func(recall history.Store, clock func() time.Time, _ history.Summarizer) []history.Option {
		return []history.Option{history.WithLowWater(0.5), history.WithClock(clock)}
	}, nil)
	_, st = send(foreign, i)
	expect(i, st, history.StateRefused)
	i++
	_, st = send(a, i)
	expect(i, st, history.StateRefused)
	i++

	for ; i < len(reqs); i++ {
		_, st = send([]*history.Conversations{a, bb}[i%2], i)
		expect(i, st, "", history.StateRestored)
	}
	if !reflect.DeepEqual(full, orig) {
		t.Fatal("the transcript was modified")
	}
	// Nothing elided is lost: each replica writes what it kept while the
	// store was down with its next save (a and b did) or a flush (the
	// replica that served only while the store was down, as it stops), and
	// then any replica reads it all.
	for _, s := range stores {
		must(t, s.Flush(ctx))
	}
	recallAll(t, append(stores, b.Open(t, b.Addr, ns, 0)), elided)
	t.Logf("%d requests, %d results elided, states %v", len(reqs), len(elided), countStates(states))
}

func countStates(states []string) map[string]int {
	m := map[string]int{}
	for _, s := range states {
		m[s]++
	}
	return m
}

func cloneAll(msgs []history.Message) []history.Message {
	out := make([]history.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
