package replicas

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/corpus"
	pgstore "github.com/histrim/history/stores/postgres"
	redisstore "github.com/histrim/history/stores/redis"
	"github.com/jackc/pgx/v5/pgxpool"
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
// Redis or PostgreSQL (default durability: each save is a commit, flushed
// to disk) costs per request, against the trim itself: each iteration
// replays the corpus's coding session (3,399 requests, budget 128k) twice,
// request by request, with a plain Trimmer and with Conversations over the
// store (one replica, or three at random), timing each call. It reports
// per request the trim's time, the state's (the Conversations call less
// the trim: load, save, and decoding another replica's state), the part of
// it spent waiting for the store, the state's time as a ratio to the
// trim's, and the p99 of the Conversations call (trim and state).
//
//	HISTRIM_REDIS_ADDR=... HISTRIM_POSTGRES_DSN=... go test -run '^$' -bench StateCost -benchtime 2x ./replicas
func BenchmarkStateCost(b *testing.B) {
	if files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl")); len(files) == 0 {
		b.Skip("the shared corpus is not beside the repository (" + corpusDir + ")")
	}
	ctx := context.Background()
	var backends []struct {
		name string
		st   Backend
	}
	if addr := os.Getenv("HISTRIM_REDIS_ADDR"); addr != "" {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		st, err := redisstore.New(rdb, redisstore.Options{Prefix: "histrim-bench:"})
		if err != nil {
			b.Fatal(err)
		}
		backends = append(backends, struct {
			name string
			st   Backend
		}{"Redis", st})
	}
	if dsn := os.Getenv("HISTRIM_POSTGRES_DSN"); dsn != "" {
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		st, err := pgstore.New(pool, pgstore.Options{Table: "histrim_bench_cost"})
		if err == nil {
			err = st.CreateTables(ctx)
		}
		if err != nil {
			b.Fatal(err)
		}
		backends = append(backends, struct {
			name string
			st   Backend
		}{"Postgres", st})
	}
	if len(backends) == 0 {
		b.Skip("neither HISTRIM_REDIS_ADDR nor HISTRIM_POSTGRES_DSN is set: this benchmark needs a real server (.ci/services starts them)")
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
	const budget = 128_000
	for _, bk := range backends {
		policies := map[string][]history.Option{
			"low-water 0.7": {history.WithLowWater(0.7)},
			"trigger policy": {history.WithTrigger(0.6), history.WithLowWater(0.36),
				history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: 64, Store: bk.st.Recall("")}), history.WithStepTrim()},
		}
		for _, name := range []string{"low-water 0.7", "trigger policy"} {
			for _, n := range []int{1, 3} {
				b.Run(bk.name+"/"+name+"/replicas="+strconv.Itoa(n), func(b *testing.B) {
					// Both log their events, as a runtime does (the README's
					// LogTrims): a Trimmer with an event callback keeps the
					// keys of its last prompt, which Conversations always has.
					opts := append(policies[name], history.WithCounter(history.NewCache(history.Heuristic(), 0)),
						history.WithOnTrim(func(history.Event) {}))
					var trim, conv time.Duration
					var calls []time.Duration
					store := &timed{StateStore: bk.st}
					requests := 0
					for b.Loop() {
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
							d := time.Since(t1)
							trim += t1.Sub(t0)
							conv += d
							calls = append(calls, d)
							requests++
						}
					}
					slices.Sort(calls)
					per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(requests) }
					b.ReportMetric(per(trim), "trim-µs/req")
					b.ReportMetric(per(conv-trim), "state-µs/req")
					b.ReportMetric(per(store.spent), "store-µs/req")
					b.ReportMetric(float64(conv-trim)/float64(trim), "state/trim")
					b.ReportMetric(float64(store.bytes)/float64(requests), "state-bytes/req")
					b.ReportMetric(float64(calls[len(calls)*99/100].Microseconds())/1000, "p99-ms")
				})
			}
		}
	}
}

func isBudget(err error) bool {
	_, ok := err.(*history.BudgetError)
	return ok
}
