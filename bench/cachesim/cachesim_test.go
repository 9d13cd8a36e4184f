package cachesim

import (
	"strconv"
	"strings"
	"testing"

	history "github.com/histrim/history"
)

// session returns turns turns of a user request, one tool exchange and an
// answer, each message about size bytes.
func session(turns, size int) []history.Message {
	text := strings.Repeat("x", size)
	msgs := []history.Message{{Role: history.RoleSystem, Content: text}}
	for i := range turns {
		id := "c" + strconv.Itoa(i)
		msgs = append(msgs,
			history.Message{Role: history.RoleUser, Content: text + id},
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "sh"}}},
			history.Message{Role: history.RoleTool, ToolCallID: id, Content: text},
			history.Message{Role: history.RoleAssistant, Content: text},
		)
	}
	return msgs
}

func TestBillingNoTrim(t *testing.T) {
	// Two turns, a huge budget: requests before each assistant message,
	// each prompt extends the previous one, so after the first request
	// only the new messages are written.
	s := session(2, 7000) // 2000 tokens a message: every prompt is cacheable
	st, err := Replay(s, Config{Pattern: Stateless, Budget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 4 || st.Rewrites != 0 || st.Trims != 0 {
		t.Fatalf("requests %d rewrites %d trims %d, want 4 0 0", st.Requests, st.Rewrites, st.Trims)
	}
	// Prompts: [s0 s1], [s0..s3], [s0..s5], [s0..s7].
	c := func(i int) int { return Counter.CountMessage(s[i]) }
	sum := func(a, b int) int {
		n := 0
		for i := a; i < b; i++ {
			n += c(i)
		}
		return n
	}
	wantWrite := sum(0, 2) + sum(2, 4) + sum(4, 6) + sum(6, 8)
	wantRead := sum(0, 2) + sum(0, 4) + sum(0, 6)
	if st.Write != wantWrite || st.Read != wantRead || st.Uncached != 0 {
		t.Fatalf("read %d write %d uncached %d, want %d %d 0", st.Read, st.Write, st.Uncached, wantRead, wantWrite)
	}
	want := 0.1*float64(wantRead) + 1.25*float64(wantWrite)
	if st.Billed != want {
		t.Fatalf("billed %v, want %v", st.Billed, want)
	}
}

func TestBillingShortPromptsUncached(t *testing.T) {
	s := session(2, 10) // tiny prompts, under MinCacheable
	st, err := Replay(s, Config{Pattern: Persisted, Budget: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 0 || st.Write != 0 || st.Uncached != st.Sent || st.Billed != float64(st.Sent) {
		t.Fatalf("short prompts must bill uncached: %+v", st)
	}
}

func TestLowWaterPaysOff(t *testing.T) {
	s := session(120, 600)
	budget := 12000
	for _, p := range []Pattern{Persisted, WithTrimmer} {
		exact, err := Replay(s, Config{Pattern: p, Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		lw, err := Replay(s, Config{Pattern: p, Budget: budget, LowWater: 0.7})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range []Stats{exact, lw} {
			if st.Broken != 0 || st.OverBudget != 0 {
				t.Fatalf("%v: broken %d over budget %d", p, st.Broken, st.OverBudget)
			}
		}
		if exact.Rewrites == 0 || lw.Rewrites*3 > exact.Rewrites {
			t.Errorf("%v: rewrites exact %d, low-water %d: want at least 3x fewer", p, exact.Rewrites, lw.Rewrites)
		}
		if lw.Billed > 0.6*exact.Billed {
			t.Errorf("%v: billed exact %.0f, low-water %.0f: want at least 40%% less", p, exact.Billed, lw.Billed)
		}
		if k := lw.MeanKept(budget); k < 0.7 || k > 1 {
			t.Errorf("%v: low-water kept %.2f of the budget, want between 0.7 and 1", p, k)
		}
	}
}

func TestStatelessTranscriptMissesCache(t *testing.T) {
	s := session(120, 600)
	cfg := Config{Pattern: Stateless, Budget: 12000, LowWater: 0.7}
	stateless, err := Replay(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Pattern = WithTrimmer
	trimmer, err := Replay(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A stateless trim of the full transcript recomputes the cut on every
	// request: once at the limit, every new turn moves it.
	if stateless.Rewrites < trimmer.Rewrites*3 {
		t.Errorf("rewrites: stateless %d, Trimmer %d: want the Trimmer at least 3x fewer", stateless.Rewrites, trimmer.Rewrites)
	}
	if trimmer.Billed >= stateless.Billed {
		t.Errorf("billed: Trimmer %.0f, stateless %.0f", trimmer.Billed, stateless.Billed)
	}
}

func TestCounterRate(t *testing.T) {
	m := history.Message{Role: history.RoleTool, ToolCallID: "id", Content: strings.Repeat("abcdefg", 100)}
	// 702 bytes / 3.5 = 200.57 -> 201, plus 4 of framing.
	if got := Counter.CountMessage(m); got != 205 {
		t.Fatalf("Counter = %d, want 205", got)
	}
}
