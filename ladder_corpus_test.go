package history

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestLadderOnCorpus trims every conversation of the shared corpus at
// budgets from 5% to 100% of its size, whole-turn only and with the whole
// ladder (elision and step trimming), and checks what the ladder promises:
// with it every run fits, or fails only where the prefix, the
// opening message and the newest step alone exceed the budget; no run
// breaks a tool pair. Run with -v for the table (docs/performance.md).
func TestLadderOnCorpus(t *testing.T) {
	convs := loadRefCorpus(t)
	percents := []int{5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	type row struct{ turnFit, turnTooLarge, ladderFit, ladderTooLarge, pairing int }
	rows := make([]row, len(percents))
	for _, c := range convs {
		total := Estimate(c.msgs, nil)
		for pi, pct := range percents {
			budget := max(total*pct/100, 1)
			r := &rows[pi]

			res, err := TrimToRecentTurns(c.msgs, budget)
			switch {
			case err == nil:
				r.turnFit++
			case errors.Is(err, ErrLatestTurnTooLarge):
				r.turnTooLarge++
			default:
				t.Fatalf("%s at %d%%: %v", c.file, pct, err)
			}
			if _, rep := SweepOrphans(res.Messages); rep.Total() > 0 {
				r.pairing++
			}

			res, err = TrimToRecentTurns(c.msgs, budget, WithElision(ElideOptions{}), WithStepTrim())
			if _, rep := SweepOrphans(res.Messages); rep.Total() > 0 {
				r.pairing++
			}
			switch {
			case err == nil:
				r.ladderFit++
				if res.TokensAfter > budget {
					t.Errorf("%s at %d%%: %d tokens over a budget of %d without error", c.file, pct, res.TokensAfter, budget)
				}
			case errors.Is(err, ErrLatestTurnTooLarge):
				r.ladderTooLarge++
				if floor := ladderFloor(c.msgs); floor <= budget {
					t.Errorf("%s at %d%%: too large although prefix + opening + newest step = %d fit %d", c.file, pct, floor, budget)
				}
			default:
				t.Fatalf("%s at %d%%: %v", c.file, pct, err)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| budget | whole turns: fit | too large | with elision + steps: fit | too large | pairing violations |\n|---|---|---|---|---|---|\n")
	for pi, pct := range percents {
		r := rows[pi]
		fmt.Fprintf(&b, "| %d%% | %d | %d | %d | %d | %d |\n", pct, r.turnFit, r.turnTooLarge, r.ladderFit, r.ladderTooLarge, r.pairing)
		if r.pairing > 0 {
			t.Errorf("%d%%: %d runs broke tool pairing", pct, r.pairing)
		}
	}
	t.Logf("%d conversations, Heuristic() counter:%s", len(convs), b.String())
}

// ladderFloor returns the tokens of what the ladder can never drop: the
// pinned prefix, a turn breadcrumb when there are older turns, the latest
// turn's opening block, a step breadcrumb when there are older steps, and
// the newest step with its results elided as the default options allow.
// It is computed independently of the planner, from Turns and the step rule.
func ladderFloor(msgs []Message) int {
	view, _ := SweepOrphans(msgs)
	turns := Turns(view)
	if len(turns) == 0 {
		return Estimate(view, nil) // nothing to trim: the view is sent as it is
	}
	lead := leadEnd(view)
	var keep []Message
	for _, m := range view[:lead] {
		if m.Kind != KindBreadcrumb {
			keep = append(keep, m)
		}
	}
	if len(turns) > 1 {
		keep = append(keep, Breadcrumb())
	}
	last := view[turns[len(turns)-1].Start:]
	open := 0
	for open < len(last) && !(last[open].Role == RoleUser && last[open].Kind == "") {
		open++
	}
	if open == len(last) {
		open = 0
	}
	end := open
	for end < len(last) && !startsStep(last[end]) {
		end++
	}
	newest := len(last)
	steps := 0
	for i := end; i < len(last); i++ {
		if startsStep(last[i]) {
			newest = i
			steps++
		}
	}
	keep = append(keep, last[:end]...)
	if steps > 1 {
		keep = append(keep, Message{Role: RoleUser, Content: StepBreadcrumbText, Kind: KindBreadcrumb})
	}
	keep = append(keep, last[newest:]...)
	el, err := ElideToolResults(keep, ElideOptions{})
	if err != nil {
		panic(err)
	}
	return Estimate(el.Messages, nil)
}
