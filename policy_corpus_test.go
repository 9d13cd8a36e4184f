package history

import (
	"errors"
	"reflect"
	"testing"

	"github.com/histrim/history/internal/race"
)

// TestPoliciesOnCorpus replays every conversation of the shared corpus
// through one Trimmer per policy, request by request (the request for an
// assistant message is the history before it), at 25% of the
// conversation's peak request, under the three policies of package fit
// (spelled out here: fit imports this package): the default (the task
// preset with the 6 most recent results whole and digests up to 1,600
// tokens, low-water 0.5), fit.Cheaper (the most recent result, digests up
// to 800, trigger 0.65, low-water 0.32) and fit.KeepMore (16 recent results,
// digests up to 800, low-water 0.9), and the default with the session's goal (its
// first user-written message) pinned. Their maintenance points elide with digests
// that prefer what later messages mention. On every request it checks:
//
//   - pairing, structure and the exact count hold, the input is not
//     modified, and no message but tool results and calls' arguments is
//     changed; the latest turn's opening messages and the pinned goal are
//     sent as they were;
//   - a request over budget comes with a *BudgetError, and only when what
//     the cut rung cannot touch exceeds the budget;
//   - trimming the output again returns it unchanged;
//   - a second Trimmer fed the same requests sends the same prompts.
func TestPoliciesOnCorpus(t *testing.T) {
	convs := loadRefCorpus(t)
	requests, over, plans := 0, 0, 0
	for _, c := range convs {
		msgs := cleanCorpus(c.msgs)
		goal := -1
		for i, m := range msgs {
			if UserWritten(m) {
				goal = i
				break
			}
		}
		policies := []struct {
			name string
			opts []Option
			goal int // pinned from the request after it on
		}{
			{"default", []Option{WithTask(-1, ElideOptions{KeepRecent: 6, Digest: 1600}), WithLowWater(0.5)}, -1},
			{"default, the goal pinned", []Option{WithTask(goal, ElideOptions{KeepRecent: 6, Digest: 1600}), WithLowWater(0.5)}, goal},
			{"cheaper", []Option{WithTask(-1, ElideOptions{KeepRecent: 1, Digest: 800}), WithTrigger(0.65), WithLowWater(0.32)}, -1},
			{"keep more", []Option{WithTask(-1, ElideOptions{KeepRecent: 16, Digest: 800}), WithLowWater(0.9)}, -1},
		}
		if testing.Short() || race.Enabled {
			policies = policies[:2]
		}
		peak := 0
		for i := len(msgs) - 1; i > 0; i-- {
			if msgs[i].Role == RoleAssistant {
				peak = Estimate(msgs[:i], nil)
				break
			}
		}
		budget := max(peak/4, 1)
		for _, p := range policies {
			if p.name == "default, the goal pinned" && goal < 0 {
				continue // no user message: no goal to pin
			}
			tr, twin := NewTrimmer(p.opts...), NewTrimmer(p.opts...)
			for t0 := 1; t0 < len(msgs); t0++ {
				if msgs[t0].Role != RoleAssistant || (p.goal >= 0 && t0 <= p.goal) {
					continue
				}
				var pins []int
				if p.goal >= 0 {
					pins = []int{p.goal}
				}
				hist := msgs[:t0]
				orig := clone(hist)
				res, err := tr.Trim(hist, budget)
				var be *BudgetError
				if err != nil && !errors.As(err, &be) {
					t.Fatalf("%s t=%d %s: %v", c.file, t0, p.name, err)
				}
				requests++
				if res.Trimmed {
					plans++
				}
				if !reflect.DeepEqual(orig, hist) {
					t.Fatalf("%s t=%d %s: input modified", c.file, t0, p.name)
				}
				checkResult(t, hist, res, true)
				if got := Estimate(res.Messages, nil); got != res.TokensAfter {
					t.Fatalf("%s t=%d %s: TokensAfter %d, recount %d", c.file, t0, p.name, res.TokensAfter, got)
				}
				checkUntouched(t, hist, res, UserWritten, pins)
				if err == nil && res.TokensAfter > budget {
					t.Fatalf("%s t=%d %s: over budget without an error", c.file, t0, p.name)
				}
				if err != nil {
					over++
					if floor := cutFloor(hist, UserWritten, pins); floor <= budget {
						t.Errorf("%s t=%d %s: too large (%d) although what cannot be cut is %d <= %d", c.file, t0, p.name, res.TokensAfter, floor, budget)
					}
				}
				again := p.opts
				if p.goal >= 0 {
					again = []Option{WithTask(res.Positions(p.goal)[0], ElideOptions{KeepRecent: 6, Digest: 1600}), WithLowWater(0.5)}
				}
				re, rerr := TrimToRecentTurns(res.Messages, budget, again...)
				if (err == nil) != (rerr == nil) || !reflect.DeepEqual(re.Messages, res.Messages) {
					t.Fatalf("%s t=%d %s: trimming the output again changed it", c.file, t0, p.name)
				}
				res2, _ := twin.Trim(hist, budget)
				if !reflect.DeepEqual(res2.Messages, res.Messages) {
					t.Fatalf("%s t=%d %s: the same requests gave another prompt", c.file, t0, p.name)
				}
			}
		}
	}
	t.Logf("%d requests, %d trimmed, %d over budget (each over what the cut rung cannot touch)", requests, plans, over)
}
