package adaptertest

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
)

func TestJSON(t *testing.T) {
	if got := JSON(t, map[string]int{"b": 2, "a": 1}); got != `{"a":1,"b":2}` {
		t.Errorf("JSON = %s", got)
	}
}

func TestPNG(t *testing.T) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(PNG(t, 30, 20)))
	if err != nil || format != "png" || cfg.Width != 30 || cfg.Height != 20 {
		t.Errorf("PNG decodes as %s %dx%d (%v), want png 30x20", format, cfg.Width, cfg.Height, err)
	}
}

func TestJSONDiff(t *testing.T) {
	type obj map[string]any
	tests := []struct {
		name   string
		a, b   any
		want   []string
		reason string
	}{
		{"equal", obj{"a": 1, "n": obj{"x": 1, "y": 2}}, obj{"n": obj{"y": 2, "x": 1}, "a": 1}, nil, "key order does not matter"},
		{"changed", obj{"a": 1, "c": "x"}, obj{"a": 1, "c": "y"}, []string{"c"}, "one value differs"},
		{"one side", obj{"a": 1, "z": 0}, obj{"a": 1, "b": 2}, []string{"b", "z"}, "keys on one side only, sorted"},
	}
	for _, tc := range tests {
		if got := JSONDiff(t, tc.a, tc.b); !slices.Equal(got, tc.want) {
			t.Errorf("%s: JSONDiff = %v, want %v (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		kept   []int
		n      int
		want   bool
		reason string
	}{
		{nil, 3, true, "nil: nothing changed"},
		{[]int{0, 1, 2}, 3, true, "every message in order"},
		{[]int{}, 0, true, "empty input, empty Kept"},
		{[]int{0, 1}, 3, false, "a message dropped"},
		{[]int{0, -1, 1, 2}, 3, false, "a notice inserted"},
		{[]int{1, 0, 2}, 3, false, "reordered"},
	}
	for _, tc := range tests {
		if got := Identity(tc.kept, tc.n); got != tc.want {
			t.Errorf("Identity(%v, %d) = %v, want %v (%s)", tc.kept, tc.n, got, tc.want, tc.reason)
		}
	}
}

func TestRequired(t *testing.T) {
	const path = "github.com/histrim/history"
	tests := []struct {
		name, mod, want string
		ok              bool
		reason          string
	}{
		{"block", "module x\n\nrequire (\n\tgithub.com/a/b v1.0.0\n\tgithub.com/histrim/history v0.3.0 // indirect\n)\n", "v0.3.0", true, "a require block"},
		{"line", "module x\nrequire github.com/histrim/history v0.2.0\n", "v0.2.0", true, "a single require line"},
		{"prefix only", "module x\nrequire github.com/histrim/history/adapters/openai v0.2.0\n", "", false, "another module whose path starts alike"},
		{"replace only", "module x\nreplace github.com/histrim/history => ../..\n", "", false, "a replace is no requirement"},
		{"after block", "require (\n\tgithub.com/a/b v1.0.0\n)\n\ngithub.com/histrim/history v9\n", "", false, "a line outside any require"},
	}
	for _, tc := range tests {
		got, ok := Required([]byte(tc.mod), path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: Required = %q, %v; want %q, %v (%s)", tc.name, got, ok, tc.want, tc.ok, tc.reason)
		}
	}
}

func TestBytes(t *testing.T) {
	b := Bytes{7, 0}
	if got := []int{b.Next(), len(b), b.Byte(), b.Next(), b.Byte(), len(b)}; !slices.Equal(got, []int{7, 1, 0, -1, 0, 0}) {
		t.Errorf("Next, len, Byte, Next, Byte, len = %v, want 7 1 0 -1 0 0", got)
	}
}

// posError is an error with a position, for TestViolation.
type posError struct {
	at int
	id string
}

func (e *posError) Error() string { return "at " + strconv.Itoa(e.at) }
func (e *posError) Unwrap() error { return errUnpaired }

var errUnpaired = errors.New("unpaired")

func TestViolation(t *testing.T) {
	where := func(e *posError) (int, string) { return e.at, e.id }
	tests := []struct {
		name   string
		err    error
		at     int
		id     string
		want   bool
		reason string
	}{
		{"valid", nil, -1, "", true, "no violation wanted, none found"},
		{"unexpected", &posError{1, "a"}, -1, "", false, "no violation wanted"},
		{"found", fmt.Errorf("wrapped: %w", &posError{2, "a"}), 2, "a", true, "found through wrapping"},
		{"missing", nil, 2, "a", false, "a violation wanted, none found"},
		{"other error", errors.New("x"), 2, "a", false, "not the adapter's error"},
		{"elsewhere", &posError{3, "a"}, 2, "a", false, "another message"},
		{"other id", &posError{2, "b"}, 2, "a", false, "another call"},
	}
	for _, tc := range tests {
		rec := &recorder{TB: t}
		if got := Violation(rec, tc.err, errUnpaired, where, tc.at, tc.id, tc.reason); got != tc.want || rec.failed == tc.want {
			t.Errorf("%s: Violation = %v (reported failure %v), want %v (%s)", tc.name, got, rec.failed, tc.want, tc.reason)
		}
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}

func TestSubsequence(t *testing.T) {
	eq := func(a, b int) bool { return a == b }
	full := []int{1, 2, 3, 4}
	tests := []struct {
		sub    []int
		want   bool
		reason string
	}{
		{[]int{1, 3}, true, "in order, with gaps"},
		{[]int{1, 2, 3, 4}, true, "all of it"},
		{[]int{3, 1}, false, "out of order"},
		{[]int{5}, false, "not there"},
		{nil, false, "an empty sub is no subsequence: a message holds at least one part"},
	}
	for _, tc := range tests {
		if got := Subsequence(tc.sub, full, eq); got != tc.want {
			t.Errorf("Subsequence(%v) = %v, want %v (%s)", tc.sub, got, tc.want, tc.reason)
		}
	}
}

func TestEqualities(t *testing.T) {
	x, y := 1, 1
	if !Same(&x, &x) || Same(&x, &y) {
		t.Error("Same must compare pointers by identity")
	}
	if !DeepEqual([]int{1}, []int{1}) || DeepEqual([]int{1}, []int{2}) {
		t.Error("DeepEqual must compare contents")
	}
	type v struct{ A int }
	if !SameJSON(v{1}, v{1}) || SameJSON(v{1}, v{2}) {
		t.Error("SameJSON must compare encodings")
	}
	if SameJSON[any](make(chan int), make(chan int)) {
		t.Error("values that do not encode are never the same")
	}
}

func TestSameArray(t *testing.T) {
	a := []int{1, 2, 3}
	if !SameArray(a, a) || !SameArray[int](nil, []int{}) {
		t.Error("a slice and itself, and two empty slices, are the same")
	}
	if SameArray(a, slices.Clone(a)) || SameArray(a, a[:2]) || SameArray(a[1:], a[:2]) {
		t.Error("a copy, a shorter window or another window are not the same")
	}
}

func TestTexts(t *testing.T) {
	tests := []struct {
		got, want, reason string
	}{
		{TaskText(8), "task 8: do the thing do the thing ", "1 + 8%7 repetitions"},
		{NoteText(42), "progress note xx", "42%40 x's"},
		{OutputText(1, 0), "func f() { return 42 } // 1\n" + "func f() { return 42 } // 1\n" + "func f() { return 42 } // 1\n" + "func f() { return 42 } // 1\n", "1 + (1*3)%60 lines"},
		{FoundText(31), "found line\n", "31%30 lines"},
		{Words(7), "message 7 with some more words to count with some more words to count", "7%5 phrases"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q (%s)", tc.got, tc.want, tc.reason)
		}
	}
}

func TestCorpus(t *testing.T) {
	convs := Corpus(t, "../..")
	sessions := 61 // the whole corpus
	if race.Enabled {
		sessions = 48 // the sessions under 64 KiB (race.CorpusFile)
	}
	if len(convs) != sessions {
		t.Fatalf("%d conversations, want %d", len(convs), sessions)
	}
	// Each conversation's Index is its file's place in the whole corpus
	// sorted by name, under the race detector too (where some are not
	// read): what a test derives from the index stays the same.
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "corpus", "real", "*.jsonl"))
	slices.Sort(files)
	last := -1
	for k, c := range convs {
		if c.Index <= last || c.Index >= len(files) || filepath.Base(files[c.Index]) != c.Name+".jsonl" {
			t.Errorf("%s: Index %d, not its file's place in the corpus (after %d)", c.Name, c.Index, last)
		}
		if !race.Enabled && c.Index != k {
			t.Errorf("%s: Index %d in the whole corpus, read %dth", c.Name, c.Index, k)
		}
		last = c.Index
	}
	if race.Enabled && last < sessions { // some long session before a short one
		t.Errorf("the last short session has Index %d: the indices are not the whole corpus's", last)
	}
	for _, c := range convs {
		if len(history.Turns(c.Messages)) == 0 {
			t.Errorf("%s: no turns", c.Name)
		}
		if swept, _ := history.SweepOrphans(c.Messages); len(swept) != len(c.Messages) {
			t.Errorf("%s: %d orphans left", c.Name, len(c.Messages)-len(swept))
		}
	}
	want, small := []int{10, 20, 50, 100, 200, 350, 500, 750, 1000}, []int{1, 1, 1, 1, 1, 1, 1, 2, 3}
	if race.Enabled {
		want, small = []int{20, 100, 350, 750}, []int{1, 1, 1, 2}
	}
	if got := CorpusBudgets(1000); !slices.Equal(got, want) {
		t.Errorf("CorpusBudgets(1000) = %v, want %v", got, want)
	}
	if got := CorpusBudgets(3); !slices.Equal(got, small) {
		t.Errorf("CorpusBudgets(3) = %v, want %v (at least 1 token)", got, small)
	}
}

func TestLadderSets(t *testing.T) {
	var names []string
	for _, s := range LadderSets(true) {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"plain", "elision", "steps", "both", "clear"}) || len(LadderSets(false)) != 4 {
		t.Fatalf("LadderSets: %v, %d without clearing", names, len(LadderSets(false)))
	}
	if LadderSets(true)[0].Opts != nil {
		t.Fatal("the plain set must trim with no option")
	}
}

