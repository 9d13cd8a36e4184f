package adaptertest

// The agent-loop matrix of issue 21: each adapter runs its own loop (the
// real SDK client against a local server that speaks the provider's wire
// format), and this file holds what is common to all of them: how the
// provider counts (Mode, Counting), what a loop measured (Loop,
// LoopStats), the bounds every loop must meet (Loop.Check), and the matrix
// of modes and windows with its markdown table (RunMatrix).

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/race"
)

// LoopTurns is how many user turns a loop runs; each takes 1 to 6 tool
// steps.
const LoopTurns = 50

// RaceLoopTurns is how many user turns an adapter's agent loop runs under
// the race detector (Loop.RaceShort), as the framework modules' loops do
// (Framework.RaceTurns): the detector checks the calls, which every turn
// makes alike, some ten times slower than the plain run, which checks the
// numbers over LoopTurns. Twenty turns still trim more than MinTrimmed
// requests (the adapters' agent loops under the detector took 107 s of
// test time over 50 turns, 42 s over 20).
const RaceLoopTurns = 20

// ResultWords is the range of the length of a tool result, in words, in
// the loops of the matrix: "a few hundred words" (issue 21). With 20 tool
// schemas on every request, a step of two results this long fits an 8,000
// token window in every mode.
var ResultWords = [2]int{150, 500}

// Windows are the context windows of the matrix, in the provider's
// tokens. A loop's budget is its window: the calibration learns the rest.
var Windows = []int{8_000, 16_000, 32_000}

// Mode is how a provider counts a request, relative to the library's
// Heuristic: each message's Heuristic count (history.Heuristic's
// CountMessage, as history.Estimate sums it) times Tool for a tool result
// (a role tool message: OpenAI's tool messages, Anthropic's tool_result
// blocks, Gemini's function responses, Responses' call outputs) or Text
// for any other message, plus history.EstimateText of the tools JSON as
// received times Schema; from user turn DriftTurn on (when > 0), every
// factor times Drift. The sum is rounded up.
type Mode struct {
	// Name names the mode in test names and tables.
	Name string
	// Text, Tool and Schema are the factors on the Heuristic's count of
	// messages other than tool results, of tool results, and of the tools
	// JSON.
	Text, Tool, Schema float64
	// DriftTurn, when > 0, is the user turn (from 1) from which every
	// factor is multiplied by Drift: a proxy that switched models.
	DriftTurn int
	Drift     float64
	// MaxOverflows is how many requests of a loop may be rejected for
	// their length.
	MaxOverflows int
}

// Modes returns the counting modes of issue 21's acceptance: a provider
// counting 1.35 and 0.75 times the Heuristic, one that drifts from 1.0 to
// 1.4 at turn 25, and one that counts tool results 1.6 times and other
// text 0.9 times.
func Modes() []Mode {
	return []Mode{
		{Name: "skew-1.35", Text: 1.35, Tool: 1.35, Schema: 1.35, MaxOverflows: 1},
		{Name: "skew-0.75", Text: 0.75, Tool: 0.75, Schema: 0.75, MaxOverflows: 1},
		{Name: "drift-1.0-1.4", Text: 1, Tool: 1, Schema: 1, DriftTurn: 25, Drift: 1.4, MaxOverflows: 2},
		{Name: "mixed-tool1.6-text0.9", Text: 0.9, Tool: 1.6, Schema: 0.9, MaxOverflows: 1},
	}
}

// Skew returns a mode that counts f times the Heuristic's count of the
// messages and the tools JSON as it is (the adapters' first loop tests).
func Skew(f float64) Mode {
	return Mode{Name: "F=" + strconv.FormatFloat(f, 'g', -1, 64), Text: f, Tool: f, Schema: 1, MaxOverflows: 1}
}

