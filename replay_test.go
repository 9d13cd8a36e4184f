package history

import (
	"reflect"
	"slices"
	"testing"

	"github.com/histrim/history/internal/race"
)

// TestTrimmerReplayRewrites replays the tool-heavy sessions of the shared
// corpus (many steps, few user turns) through a Trimmer with the whole
// ladder at 25% of their size, a request before every assistant message,
// and counts the requests whose prompt is not the previous prompt
// extended: the prefix rewrites that cost a prompt-cache write. Between
// two fresh plans the prompt is append-only, so rewrites happen only at
// maintenance points (a plan that no longer fits). The same holds for the
// compact trigger policy with arguments cleared: the plan rebuilds the
// same cleared copies until the next maintenance point. Run with -v for
// the numbers (docs/prompt-caching.md).
func TestTrimmerReplayRewrites(t *testing.T) {
	if race.Enabled {
		t.Skip("its shares need the long tool-heavy sessions that race.CorpusFile leaves out under the race detector; the plain run checks them, and the Trimmer's concurrent calls are checked under the detector by TestManyParallelCalls and the Conversations tests")
	}
	convs := loadRefCorpus(t)
	policies := []struct {
		name string
		opts []Option
		max  float64 // the share of over-budget requests that may rewrite the prefix
	}{
		{"low-water 0.7 + ladder", []Option{WithLowWater(0.7), WithElision(ElideOptions{}), WithStepTrim()}, 0.10},
		{"trigger 0.6, 0.36 + ladder, arguments cleared from 64 tokens", []Option{WithTrigger(0.6), WithLowWater(0.36),
			WithElision(ElideOptions{KeepRecent: 1, MinTokens: 64, ClearArguments: 64}), WithStepTrim()}, 0.20},
	}
	for _, pol := range policies {
		t.Run(pol.name, func(t *testing.T) { replayRewrites(t, convs, pol.opts, pol.max) })
	}
}

func replayRewrites(t *testing.T, convs []refConv, opts []Option, maxShare float64) {
	sessions, requests, over, rewrites, betweenPlans, tooLarge, afterTooLarge, cleared := 0, 0, 0, 0, 0, 0, 0, 0
	// floor is a lower bound on the maintenance points of any policy:
	// between two of them the prompt is append-only and within the budget,
	// so the messages added in between, sent whole, sum to at most the
	// budget, and a transcript of T tokens needs ceil(T/budget)-1 of them.
	floor := 0
	for _, c := range convs {
		users, tools := 0, 0
		for _, m := range c.msgs {
			switch {
			case m.Role == RoleUser && m.Kind == "":
				users++
			case m.Role == RoleTool:
				tools++
			}
		}
		if tools < 20 || tools < 10*max(users, 1) {
			continue // not tool-heavy
		}
		sessions++
		budget := max(Estimate(c.msgs, nil)/4, 1)
		last := len(c.msgs) - 1
		for last > 0 && c.msgs[last].Role != RoleAssistant {
			last--
		}
		floor += (Estimate(c.msgs[:last], nil)+budget-1)/budget - 1
		plans := 0
		tr := NewTrimmer(append(slices.Clip(opts), WithOnTrim(func(Event) { plans++ }))...)
		var prev Result
		prevFailed := false
		for i, m := range c.msgs {
			if m.Role != RoleAssistant || i == 0 {
				continue
			}
			in := c.msgs[:i]
			before := plans
			res, err := tr.Trim(in, budget)
			if err != nil && !isTooLarge(err) {
				t.Fatalf("%s at %d: %v", c.file, i, err)
			}
			requests++
			failed := err != nil
			if failed {
				tooLarge++
			}
			for _, j := range res.Modified {
				if res.Messages[j].Role == RoleAssistant && len(clearedCalls(&res.Messages[j], &in[res.Kept[j]])) > 0 {
					cleared++
				}
			}
			if !res.Trimmed {
				prev, prevFailed = res, failed
				continue
			}
			over++
			// The previous prompt, less a tail whose unanswered calls the
			// sweep stripped (they come back with their results).
			cmp := prev.Messages
			for _, j := range prev.Modified {
				if len(prev.Messages[j].ToolCalls) != len(in[prev.Kept[j]].ToolCalls) {
					cmp = cmp[:j]
					break
				}
			}
			extends := len(res.Messages) >= len(cmp) && reflect.DeepEqual(res.Messages[:len(cmp)], cmp)
			if !extends {
				rewrites++
				if failed || prevFailed {
					afterTooLarge++ // the newest step alone is over budget: no prompt could be kept
				}
				if plans == before {
					betweenPlans++ // a rewrite that no fresh plan explains
				}
			}
			prev, prevFailed = res, failed
		}
	}
	if sessions == 0 {
		t.Fatal("setup: no tool-heavy session in the corpus")
	}
	t.Logf("%d tool-heavy sessions, %d requests, %d over budget, %d rewrote the prefix (%.1f%%); %d requests too large (the newest step alone over budget), %d rewrites at or right after one; %d cleared messages sent; no policy can have fewer than %d maintenance points (%.1f%%)",
		sessions, requests, over, rewrites, 100*float64(rewrites)/float64(max(over, 1)), tooLarge, afterTooLarge, cleared, floor, 100*float64(floor)/float64(max(over, 1)))
	if betweenPlans > 0 {
		t.Errorf("%d prefix rewrites between maintenance points", betweenPlans)
	}
	// Low-water 0.7: before plans were remembered for every rung, 269 of
	// these 805 (33.4%) rewrote the prefix; now 67 (8.3%), 21 of them at a
	// request whose newest step alone is over budget.
	if float64(rewrites) > maxShare*float64(over) {
		t.Errorf("%d of %d over-budget requests rewrote the prefix: more than %.0f%%", rewrites, over, 100*maxShare)
	}
}