// TestLoopShort: under the race detector a loop of LoopTurns runs
// RaceLoopTurns, its drift moved in proportion; a shorter loop, or one
// without the detector, is left as it is.
func TestLoopShort(t *testing.T) {
	for _, tc := range []struct {
		on                 bool
		turns, drift       int
		wantTurns, wantDft int
	}{
		{true, LoopTurns, 25, RaceLoopTurns, 10},
		{true, LoopTurns, 0, RaceLoopTurns, 0},
		{true, 40, 1, RaceLoopTurns, 1}, // a drift never moves before turn 1
		{true, 12, 6, 12, 6},
		{false, LoopTurns, 25, LoopTurns, 25},
	} {
		l := NewLoop("a", Mode{Name: "m", Text: 1, Tool: 1, Schema: 1, DriftTurn: tc.drift, Drift: 1.4}, 8000)
		l.Turns = tc.turns
		if got := l.short(tc.on); got != l {
			t.Fatalf("short returned another loop")
		}
		if l.Turns != tc.wantTurns || l.Mode.DriftTurn != tc.wantDft || l.Stats().Mode.DriftTurn != tc.wantDft {
			t.Errorf("on=%v, %d turns, drift at %d: got %d turns, drift at %d (stats %d); want %d, %d",
				tc.on, tc.turns, tc.drift, l.Turns, l.Mode.DriftTurn, l.Stats().Mode.DriftTurn, tc.wantTurns, tc.wantDft)
		}
	}
}