// factors returns the mode's text, tool and schema factors in user turn
// turn.
func (m Mode) factors(turn int) (text, tool, schema float64) {
	text, tool, schema = m.Text, m.Tool, m.Schema
	if m.DriftTurn > 0 && turn >= m.DriftTurn {
		text, tool, schema = text*m.Drift, tool*m.Drift, schema*m.Drift
	}
	return text, tool, schema
}

// Count returns the mode's count, in user turn turn, of a request whose
// messages are msgs (as the adapter's ToHistory converts them) and whose
// tools JSON, as received, is schema.
func (m Mode) Count(turn int, msgs []history.Message, schema string) int {
	text, tool, sch := m.factors(turn)
	h := history.Heuristic()
	var sum float64
	for i := range msgs {
		f := text
		if msgs[i].Role == history.RoleTool {
			f = tool
		}
		sum += f * float64(h.CountMessage(msgs[i]))
	}
	if schema != "" {
		sum += sch * float64(history.EstimateText(schema))
	}
	return int(math.Ceil(sum))
}

// Loop is one loop of the matrix: the provider's counting and checks, and
// the client's figures. The adapter's loop tells it where the conversation
// is (Turn) and what reached the caller (Accepted, Error); its server
// counts each request through it (Receive, Unpaired). It is safe for
// concurrent use.
type Loop struct {
	Adapter string
	Mode    Mode
	Window  int
	// Budget is the budget the runtime trims to; NewLoop sets Window
	// (a runtime states the window, the calibration finds what fits).
	// StatefulLoops also sets it above the window: a deployment whose
	// window is smaller than the model's.
	Budget int
	// Turns is how many user turns the loop runs; NewLoop sets LoopTurns.
	Turns int
	// MinWords and MaxWords bound the length of a tool result, in words
	// (see Words); NewLoop sets ResultWords.
	MinWords, MaxWords int

	mu         sync.Mutex
	turn       int
	task       string
	lastPrompt int // the provider's count of the last accepted request
	rejected   int // the provider's count of the last request rejected for its length
	st         LoopStats
	notes      []string
}

// LoopStats is what one loop measured.
type LoopStats struct {
	Adapter string
	Mode    Mode
	Window  int
	// Requests counts every request the server received; Accepted those
	// it answered with 200; Trimmed those of them whose messages the trim
	// had cut (Result.Trimmed), and TrimmedPrompt sums the provider's
	// count of these.
	Requests, Accepted, Trimmed, TrimmedPrompt int
	// Overflows counts the requests rejected for their length; Errors the
	// errors that reached the caller; Violations the requests that broke
	// the provider's tool pairing; Missing those without the latest user
	// task.
	Overflows, Errors, Violations, Missing int
}

// Fill is the mean fill of the trimmed requests: the provider's count of
// each accepted trimmed request over the window, averaged; 0 when none was
// trimmed.
func (s LoopStats) Fill() float64 {
	if s.Trimmed == 0 {
		return 0
	}
	return float64(s.TrimmedPrompt) / float64(s.Trimmed) / float64(s.Window)
}

// TableHeader is the header of the markdown table whose rows Row returns.
const TableHeader = "| adapter | mode | window | requests | trimmed | overflows | errors | violations | missing task | fill |\n" +
	"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"

// Row returns the loop's row of the markdown table.
func (s LoopStats) Row() string {
	return fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %.1f%% |",
		s.Adapter, s.Mode.Name, s.Window, s.Requests, s.Trimmed, s.Overflows, s.Errors, s.Violations, s.Missing, 100*s.Fill())
}

// NewLoop returns the loop of adapter against a provider counting as mode
// with the given window.
func NewLoop(adapter string, mode Mode, window int) *Loop {
	return &Loop{Adapter: adapter, Mode: mode, Window: window, Budget: window, Turns: LoopTurns, MinWords: ResultWords[0], MaxWords: ResultWords[1],
		st: LoopStats{Adapter: adapter, Mode: mode, Window: window}}
}

