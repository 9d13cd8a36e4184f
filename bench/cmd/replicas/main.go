// Command replicas replays the corpus's long sessions as a runtime with
// three replicas behind a load balancer would serve them (issue 28): every
// request sent to one of three replicas at random, each with its own
// Trimmer for the conversation, sharing the Trimmer's state through Redis,
// Postgres or memory, or sharing nothing; and one replica for reference.
// It prints, per session, policy and store: whether each request's prompt
// is the one replica's byte for byte, prefix rewrites, billed input (the
// price model of package cachesim), summaries written, cold resumes, and
// whether every result elided can be recalled from another replica.
//
// Usage (from the bench module; the servers as .ci/services starts them):
//
//	source ../.ci/services && histrim_services_start
//	go run ./cmd/replicas [-corpus DIR] [-turns 400] [-sessions coding,all]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/cachesim"
	"github.com/histrim/history/bench/corpus"
	"github.com/histrim/history/bench/replicas"
	pgstore "github.com/histrim/history/stores/postgres"
	redisstore "github.com/histrim/history/stores/redis"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

type sessionSpec struct {
	name     string
	prefixes []string
	budget   int
}

var specs = map[string]sessionSpec{
	"coding":  {"coding (Claude Code, OpenHands, SWE-agent)", []string{"claude-code", "openhands", "swe-agent"}, 128_000},
	"support": {"support (tau-bench, ToolBench, SWE-agent text)", []string{"tau-bench", "toolbench", "swe-agent__text"}, 32_000},
	"all":     {"all 61 conversations", []string{""}, 128_000},
}

// backend is a named store, and how to open another client to it (a
// replica that sent nothing, for the recall check).
type backend struct {
	name string
	open func() replicas.Backend
}

func main() {
	dir := flag.String("corpus", corpus.DefaultDir, "directory of the shared corpus (*.jsonl)")
	turns := flag.Int("turns", 400, "minimum user turns per session")
	sessions := flag.String("sessions", "coding,all", "sessions to replay: coding, support, all")
	n := flag.Int("replicas", 3, "replicas")
	flag.Parse()
	log.SetFlags(0)
	ctx := context.Background()

	convs, err := corpus.Load(*dir)
	if err != nil {
		log.Fatal(err)
	}
	// In memory, "replicas" share one process: the same store for all.
	mem := memory{&history.MemoryStateStore{}, history.NewMemoryStore()}
	backends := []backend{{"memory", func() replicas.Backend { return mem }}}
	if addr := os.Getenv("HISTRIM_REDIS_ADDR"); addr != "" {
		backends = append(backends, backend{"Redis", func() replicas.Backend {
			s, err := redisstore.New(redis.NewClient(&redis.Options{Addr: addr}), redisstore.Options{Prefix: "histrim-bench:"})
			if err != nil {
				log.Fatal(err)
			}
			return s
		}})
	} else {
		log.Print("HISTRIM_REDIS_ADDR is not set: no Redis runs")
	}
	if dsn := os.Getenv("HISTRIM_POSTGRES_DSN"); dsn != "" {
		backends = append(backends, backend{"Postgres", func() replicas.Backend {
			pool, err := pgxpool.New(ctx, dsn)
			if err != nil {
				log.Fatal(err)
			}
			s, err := pgstore.New(pool, pgstore.Options{Table: "histrim_bench"})
			if err == nil {
				err = s.CreateTables(ctx)
			}
			if err != nil {
				log.Fatal(err)
			}
			return s
		}})
	} else {
		log.Print("HISTRIM_POSTGRES_DSN is not set: no Postgres runs")
	}
	run := time.Now().UnixNano()

	for _, name := range strings.Split(*sessions, ",") {
		sp, ok := specs[name]
		if !ok {
			log.Fatalf("unknown session %q", name)
		}
		s := corpus.Session(corpus.Select(convs, sp.prefixes...), *turns)
		fmt.Printf("\n### Session: %s\n\n%d messages, %d tokens, budget %d; %d replicas, each request to one at random\n\n",
			sp.name, len(s), history.Estimate(s, cachesim.Counter), sp.budget, *n)
		fmt.Println("| policy | replicas | state shared | prompts identical to 1 replica | prefix rewrites | billed (tok-equiv) | vs 1 replica | summaries | cold resumes (on a warm cache) | results elided, recalled from another replica | replay |")
		fmt.Println("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
		for pi, p := range replicas.Policies(sp.budget) {
			key := func(b string) string { return fmt.Sprintf("%d/%s/%d/%s", run, name, pi, b) }
			one, err := replicas.Replay(s, p, 1, nil, "", 1, nil)
			check(err, one)
			row(p.Name, "1", "—", one, one, "")
			for _, b := range backends {
				st := b.open()
				r, err := replicas.Replay(s, p, *n, st, key(b.name), 2, &one)
				check(err, r)
				recall := ""
				if len(r.Handles) > 0 {
					got, err := replicas.RecallAll(ctx, b.open(), r)
					if err != nil {
						log.Fatal(err)
					}
					recall = fmt.Sprintf("%d of %d", got, len(r.Handles))
				}
				row(p.Name, fmt.Sprint(*n), b.name, r, one, recall)
			}
			apart, err := replicas.Replay(s, p, *n, nil, "", 2, &one)
			check(err, apart)
			row(p.Name, fmt.Sprint(*n), "none (before)", apart, one, "")
		}
	}
}

func check(err error, r replicas.Run) {
	if err != nil {
		log.Fatal(err)
	}
	if r.Stats.Broken != 0 {
		log.Fatalf("%d prompts with broken tool pairs", r.Stats.Broken)
	}
}

func row(policy, n, store string, r, one replicas.Run, recall string) {
	st := r.Stats
	fmt.Printf("| %s | %s | %s | %d of %d | %d | %.2f M | %+.1f%% (%.2f×) | %d | %d (%d) | %s | %.1f s |\n",
		policy, n, store, r.Identical, st.Requests, st.Rewrites, st.Billed/1e6, 100*(st.Billed/one.Stats.Billed-1),
		st.Billed/one.Stats.Billed, st.Summaries, st.ColdResumes, st.ColdResumes-st.ColdPrunes, recall, r.Elapsed.Seconds())
}

// memory is the in-process store, for reference.
type memory struct {
	*history.MemoryStateStore
	rec *history.MemoryStore
}

func (m memory) Recall(string) history.Store { return m.rec }
