package adaptertest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/histrim/history"
)

func TestModeCount(t *testing.T) {
	h := history.Heuristic()
	user := history.Message{Role: history.RoleUser, Content: "Task 1: fix the failing test in the parser package"}
	call := history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.go"}`}}}
	result := history.Message{Role: history.RoleTool, ToolCallID: "c1", Content: strings.Repeat("func f() { return 42 }\n", 40)}
	msgs := []history.Message{user, call, result}
	schema := `[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}]`
	text := float64(h.CountMessage(user) + h.CountMessage(call))
	tool := float64(h.CountMessage(result))
	sch := float64(history.EstimateText(schema))
	modes := map[string]Mode{}
	for _, m := range Modes() {
		modes[m.Name] = m
	}
	for _, tc := range []struct {
		mode   Mode
		turn   int
		want   float64
		reason string
	}{
		{modes["skew-1.35"], 1, 1.35 * (text + tool + sch), "skew scales everything, the tools too"},
		{modes["skew-0.75"], 40, 0.75 * (text + tool + sch), "skew does not depend on the turn"},
		{modes["drift-1.0-1.4"], 24, text + tool + sch, "drift counts 1.0x up to turn 24"},
		{modes["drift-1.0-1.4"], 25, 1.4 * (text + tool + sch), "drift counts 1.4x from turn 25"},
		{modes["mixed-tool1.6-text0.9"], 1, 0.9*(text+sch) + 1.6*tool, "mixed counts tool results 1.6x, the rest 0.9x"},
		{Skew(1.3), 1, 1.3*(text+tool) + sch, "Skew leaves the tools as they are"},
	} {
		got := tc.mode.Count(tc.turn, msgs, schema)
		if want := int(math.Ceil(tc.want)); got != want {
			t.Errorf("%s in turn %d: Count = %d, want %d (%s)", tc.mode.Name, tc.turn, got, want, tc.reason)
		}
	}
	if got := Skew(1).Count(1, msgs, ""); got != history.Estimate(msgs, nil) {
		t.Errorf("Skew(1) without tools counts %d, history.Estimate %d", got, history.Estimate(msgs, nil))
	}
}

// checkRecorder is a testing.TB that records what Check reports.
type checkRecorder struct {
	testing.TB
	errs []string
}

func (r *checkRecorder) Helper() {}
func (r *checkRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestLoopBookkeeping(t *testing.T) {
	l := NewLoop("fake", Modes()[0], 1000)
	msg := []history.Message{{Role: history.RoleUser, Content: "Task 1"}}
	holds := func(text string) bool { return text == "Task 1" }
	l.Turn(1, "Task 1")
	if p, ok := l.Receive(msg, "", holds); !ok || p != Modes()[0].Count(1, msg, "") {
		t.Fatalf("Receive = %d, %v", p, ok)
	}
	l.Accepted(true, 900)
	big := []history.Message{{Role: history.RoleUser, Content: strings.Repeat("word ", 2000)}}
	if _, ok := l.Receive(big, "", func(string) bool { return false }); ok {
		t.Fatal("a request over the window fits")
	}
	l.Unpaired("orphan")
	l.Error(errors.New("boom"))
	s := l.Stats()
	want := LoopStats{Adapter: "fake", Mode: Modes()[0], Window: 1000, Requests: 3, Accepted: 1, Trimmed: 1, TrimmedPrompt: 900,
		Overflows: 1, Errors: 1, Violations: 1, Missing: 1}
	if s != want {
		t.Fatalf("Stats = %+v, want %+v", s, want)
	}
	if s.Fill() != 0.9 {
		t.Errorf("Fill = %v, want 0.9", s.Fill())
	}
	if got := s.Row(); got != "| fake | skew-1.35 | 1000 | 3 | 1 | 1 | 1 | 1 | 1 | 90.0% |" {
		t.Errorf("Row = %s", got)
	}
	r := &checkRecorder{TB: t}
	l.Check(r)
	if len(r.errs) != 1 {
		t.Fatalf("Check reported %d times, want once: %q", len(r.errs), r.errs)
	}
	for _, want := range []string{"1 errors reached the caller", "1 requests broke the tool pairing", "1 requests lacked the latest task",
		"only 1 trimmed requests", "overflow, the provider counted", "pairing: orphan", "error to the caller: boom"} {
		if !strings.Contains(r.errs[0], want) {
			t.Errorf("Check's report lacks %q:\n%s", want, r.errs[0])
		}
	}
	if l.Words(0) != ResultWords[0] || l.Words(uint64(ResultWords[1]-ResultWords[0])) != ResultWords[1] {
		t.Errorf("Words spans %d to %d, want %v", l.Words(0), l.Words(uint64(ResultWords[1]-ResultWords[0])), ResultWords)
	}
}

func TestMatrixTable(t *testing.T) {
	var m Matrix
	modes := Modes()
	m.Add(LoopStats{Adapter: "a", Mode: modes[2], Window: 8000})
	m.Add(LoopStats{Adapter: "a", Mode: Skew(1.3), Window: 12000})
	m.Add(LoopStats{Adapter: "a", Mode: modes[0], Window: 32000})
	m.Add(LoopStats{Adapter: "a", Mode: modes[0], Window: 8000})
	lines := strings.Split(m.Table(), "\n")
	var got []string
	for _, line := range lines[2:] {
		f := strings.Split(line, " | ")
		got = append(got, f[1]+"/"+f[2])
	}
	want := "skew-1.35/8000 skew-1.35/32000 drift-1.0-1.4/8000 F=1.3/12000"
	if strings.Join(got, " ") != want || lines[0]+"\n"+lines[1] != TableHeader {
		t.Fatalf("Table:\n%s\nrows %v, want %s", m.Table(), got, want)
	}
}