// RaceShort shortens l under the race detector to RaceLoopTurns user
// turns when it runs more, its mode's drift moving in proportion (turn 25
// of 50 to turn 10 of 20), and returns l; without the detector it returns
// l as it is. Call it after setting l.Turns.
func (l *Loop) RaceShort() *Loop {
	return l.short(race.Enabled)
}

// short is RaceShort with the detector on or off.
func (l *Loop) short(on bool) *Loop {
	if !on || l.Turns <= RaceLoopTurns {
		return l
	}
	if l.Mode.DriftTurn > 0 {
		l.Mode.DriftTurn = max(1, l.Mode.DriftTurn*RaceLoopTurns/l.Turns)
		l.st.Mode = l.Mode
	}
	l.Turns = RaceLoopTurns
	return l
}

// Words returns the length, in words, of the tool result whose hash is h:
// from MinWords to MaxWords.
func (l *Loop) Words(h uint64) int {
	return l.MinWords + int(h%uint64(max(l.MaxWords-l.MinWords+1, 1)))
}

// Turn tells the loop that user turn n (from 1) opens with task: the text
// every request from now on must hold, and the turn the mode counts in.
func (l *Loop) Turn(n int, task string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turn, l.task = n, task
}

// Receive is the server's count of a well-paired request: msgs are its
// messages as the adapter's ToHistory converts them, schema its tools JSON
// as received, and holds reports whether the request holds the text of a
// user message (the server reads its own wire format). It records the
// request, and a missing latest task, and returns the provider's count and
// whether it fits the window (false: an overflow, recorded, which the
// server answers with the provider's error).
func (l *Loop) Receive(msgs []history.Message, schema string, holds func(text string) bool) (prompt int, fits bool) {
	l.mu.Lock()
	turn, task := l.turn, l.task
	l.mu.Unlock()
	prompt = l.Mode.Count(turn, msgs, schema)
	held := holds(task)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Requests++
	if !held {
		l.st.Missing++
		l.note("request %d (turn %d): the latest task is not in it", l.st.Requests, turn)
	}
	if prompt > l.Window {
		l.st.Overflows++
		l.rejected = prompt
		l.note("request %d (turn %d): overflow, the provider counted %d > %d (the last accepted request: %d)", l.st.Requests, turn, prompt, l.Window, l.lastPrompt)
		return prompt, false
	}
	l.st.Accepted++
	l.lastPrompt = prompt
	return prompt, true
}

// Unpaired records a request the server rejected for its tool pairing,
// with why.
func (l *Loop) Unpaired(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Requests++
	l.st.Violations++
	l.note("request %d (turn %d): pairing: %s", l.st.Requests, l.turn, why)
}

// Accepted records a response the client accepted: trimmed reports whether
// the trim behind the request had cut anything, prompt the provider's count
// the response reported.
func (l *Loop) Accepted(trimmed bool, prompt int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if trimmed {
		l.st.Trimmed++
		l.st.TrimmedPrompt += prompt
	}
}

// Error records an error that reached the caller.
func (l *Loop) Error(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Errors++
	l.note("turn %d: error to the caller: %v", l.turn, err)
}

// Rejected notes the client's side of a request rejected for its length,
// for the diagnosis: attempt (0 for the first request of a step, then the
// retries), the Result whose messages were sent (a wrapper's event may
// give only its TokensAfter and Budget), and the calibration the trim used
// (nil: none), as it stood before the rejection.
func (l *Loop) Rejected(attempt int, res history.Result, cal *history.Calibration) {
	line := fmt.Sprintf("  client: attempt %d had sent %d tokens by the library's count (ratio %.3f to the provider's), aimed at a budget of %d",
		attempt, res.TokensAfter, l.lastRejected()/float64(max(res.TokensAfter, 1)), res.Budget)
	if res.KeptTurns > 0 {
		line += fmt.Sprintf(" (%d turns kept, %d dropped, %d results elided, %d steps dropped)", res.KeptTurns, res.DroppedTurns, res.ElidedResults, res.DroppedSteps)
	}
	if cal != nil {
		if scale, overhead, margin, ok := cal.Model(); ok {
			line += fmt.Sprintf("; calibration %.4fx%+.0f, margin %.0f", scale, overhead, margin)
		}
	}
	l.Note("%s", line)
}

