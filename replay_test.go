package history

import (
	"reflect"
	"testing"
)

// TestTrimmerReplayRewrites replays the tool-heavy sessions of the shared
// corpus (many steps, few user turns) through a Trimmer with the whole
// ladder at 25% of their size, a request before every assistant message,
// and counts the requests whose prompt is not the previous prompt
// extended: the prefix rewrites that cost a prompt-cache write. Between
// two fresh plans the prompt is append-only, so rewrites happen only at
// maintenance points (a plan that no longer fits). Run with -v for the
// numbers (docs/prompt-caching.md).
func TestTrimmerReplayRewrites(t *testing.T) {
	convs := loadRefCorpus(t)
	sessions, requests, over, rewrites, betweenPlans, tooLarge, afterTooLarge := 0, 0, 0, 0, 0, 0, 0
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
		plans := 0
		tr := NewTrimmer(WithLowWater(0.7), WithElision(ElideOptions{}), WithStepTrim(),
			WithOnTrim(func(Event) { plans++ }))
		var prev []Message
		var prevMod []int
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
			if !res.Trimmed {
				prev, prevMod, prevFailed = res.Messages, res.Modified, failed
				continue
			}
			over++
			// The previous prompt, less a tail whose unanswered calls the
			// sweep stripped (they come back with their results).
			cmp := prev
			for _, j := range prevMod {
				if prev[j].Kind != KindElided {
					cmp = prev[:j]
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
			prev, prevMod, prevFailed = res.Messages, res.Modified, failed
		}
	}
	if sessions == 0 {
		t.Fatal("setup: no tool-heavy session in the corpus")
	}
	t.Logf("%d tool-heavy sessions, %d requests, %d over budget, %d rewrote the prefix (%.1f%%); %d requests too large (the newest step alone over budget), %d rewrites at or right after one",
		sessions, requests, over, rewrites, 100*float64(rewrites)/float64(max(over, 1)), tooLarge, afterTooLarge)
	if betweenPlans > 0 {
		t.Errorf("%d prefix rewrites between maintenance points", betweenPlans)
	}
	// Before plans were remembered for every rung: 269 of these 805
	// (33.4%). Now 67 (8.3%), 21 of them at a request whose newest step
	// alone is over budget.
	if rewrites*10 > over {
		t.Errorf("%d of %d over-budget requests rewrote the prefix: more than 10%%", rewrites, over)
	}
}
