package history

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history/internal/race"
)

var stateMutations = flag.Int("state.mutations", 0, "mutations TestTrimmerStateMutations applies (0: 4000, 400 under -race)")

// summaryTexts holds every summary regSummarizer wrote.
var summaryTexts sync.Map

// regSummarizer writes a summary that names a hash of what it was given,
// and records it, so that a test can tell a summary it wrote from any
// other text.
type regSummarizer struct{}

func (regSummarizer) Summarize(_ context.Context, dropped []Message, previous *Message) (Message, error) {
	var h sum64
	for i := range dropped {
		h.num(int64(messageSum(&dropped[i])))
	}
	if previous != nil {
		h.str(previous.Content)
	}
	text := "summary " + strconv.FormatUint(h.sum(), 16)
	summaryTexts.Store(text, true)
	return Message{Role: RoleUser, Content: text}, nil
}

// writtenSummary reports whether text is a summary as a Trimmer places
// it: the header, then a text regSummarizer wrote.
func writtenSummary(text string) bool {
	header, body, ok := strings.Cut(text, "\n")
	if !ok || !strings.HasPrefix(header, "[Summary of ") {
		return false
	}
	_, ok = summaryTexts.Load(body)
	return ok
}

// corpusSessions returns up to n tool-using sessions of the shared
// corpus, cleaned and cut to at most max messages, or skips the test.
func corpusSessions(t *testing.T, n, maxLen int) [][]Message {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sharedCorpus, "*.jsonl"))
	if len(files) == 0 {
		t.Skipf("shared corpus absent: no %s/*.jsonl (clone shared/ beside the repository root to run this test)", sharedCorpus)
	}
	slices.Sort(files)
	var out [][]Message
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []Message
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() && len(msgs) < 2*maxLen {
			var m Message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			msgs = append(msgs, m)
		}
		fh.Close()
		msgs = cleanCorpus(msgs)
		msgs = msgs[:min(len(msgs), maxLen)]
		users, tools := 0, 0
		for _, m := range msgs {
			if UserWritten(m) {
				users++
			}
			if m.Role == RoleTool {
				tools++
			}
		}
		if len(msgs) < 60 || users < 2 || tools < 10 {
			continue
		}
		out = append(out, msgs)
		if len(out) == n {
			break
		}
	}
	if len(out) == 0 {
		t.Skip("no session of the shared corpus fits the test")
	}
	return out
}

// stateSample is a saved state and the request it is restored for.
type stateSample struct {
	policy string
	opts   []Option
	msgs   []Message
	budget int
	data   []byte
	orig   *Trimmer // restored from data
}

// stateSamples replays sessions through Trimmers under several policies
// (elision, step trim, WithTask, pins, a summariser, own notices, no
// notices and no sweep), checks that every plan a Trimmer made passes the
// checks a restored one must pass, and keeps, every few requests, the
// state saved before a request with that request.
func stateSamples(t *testing.T, sessions [][]Message) []stateSample {
	t.Helper()
	var out []stateSample
	for si, msgs := range sessions {
		var users []int
		for i, m := range msgs {
			if UserWritten(m) && len(m.ToolCalls) == 0 {
				users = append(users, i)
			}
		}
		goal, pin := users[0], users[1]
		policies := []struct {
			name string
			opts []Option
		}{
			{"elision, steps, arguments", []Option{WithLowWater(0.7), WithElision(ElideOptions{KeepRecent: 1, MinTokens: 64, ClearArguments: 32}), WithStepTrim()}},
			{"task, pin", []Option{WithTask(goal, ElideOptions{}), WithPin(pin), WithLowWater(0.6)}},
			{"summary, pin", []Option{WithLowWater(0.6), WithPin(goal), WithSummarizer(regSummarizer{}, SummaryOptions{MaxTokens: 400})}},
			{"trigger, digests, cut, own notices", []Option{WithTrigger(0.6), WithElision(ElideOptions{Digest: 50, Cut: true}), WithStepTrim(),
				WithBreadcrumb(Message{Role: RoleSystem, Content: "[older turns left out]"}),
				WithStepBreadcrumb(Message{Role: RoleUser, Content: "[older steps left out]"})}},
			{"no notices, no sweep", []Option{WithoutBreadcrumb(), WithoutOrphanSweep(), WithLowWater(0.7), WithElision(ElideOptions{KeepRecent: 2}), WithStepTrim()}},
		}
		budget := max(Estimate(msgs, nil)/4, 2000)
		for _, p := range policies {
			tr := NewTrimmer(p.opts...)
			seen := 0
			for i := max(goal, pin) + 1; i < len(msgs); i++ {
				if msgs[i].Role != RoleAssistant {
					continue
				}
				if tr.st.n > 0 && seen%3 == si%3 {
					data, _ := tr.MarshalBinary()
					orig := NewTrimmer(p.opts...)
					if err := orig.UnmarshalBinary(data); err != nil {
						t.Fatalf("%s: a saved state is refused: %v", p.name, err)
					}
					out = append(out, stateSample{p.name, p.opts, msgs[:i], budget, data, orig})
				}
				seen++
				// A plan the Trimmer made itself always passes its checks.
				if st := tr.st; st.n > 0 && st.applies(msgs[:i]) {
					o := newOptions(p.opts)
					reason := st.fault(msgs[:i], &tr.sum, o)
					o.release()
					if reason == "" {
						reason = st.textFault(msgs[:i])
					}
					if reason != "" {
						t.Fatalf("%s at %d: the Trimmer's own plan is refused: %s", p.name, i, reason)
					}
				}
				if _, err := tr.Trim(msgs[:i], budget); err != nil && !isTooLarge(err) {
					t.Fatalf("%s at %d: %v", p.name, i, err)
				}
			}
		}
	}
	return out
}

