package replicas

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/corpus"
	redisstore "github.com/histrim/history/stores/redis"
	"github.com/redis/go-redis/v9"
)

const corpusDir = "../../../shared/corpus/real"

func TestHash(t *testing.T) {
	a := []history.Message{{Role: history.RoleUser, Content: "ab"}, {Role: history.RoleAssistant, Content: "c"}}
	b := []history.Message{{Role: history.RoleUser, Content: "a"}, {Role: history.RoleAssistant, Content: "bc"}}
	c := []history.Message{{Role: history.RoleUser, Content: "ab"}, {Role: history.RoleAssistant, Content: "c", Kind: history.KindElided}}
	if Hash(a) == Hash(b) || Hash(a) == Hash(c) || Hash(a) != Hash(append([]history.Message(nil), a...)) {
		t.Fatal("Hash does not tell prompts apart by every field")
	}
}

// memory is the in-process store with its recall Store.
type memory struct {
	*history.MemoryStateStore
	rec *history.MemoryStore
}

func (m memory) Recall(string) history.Store { return m.rec }

// TestReplayInMemory: three replicas sharing a store in memory send one
// replica's prompts over a synthetic session, and every result elided is
// recalled.
func TestReplayInMemory(t *testing.T) {
	var s []history.Message
	s = append(s, history.Message{Role: history.RoleSystem, Content: "agent"})
	for u := range 25 {
		id := strconv.Itoa(u)
		s = append(s, history.Message{Role: history.RoleUser, Content: "task " + id})
		for k := range 4 {
			cid := id + "_" + strconv.Itoa(k)
			s = append(s, history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: cid, Name: "read"}}},
				history.Message{Role: history.RoleTool, ToolCallID: cid, Content: strings.Repeat("z", 1500+k) + cid})
		}
		s = append(s, history.Message{Role: history.RoleAssistant, Content: "done " + id})
	}
	for _, p := range Policies(15_000) {
		one, err := Replay(s, p, 1, nil, "", 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := memory{&history.MemoryStateStore{}, history.NewMemoryStore()}
		three, err := Replay(s, p, 3, st, "k", 2, &one)
		if err != nil {
			t.Fatal(err)
		}
		if three.Identical != one.Stats.Requests || three.Stats.Billed != one.Stats.Billed {
			t.Fatalf("%s: %d of %d prompts identical, billed %.0f against %.0f", p.Name, three.Identical, one.Stats.Requests, three.Stats.Billed, one.Stats.Billed)
		}
		got, err := RecallAll(context.Background(), st, three)
		if err != nil || got != len(three.Handles) {
			t.Fatalf("%s: recalled %d of %d: %v", p.Name, got, len(three.Handles), err)
		}
	}
}

// timed is a StateStore that adds up the time spent in it.
type timed struct {
	history.StateStore
	spent time.Duration
	bytes int
}

func (s *timed) Load(ctx context.Context, key string) ([]byte, int64, error) {
	start := time.Now()
	defer func() { s.spent += time.Since(start) }()
	return s.StateStore.Load(ctx, key)
}

func (s *timed) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	start := time.Now()
	defer func() { s.spent += time.Since(start) }()
	s.bytes += len(state)
	return s.StateStore.Save(ctx, key, state, version)
}

// BenchmarkStateCost measures what keeping a Trimmer's state in a local
// Redis costs per request, against the trim itself: each iteration replays
// the corpus's coding session (3,399 requests, budget 128k) twice, request
// by request, with a plain Trimmer and with Conversations over Redis (one
// replica, or three at random), timing each call. It reports per request
// the trim's time, the state's (the Conversations call less the trim:
// load, save, and decoding another replica's state), the part of it spent
// waiting for Redis, and the state's time as a ratio to the trim's.
//
//	HISTRIM_REDIS_ADDR=... go test -run '^$' -bench StateCost -benchtime 2x ./replicas
func BenchmarkStateCost(b *testing.B) {
	addr := os.Getenv("HISTRIM_REDIS_ADDR")
	if addr == "" {
		b.Skip("HISTRIM_REDIS_ADDR is not set: this benchmark needs a real Redis (.ci/services starts one)")
	}
	if files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl")); len(files) == 0 {
		b.Skip("the shared corpus is not beside the repository (" + corpusDir + ")")
	}
	convs, err := corpus.Load(corpusDir)
	if err != nil {
		b.Fatal(err)
	}
	session := corpus.Session(corpus.Select(convs, "claude-code", "openhands", "swe-agent"), 400)
	var reqs [][]history.Message
	for i := 1; i < len(session); i++ {
		if session[i].Role == history.RoleAssistant {
			reqs = append(reqs, session[:i])
		}
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	st, err := redisstore.New(rdb, redisstore.Options{Prefix: "histrim-bench:"})
	if err != nil {
		b.Fatal(err)
	}
	const budget = 128_000
	policies := map[string][]history.Option{
		"low-water 0.7": {history.WithLowWater(0.7)},
		"trigger policy": {history.WithTrigger(0.6), history.WithLowWater(0.36),
			history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: 64, Store: st.Recall("")}), history.WithStepTrim()},
	}
	ctx := context.Background()
	for _, name := range []string{"low-water 0.7", "trigger policy"} {
		for _, n := range []int{1, 3} {
			b.Run(name+"/replicas="+strconv.Itoa(n), func(b *testing.B) {
				// Both log their events, as a runtime does (the README's
				// LogTrims): a Trimmer with an event callback keeps the
				// keys of its last prompt, which Conversations always has.
				opts := append(policies[name], history.WithCounter(history.NewCache(history.Heuristic(), 0)),
					history.WithOnTrim(func(history.Event) {}))
				var trim, conv time.Duration
				store := &timed{StateStore: st}
				requests := 0
				iter := 0
				for b.Loop() {
					iter++
					tr := history.NewTrimmer(opts...)
					cs := make([]*history.Conversations, n)
					for i := range cs {
						cs[i] = history.NewConversations(store, opts...)
					}
					key := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
					for i, req := range reqs {
						t0 := time.Now()
						if _, err := tr.Trim(req, budget); err != nil && !isBudget(err) {
							b.Fatal(err)
						}
						t1 := time.Now()
						if _, err := cs[i%n].Trim(ctx, key, req, budget); err != nil && !isBudget(err) {
							b.Fatal(err)
						}
						trim += t1.Sub(t0)
						conv += time.Since(t1)
						requests++
					}
				}
				per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(requests) }
				b.ReportMetric(per(trim), "trim-µs/req")
				b.ReportMetric(per(conv-trim), "state-µs/req")
				b.ReportMetric(per(store.spent), "redis-µs/req")
				b.ReportMetric(float64(conv-trim)/float64(trim), "state/trim")
				b.ReportMetric(float64(store.bytes)/float64(requests), "state-bytes/req")
			})
		}
	}
}

func isBudget(err error) bool {
	_, ok := err.(*history.BudgetError)
	return ok
}
