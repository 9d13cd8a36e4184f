// Package replicas measures a conversation served by several replicas of
// a runtime (issue 28) over the corpus's long sessions, with the price
// model of package cachesim: one replica, three sharing a StateStore
// (Redis, Postgres, or in memory), and three sharing nothing. It compares
// every request's prompt with one replica's, counts prefix rewrites,
// billed input, summaries and cold resumes, and recalls every result the
// replicas elided through a replica that sent none of them.
package replicas

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"regexp"
	"strconv"
	"time"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/cachesim"
	"github.com/histrim/history/internal/summarize"
)

// Backend is a StateStore with its recall Store: one replica's client.
type Backend interface {
	history.StateStore
	Recall(scope string) history.Store
}

// Policy is a caching policy of docs/prompt-caching.md, with its time
// model.
type Policy struct {
	Name string
	Cfg  cachesim.Config
}

// Policies returns the policies measured: low-water 0.7, the compact
// trigger policy, low-water 0.7 with a summariser, and the trigger policy
// with requests a minute apart, a two-hour pause before every fifth user
// turn, a five-minute cache and WithColdAfter at five minutes.
func Policies(budget int) []Policy {
	trigger := cachesim.Config{Pattern: cachesim.WithTrimmer, Budget: budget, Trigger: 0.6, LowWater: 0.36, Ladder: true,
		Elide: history.ElideOptions{KeepRecent: 1, MinTokens: 64}}
	cold := trigger
	cold.Spacing, cold.IdleEvery, cold.Idle, cold.Retention, cold.ColdAfter = time.Minute, 5, 2*time.Hour, 5*time.Minute, 5*time.Minute
	return []Policy{
		{"low-water 0.7", cachesim.Config{Pattern: cachesim.WithTrimmer, Budget: budget, LowWater: 0.7}},
		{"trigger 0.6, 0.36 + elision, step trim", trigger},
		{"low-water 0.7 + summariser", cachesim.Config{Pattern: cachesim.WithTrimmer, Budget: budget, LowWater: 0.7, Summarize: true}},
		{"trigger policy, 1 min apart, 2 h pauses, cold after 5 min", cold},
	}
}

// Run is one replay's figures.
type Run struct {
	Stats cachesim.Stats
	// Identical counts the requests whose prompt is the reference's, byte
	// for byte (64-bit hashes of every field of every message).
	Identical int
	// Handles are the results elided in the prompts, handle → original.
	Handles map[string]string
	// Key is the conversation key the results were elided under, when the
	// replay shared a store (Conversations scope the recall Store by it).
	Key string
	// Elapsed is the replay's wall time.
	Elapsed time.Duration
	hashes  []uint64
}

// Replay runs session under p on replicas replicas, sharing store (nil:
// nothing), with seed choosing the replica of each request; ref is the
// one-replica run to compare prompts with (nil: this is it). Elided
// results go to store's recall Store, or to a MemoryStore without one, so
// that placeholders read the same.
func Replay(session []history.Message, p Policy, replicas int, store Backend, key string, seed uint64, ref *Run) (Run, error) {
	cfg := p.Cfg
	cfg.Replicas, cfg.Seed, cfg.Key = replicas, seed, key
	if cfg.Ladder {
		cfg.Elide.Store = history.NewMemoryStore()
	}
	if store != nil {
		cfg.State = store
		if cfg.Ladder {
			cfg.Elide.Store = store.Recall("")
		}
	}
	originals := map[string]string{}
	for _, m := range session {
		if m.Role == history.RoleTool {
			originals[history.ElisionHandle(m)] = summarize.Text(&m)
		}
	}
	r := Run{Handles: map[string]string{}}
	if store != nil {
		r.Key = cmp.Or(key, "session") // cachesim's default key
	}
	cfg.OnPrompt = func(i int, prompt []history.Message) {
		h := Hash(prompt)
		r.hashes = append(r.hashes, h)
		if ref != nil && i < len(ref.hashes) && ref.hashes[i] == h {
			r.Identical++
		}
		for j := range prompt {
			if prompt[j].Kind == history.KindElided {
				if id := handleRE.FindString(prompt[j].Content); id != "" {
					r.Handles[id] = originals[id]
				}
			}
		}
	}
	start := time.Now()
	st, err := cachesim.Replay(session, cfg)
	r.Elapsed = time.Since(start)
	r.Stats = st
	if ref == nil {
		r.Identical = len(r.hashes)
	}
	return r, err
}

var handleRE = regexp.MustCompile(`r[0-9a-f]{24}`)

// RecallAll recalls every handle of r through s's recall tool and returns
// how many came back as the original.
func RecallAll(ctx context.Context, s Backend, r Run) (int, error) {
	ok := 0
	recall := history.ScopeStore(s.Recall(""), r.Key) // what Conversations gave the trims
	for h, want := range r.Handles {
		got, err := history.RecallContext(ctx, recall, `{"id":"`+h+`"}`)
		if err != nil {
			return ok, fmt.Errorf("recalling %s: %w", h, err)
		}
		if got == want {
			ok++
		}
	}
	return ok, nil
}

var seed = maphash.MakeSeed()

// Hash returns a 64-bit hash of every field of every message of prompt.
func Hash(prompt []history.Message) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	str := func(s string) {
		h.WriteString(strconv.Itoa(len(s)))
		h.WriteByte(0)
		h.WriteString(s)
	}
	for i := range prompt {
		m := &prompt[i]
		for _, s := range [...]string{string(m.Role), m.Content, m.ToolCallID, m.Name, string(m.Kind)} {
			str(s)
		}
		for _, p := range m.Parts {
			for _, s := range [...]string{string(p.Type), p.Text, p.Detail, p.MIMEType,
				strconv.Itoa(p.Tokens), strconv.Itoa(p.Width), strconv.Itoa(p.Height), strconv.FormatInt(p.Size, 10)} {
				str(s)
			}
		}
		for _, c := range m.ToolCalls {
			str(c.ID)
			str(c.Name)
			str(c.Arguments)
		}
		h.WriteByte(1)
	}
	return h.Sum64()
}