// mutateState applies one to three random edits to data: bit flips, byte
// changes, truncations, deletions, insertions, duplicated runs and
// splices from other states. resealed edits the payload and seals it
// again with a valid checksum, as a forger (or a bug before the seal)
// would.
func mutateState(r *rand.Rand, data []byte, others []stateSample, resealed bool) []byte {
	b := slices.Clone(data)
	if resealed {
		b = b[:len(b)-stateSumSize]
	}
	for range 1 + r.IntN(3) {
		if len(b) == 0 {
			break
		}
		i := r.IntN(len(b))
		switch r.IntN(8) {
		case 0, 1:
			b[i] ^= 1 << r.IntN(8)
		case 2:
			b[i] = byte(r.IntN(256))
		case 3:
			b = b[:i]
		case 4:
			b = slices.Delete(b, i, min(len(b), i+1+r.IntN(8)))
		case 5:
			extra := make([]byte, 1+r.IntN(8))
			for j := range extra {
				extra[j] = byte(r.IntN(256))
			}
			b = slices.Insert(b, i, extra...)
		case 6:
			j := min(len(b), i+1+r.IntN(16))
			b = slices.Insert(b, j, slices.Clone(b[i:j])...)
		case 7:
			o := others[r.IntN(len(others))].data
			j := r.IntN(len(o))
			k := min(len(o), j+1+r.IntN(64))
			b = slices.Replace(b, i, min(len(b), i+k-j), o[j:k]...)
		}
	}
	if resealed {
		b = sealState(b)
	}
	return b
}

// TestTrimmerStateMutations applies random edits to real saved states (the
// shared corpus replayed under several policies) and restores each into a
// Trimmer with the options it was saved under: a state that is accepted
// must give a request that keeps every invariant (stateInvariants), and
// every refusal is a *StateError. Half the edits are resealed with a valid
// checksum, so that the checks behind it are exercised too; in those, the
// text the state itself carries (a placeholder, the summary) may be
// changed, which is counted apart. Run with -state.mutations=100000 -v for
// the figures of docs/replicas.md.
func TestTrimmerStateMutations(t *testing.T) {
	sessions := corpusSessions(t, 4, 260)
	samples := stateSamples(t, sessions)
	n := *stateMutations
	if n == 0 {
		n = 4000
		if race.Enabled || testing.Short() {
			n = 400
		}
	}
	r := rand.New(rand.NewPCG(32, 3))
	var refused, accepted, refusedAtTrim, carried, sameBytes [2]int
	for i := range n {
		s := &samples[r.IntN(len(samples))]
		mode := i % 2
		mut := mutateState(r, s.data, samples, mode == 1)
		var ev *Event
		tr := NewTrimmer(append(slices.Clip(s.opts), WithOnTrim(func(e Event) { ev = &e }))...)
		if err := tr.UnmarshalBinary(mut); err != nil {
			var se *StateError
			if !errors.As(err, &se) {
				t.Fatalf("mutation %d: untyped error %v", i, err)
			}
			refused[mode]++
			continue
		}
		accepted[mode]++
		if string(mut) == string(s.data) {
			sameBytes[mode]++
		}
		res, err := tr.Trim(s.msgs, s.budget)
		if tr.takeRefusal() != nil {
			refusedAtTrim[mode]++
		}
		fresh := ev != nil // a new plan: its placeholders and summary are written now
		inv := invariantsFor(s.opts, func(text string) bool {
			if fresh && ev.Summary == SummaryWritten {
				return writtenSummary(text)
			}
			return s.orig.sum.msg != nil && text == s.orig.sum.msg.Content
		})
		inv.elided = func(k int, text string) bool { return fresh || s.orig.st.elided[k] == text }
		if verr := inv.check(s.msgs, res, err, s.budget); verr != nil {
			var tv *textViolation
			if mode == 1 && errors.As(verr, &tv) {
				carried[mode]++
				continue
			}
			t.Fatalf("mutation %d (%s, resealed %v) of a state for %d messages breaks an invariant: %v", i, s.policy, mode == 1, len(s.msgs), verr)
		}
		checkResult(t, s.msgs, res, true)
	}
	for mode, name := range []string{"as is", "resealed"} {
		t.Logf("%s: %d mutations of %d states: %d refused by UnmarshalBinary, %d accepted (%d unchanged bytes), of which %d refused at the first trim; 0 violations; text carried by the state changed: %d",
			name, refused[mode]+accepted[mode], len(samples), refused[mode], accepted[mode], sameBytes[mode], refusedAtTrim[mode], carried[mode])
	}
}