// lastRejected is the provider's count of the latest request rejected for
// its length.
func (l *Loop) lastRejected() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(l.rejected)
}

// Note records a line for the loop's diagnosis: Check logs them all when a
// bound fails, and RunMatrix logs them with each row.
func (l *Loop) Note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.note(format, args...)
}

func (l *Loop) note(format string, args ...any) {
	l.notes = append(l.notes, fmt.Sprintf(format, args...))
}

// Stats returns the figures so far.
func (l *Loop) Stats() LoopStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// Notes returns the diagnosis lines so far.
func (l *Loop) Notes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.notes)
}

// MinTrimmed is the fewest trimmed requests a loop must make for its fill
// to say anything.
const MinTrimmed = 20

// Check fails t unless the loop met the bounds of issue 21: no error
// reached the caller, at most Mode.MaxOverflows requests were rejected for
// their length, none broke the pairing or lacked the latest task, at least
// MinTrimmed were trimmed, and the trimmed ones filled at least 85% of the
// window by the provider's count. A failure logs the loop's notes.
func (l *Loop) Check(t testing.TB) {
	t.Helper()
	s := l.Stats()
	var bad []string
	if s.Errors > 0 {
		bad = append(bad, fmt.Sprintf("%d errors reached the caller", s.Errors))
	}
	if s.Overflows > s.Mode.MaxOverflows {
		bad = append(bad, fmt.Sprintf("%d overflows, want at most %d", s.Overflows, s.Mode.MaxOverflows))
	}
	if s.Violations > 0 {
		bad = append(bad, fmt.Sprintf("%d requests broke the tool pairing", s.Violations))
	}
	if s.Missing > 0 {
		bad = append(bad, fmt.Sprintf("%d requests lacked the latest task", s.Missing))
	}
	if s.Trimmed < MinTrimmed {
		bad = append(bad, fmt.Sprintf("only %d trimmed requests: the loop does not exercise the trim", s.Trimmed))
	}
	if f := s.Fill(); f < 0.85 {
		bad = append(bad, fmt.Sprintf("trimmed requests fill %.1f%% of the window, want at least 85%%", 100*f))
	}
	if len(bad) == 0 {
		return
	}
	t.Errorf("%s: %s\n%s", s.Row(), strings.Join(bad, "; "), strings.Join(l.Notes(), "\n"))
}

// Matrix collects the rows of a run of loops.
type Matrix struct {
	mu   sync.Mutex
	rows []LoopStats
}

// Add adds a loop's figures.
func (m *Matrix) Add(s LoopStats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, s)
}

// Table returns the markdown table of the rows added, in the order of
// Modes and Windows (rows of other modes after, by name).
func (m *Matrix) Table() string {
	m.mu.Lock()
	rows := slices.Clone(m.rows)
	m.mu.Unlock()
	order := func(s LoopStats) int {
		i := slices.IndexFunc(Modes(), func(x Mode) bool { return x.Name == s.Mode.Name })
		if i < 0 {
			i = len(Modes())
		}
		return i
	}
	slices.SortStableFunc(rows, func(a, b LoopStats) int {
		if c := order(a) - order(b); c != 0 {
			return c
		}
		if c := strings.Compare(a.Mode.Name, b.Mode.Name); c != 0 {
			return c
		}
		return a.Window - b.Window
	})
	var b strings.Builder
	b.WriteString(TableHeader)
	for _, r := range rows {
		b.WriteString("\n")
		b.WriteString(r.Row())
	}
	return b.String()
}

