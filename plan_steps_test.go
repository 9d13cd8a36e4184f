package history

// Tests of step trimming's plans when the latest turn cannot fit: the
// smallest plan the reasoning rules allow, whatever the budget below it.

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history/internal/rules"
)

// reasoningTurn is a turn of steps with reasoning: the task, a step
// without reasoning that a nudge ends, then a large and a small step that
// think, and the answer. The nudge opens the final tool loop, whose first
// step thinks: a plan that drops it must open the loop with another step
// that thinks.
func reasoningTurn() []Message {
	return []Message{
		{Role: RoleUser, Content: "task"},
		callOf("c0", "read"), big("c0", 20),
		{Role: RoleUser, Kind: KindNudge, Content: "hurry"},
		think(callOf("c1", "read")), big("c1", 120),
		think(callOf("c2", "read")), big("c2", 10),
		{Role: RoleAssistant, Content: "done"},
	}
}

// TestStepTrimSmallestPlan: when the latest turn cannot fit, step trimming
// sends the smallest plan the rules allow, at every budget below it (issue
// 33: at budget 1 the planner fell back to dropping only the steps before
// the final loop, a plan larger than the request, and sent the whole turn,
// 172 tokens, where budget 100 found a valid 85-token plan, [0 -1 6 7 8]).
func TestStepTrimSmallestPlan(t *testing.T) {
	in := reasoningTurn()
	want := []int{0, -1, 6, 7, 8}
	for _, budget := range []int{1, 50, 84} {
		res, err := TrimToRecentTurns(in, budget, WithCounter(chars), WithStepTrim())
		if !errors.Is(err, ErrLatestTurnTooLarge) || !equalInts(res.Kept, want) || res.TokensAfter != 85 {
			t.Fatalf("budget %d: kept %v, %d tokens, %v; want %v, 85 tokens and ErrLatestTurnTooLarge", budget, res.Kept, res.TokensAfter, err, want)
		}
		checkResult(t, in, res, false)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// genReasoningTurn builds a latest turn from data: a system prompt, an
// older turn, then the task and 2 to 9 steps, each with or without
// reasoning, with one or two calls, results from nothing to a few hundred
// tokens, some ended by a nudge, and an answer or none.
func genReasoningTurn(data []byte) []Message {
	next := byteSource(data)
	size := func() int {
		b := next()
		if b%4 == 0 {
			return b * 3
		}
		return b % 40
	}
	// The older turn costs more than the turn notice that replaces it:
	// step trimming's plans are what this generator is for.
	in := []Message{{Role: RoleSystem, Content: "sys"}, {Role: RoleUser, Content: "before " + strings.Repeat("b", 60)}, {Role: RoleAssistant, Content: "ok"},
		{Role: RoleUser, Content: "task"}}
	steps := 2 + next()%7
	for s := range steps {
		id := "c" + strconv.Itoa(s)
		b := next()
		a := Message{Role: RoleAssistant, Content: strings.Repeat("a", b%8), ToolCalls: []ToolCall{{ID: id, Name: "read"}}}
		if b%3 == 0 {
			a.ToolCalls = append(a.ToolCalls, ToolCall{ID: id + "b", Name: "grep"})
		}
		if b%2 == 0 {
			a.Parts = []Part{{Type: PartReasoning, Text: strings.Repeat("t", size())}}
		}
		in = append(in, a, Message{Role: RoleTool, ToolCallID: id, Content: strings.Repeat("x", size())})
		if b%3 == 0 {
			in = append(in, Message{Role: RoleTool, ToolCallID: id + "b", Content: strings.Repeat("y", size())})
		}
		if b%5 == 1 {
			in = append(in, Message{Role: RoleUser, Kind: KindNudge, Content: "hurry"})
		}
	}
	if b := next(); b%3 > 0 {
		fin := Message{Role: RoleAssistant, Content: strings.Repeat("d", b%20)}
		if b%2 == 0 {
			fin.Parts = []Part{{Type: PartReasoning, Text: "z"}}
		}
		in = append(in, fin)
	}
	return in
}

// loopsOpenWithReasoning reports, for the latest turn of msgs (after its
// opening user message and any notice), whether its first step and the
// first step of its final tool loop (after its last nudge) hold
// reasoning; ok is false when it has no step.
func loopsOpenWithReasoning(msgs []Message) (first, final, ok bool) {
	turns := Turns(msgs)
	last := turns[len(turns)-1]
	var steps []int
	loop := -1 // the first step after the last nudge
	for i := last.Start; i < last.End; i++ {
		m := msgs[i]
		switch {
		case m.Kind == KindNudge:
			loop = -1
		case startsStep(m):
			steps = append(steps, i)
			if loop < 0 {
				loop = i
			}
		}
	}
	if len(steps) == 0 {
		return false, false, false
	}
	if loop < 0 {
		loop = steps[len(steps)-1]
	}
	return hasReasoning(msgs[steps[0]]), hasReasoning(msgs[loop]), true
}

// checkStepPlans trims in at budgets from 1 up to its size (below which
// it cannot fit whole), about 80 of them, and checks the plans: each plan sent over budget (the latest turn
// cannot fit) is valid (a trim's invariants; trimming it again at the same
// budget returns it; and, unless loose, the reasoning rules: a turn whose
// first step, or whose final loop's first step, thinks is sent opening it
// with a step that thinks), and no larger than the plan found at any
// larger budget below the request's size, fitting or not: a plan that
// does not fit is the smallest there is.
func checkStepPlans(t *testing.T, in []Message, loose bool, opts ...Option) {
	t.Helper()
	opts = append([]Option{WithCounter(chars), WithStepTrim()}, opts...)
	first, final, _ := loopsOpenWithReasoning(in)
	whole, err := TrimToRecentTurns(in, math.MaxInt, opts...)
	if err != nil {
		t.Fatal(err)
	}
	total := whole.TokensAfter // the request untrimmed
	type plan struct {
		budget, size int
		kept         []int
		over         bool
	}
	var plans []plan
	for budget := 1; budget < total; budget += 1 + total/80 {
		res, err := TrimToRecentTurns(in, budget, opts...)
		if err != nil && !errors.Is(err, ErrLatestTurnTooLarge) {
			t.Fatalf("budget %d: %v", budget, err)
		}
		plans = append(plans, plan{budget, res.TokensAfter, res.Kept, err != nil})
		if err == nil {
			continue
		}
		checkResult(t, in, res, false)
		if res.DroppedSteps > 0 && !loose {
			f, l, ok := loopsOpenWithReasoning(res.Messages)
			if ok && (first && !f || final && !l) {
				t.Fatalf("budget %d: the plan %v opens a loop without its reasoning: %v", budget, res.Kept, render(res.Messages))
			}
		}
		again, _ := TrimToRecentTurns(res.Messages, budget, opts...)
		if len(again.Messages) != len(res.Messages) || again.TokensAfter != res.TokensAfter {
			t.Fatalf("budget %d: trimming the plan %v again gives %d tokens, not %d", budget, res.Kept, again.TokensAfter, res.TokensAfter)
		}
	}
	least := -1 // the smallest plan at the budgets above
	for i := len(plans) - 1; i >= 0; i-- {
		p := plans[i]
		if p.over && least >= 0 && p.size > plans[least].size {
			t.Fatalf("budget %d sends %d tokens (kept %v), over it, where budget %d found %d (kept %v)",
				p.budget, p.size, p.kept, plans[least].budget, plans[least].size, plans[least].kept)
		}
		if least < 0 || p.size <= plans[least].size {
			least = i
		}
	}
}

// TestStepTrimMonotone: over generated turns of steps with and without
// reasoning, parallel calls and nudges, the plan sent when the latest turn
// cannot fit never grows as the budget shrinks, and is valid (see
// checkStepPlans); with the loose rule of providers that bind reasoning to
// its own step, and with elision and its cut rung too.
func TestStepTrimMonotone(t *testing.T) {
	seeds := [][]byte{{3, 1, 8, 12, 0, 2, 6, 7, 20, 0, 9, 4}, {6, 0, 44, 16, 1, 5, 2, 10, 0, 12, 8, 3, 7}}
	for s := range 120 {
		b := make([]byte, 24)
		for i := range b {
			b[i] = byte((s*131 + i*29 + i*i*s) % 251)
		}
		seeds = append(seeds, b)
	}
	for _, data := range seeds {
		in := genReasoningTurn(data)
		for o, opts := range [][]Option{nil, {rules.LooseReasoning().(Option)}, {WithElision(ElideOptions{MinTokens: -1, Cut: true})}} {
			t.Run("", func(t *testing.T) {
				defer func() {
					if t.Failed() {
						t.Logf("seed %v: %v", data, render(in))
					}
				}()
				checkStepPlans(t, in, o == 1, opts...)
			})
		}
	}
}

// FuzzStepTrimMonotone: checkStepPlans on any generated turn.
func FuzzStepTrimMonotone(f *testing.F) {
	f.Add([]byte{3, 1, 8, 12, 0, 2, 6, 7, 20, 0, 9, 4})
	f.Add([]byte{6, 0, 44, 16, 1, 5, 2, 10, 0, 12, 8, 3, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStepPlans(t, genReasoningTurn(data), false)
	})
}

// byteSource returns a function that reads data a byte at a time, as an
// int, and 0 once it is spent: what the fuzz targets' generators build
// their messages from.
func byteSource(data []byte) func() int {
	return func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
}