// RunMatrix runs run for every mode of Modes and every window of Windows,
// each loop a parallel subtest named mode/window, checks each loop's
// bounds, logs its row and notes, and logs the whole markdown table at the
// end (go test -run TestLoopMatrix -v prints it).
func RunMatrix(t *testing.T, adapter string, run func(t *testing.T, l *Loop)) {
	var m Matrix
	t.Run("loops", func(t *testing.T) {
		for _, mode := range Modes() {
			for _, window := range Windows {
				t.Run(mode.Name+"/"+strconv.Itoa(window), func(t *testing.T) {
					t.Parallel()
					l := NewLoop(adapter, mode, window)
					run(t, l)
					s := l.Stats()
					m.Add(s)
					t.Log(s.Row())
					for _, n := range l.Notes() {
						t.Log("  " + n)
					}
					l.Check(t)
				})
			}
		}
	})
	t.Logf("loop matrix of %s (issue 21):\n%s", adapter, m.Table())
}

// CheckStateful logs the figures of a loop run with an adapter's Trimmer
// (kind names it) and fails t unless at most one request was rejected
// after the first recovery (afterFirst) and no error, pairing violation or
// missing task reached the provider or the caller (issue 23).
func CheckStateful(t testing.TB, l *Loop, kind string, afterFirst int) {
	t.Helper()
	s := l.Stats()
	t.Logf("%s, %s, %s: %d requests, %d rejected (%.1f per 100), %d after the first recovery; trimmed requests fill %.1f%%",
		s.Adapter, kind, s.Mode.Name, s.Requests, s.Overflows, 100*float64(s.Overflows)/float64(max(s.Requests, 1)), afterFirst, 100*s.Fill())
	if afterFirst > 1 || s.Errors > 0 || s.Violations > 0 || s.Missing > 0 {
		t.Errorf("%s: %d rejections after the first recovery (want at most 1), %d errors, %d violations, %d requests without the task\n%s",
			kind, afterFirst, s.Errors, s.Violations, s.Missing, strings.Join(l.Notes(), "\n"))
	}
}

// OverBudget is the budget of the over-budget loops of StatefulLoops, as a
// multiple of the provider's window: a budget above the real window (a
// deployment with a smaller window than the model's, a local server's
// context size), which the provider's refusal must correct for good.
const OverBudget = 1.25

// StatefulLoops runs an adapter's loop with its stateful trimmer against a
// provider counting 1.3 times the library's estimate with the given
// window, at a budget equal to the window and at OverBudget times it, each
// without and with a Calibration (run's calibrate), and checks each loop
// with CheckStateful: what the provider said about its limit bounds every
// later plan, so that at most one request is rejected after the first
// recovery (issues 23 and 33). run runs l (l.Budget is the budget to trim
// to, l.Window the provider's window), recording in it what reached the
// caller. Under the race detector the loops run 12 user turns, not
// LoopTurns: the detector finds a race in any of them, and the plain run
// checks the bounds over all 50.
func StatefulLoops(t *testing.T, adapter string, window int, run func(t *testing.T, l *Loop, calibrate bool)) {
	t.Helper()
	for _, over := range []float64{1, OverBudget} {
		for _, calibrate := range []bool{false, true} {
			kind := map[bool]string{false: "trimmer", true: "trimmer+cal"}[calibrate]
			name := kind + "/budget=" + strconv.FormatFloat(over, 'g', -1, 64) + "x"
			t.Run(name, func(t *testing.T) {
				l := NewLoop(adapter, Skew(1.3), window)
				l.Budget = int(over * float64(window))
				if race.Enabled {
					l.Turns = 12
				}
				run(t, l, calibrate)
				CheckStateful(t, l, kind+", budget "+strconv.Itoa(l.Budget)+" over a window of "+strconv.Itoa(window), max(l.Stats().Overflows-1, 0))
			})
		}
	}
}
