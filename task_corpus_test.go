package history

import (
	"errors"
	"reflect"
	"testing"

	"github.com/histrim/history/internal/race"
)

// TestTaskOnCorpus replays every conversation of the shared corpus request
// by request (the request for an assistant message is the history before
// it) at 10%, 25% and 50% of the conversation's peak request, with
// WithTask (the goal: the first message the turn rule calls the user's),
// and at 25% also with elision, digests and the cut rung under the
// default turn rule (every request at 25%, every fourth at the others),
// and checks what the new rungs promise on every request:
//
//   - pairing, structure and the exact count hold, and the input is not
//     modified;
//   - the latest turn's opening messages (the user's request) and the
//     pinned goal are sent as they were; no message but tool results and
//     calls' arguments is changed;
//   - a request over budget comes with a *BudgetError, and only when what
//     the cut rung cannot touch exceeds the budget (cutFloor, computed
//     independently of the planner);
//   - trimming the output again returns it unchanged, and the same call
//     gives the same result.
func TestTaskOnCorpus(t *testing.T) {
	convs := loadRefCorpus(t)
	shares := []float64{0.10, 0.25, 0.50}
	if testing.Short() {
		shares = shares[1:2]
	}
	step := func(share float64) int { // every request at 25%, every fourth at the others
		if share == 0.25 && !testing.Short() && !race.Enabled {
			return 1
		}
		return 4
	}
	requests, over := 0, 0
	for _, c := range convs {
		msgs := cleanCorpus(c.msgs)
		goal := -1
		for i, m := range msgs {
			if UserWritten(m) {
				goal = i
				break
			}
		}
		peak := 0
		for i := len(msgs) - 1; i > 0; i-- {
			if msgs[i].Role == RoleAssistant {
				peak = Estimate(msgs[:i], nil)
				break
			}
		}
		for _, share := range shares {
			budget := max(int(share*float64(peak)), 1)
			policies := []struct {
				name string
				opts []Option
				rule func(Message) bool
				pins []int
			}{
				{"WithTask", []Option{WithTask(goal, ElideOptions{})}, UserWritten, []int{goal}},
				{"elision, digests, cut", []Option{WithElision(ElideOptions{Digest: DefaultDigest, Cut: true}), WithStepTrim()}, nil, nil},
			}
			if share != 0.25 {
				policies = policies[:1] // the other budgets: WithTask only, to keep the test short
			}
			seen := 0
			for t0 := 1; t0 < len(msgs); t0++ {
				if msgs[t0].Role != RoleAssistant {
					continue
				}
				if seen++; seen%step(share) != 0 {
					continue
				}
				hist := msgs[:t0]
				if Estimate(hist, nil) <= budget {
					continue
				}
				for _, p := range policies {
					pins := p.pins
					if len(pins) == 1 && (pins[0] < 0 || pins[0] >= t0) {
						pins = nil
						p.opts = []Option{WithTask(-1, ElideOptions{})}
					}
					requests++
					orig := clone(hist)
					res, err := TrimToRecentTurns(hist, budget, p.opts...)
					var be *BudgetError
					if err != nil && !errors.As(err, &be) {
						t.Fatalf("%s t=%d %s: %v", c.file, t0, p.name, err)
					}
					if !reflect.DeepEqual(orig, hist) {
						t.Fatalf("%s t=%d %s: input modified", c.file, t0, p.name)
					}
					checkResult(t, hist, res, true)
					if got := Estimate(res.Messages, nil); got != res.TokensAfter {
						t.Fatalf("%s t=%d %s: TokensAfter %d, recount %d", c.file, t0, p.name, res.TokensAfter, got)
					}
					checkUntouched(t, hist, res, p.rule, pins)
					if err == nil && res.TokensAfter > budget {
						t.Fatalf("%s t=%d %s: over budget without an error", c.file, t0, p.name)
					}
					if err != nil {
						over++
						if floor := cutFloor(hist, p.rule, pins); floor <= budget {
							t.Errorf("%s t=%d %s: too large (%d) although what cannot be cut is %d <= %d", c.file, t0, p.name, res.TokensAfter, floor, budget)
						}
					}
					re, rerr := TrimToRecentTurns(res.Messages, budget, carryPins(p.opts, res, pins)...)
					if (err == nil) != (rerr == nil) || !reflect.DeepEqual(re.Messages, res.Messages) {
						t.Fatalf("%s t=%d %s: trimming the output again changed it", c.file, t0, p.name)
					}
				}
			}
		}
	}
	t.Logf("%d requests trimmed, %d over budget (each over what the cut rung cannot touch)", requests, over)
}

// carryPins returns opts for trimming res's output again: WithTask's goal
// carried over to its position in the output.
func carryPins(opts []Option, res Result, pins []int) []Option {
	if len(pins) == 0 {
		return opts
	}
	return []Option{WithTask(res.Positions(pins...)[0], ElideOptions{})}
}

// cleanCorpus drops broken tool pairs and empty assistant messages, as the
// bench's corpus reader does.
func cleanCorpus(msgs []Message) []Message {
	swept, _ := SweepOrphans(msgs)
	out := make([]Message, 0, len(swept))
	for _, m := range swept {
		if m.Role == RoleAssistant && m.Content == "" && len(m.ToolCalls) == 0 && len(m.Parts) == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// checkUntouched fails when res changes a message of in other than a tool
// result or a call's arguments, or leaves out the latest turn's opening
// messages (under rule) or a pin.
func checkUntouched(t *testing.T, in []Message, res Result, rule func(Message) bool, pins []int) {
	t.Helper()
	sent := make(map[int]bool, len(res.Kept))
	for j, k := range res.Kept {
		if k < 0 {
			continue
		}
		sent[k] = true
		a, b := in[k], res.Messages[j]
		if a.Role == RoleTool {
			continue
		}
		if a.Content != b.Content || a.Kind != b.Kind || !reflect.DeepEqual(a.Parts, b.Parts) || len(a.ToolCalls) != len(b.ToolCalls) {
			t.Fatalf("message %d changed", k)
		}
		for i := range a.ToolCalls {
			if a.ToolCalls[i].ID != b.ToolCalls[i].ID || a.ToolCalls[i].Name != b.ToolCalls[i].Name {
				t.Fatalf("call %d of message %d changed", i, k)
			}
		}
	}
	var opts []Option
	if rule != nil {
		opts = append(opts, WithTurnStart(rule))
	}
	turns := Turns(in, opts...)
	if len(turns) == 0 {
		return
	}
	last := turns[len(turns)-1]
	for i := last.Start; i < last.End && in[i].Role != RoleAssistant; i++ {
		if !sent[i] {
			t.Fatalf("the latest turn's opening message %d was not sent", i)
		}
	}
	for _, p := range pins {
		if !sent[p] {
			t.Fatalf("pinned message %d was not sent", p)
		}
	}
}

// cutFloor returns the tokens of what the cut rung cannot touch in a trim
// of msgs (under rule, with pins): the prefix, a turn breadcrumb when
// there are older turns, the pins before the latest turn, its opening
// messages, a step breadcrumb when it has older steps, and its newest
// step with every tool result at its cut marker (or whole, when the
// marker costs more) and every call's arguments cleared (when that costs
// less), but never in a message that holds reasoning.
func cutFloor(msgs []Message, rule func(Message) bool, pins []int) int {
	var opts []Option
	if rule != nil {
		opts = append(opts, WithTurnStart(rule))
	}
	turns := Turns(msgs, opts...)
	c := Heuristic()
	n := Estimate(msgs[:leadEnd(msgs)], nil)
	if len(turns) == 0 {
		return n
	}
	if len(turns) > 1 {
		n += c.CountMessage(Breadcrumb())
	}
	last := turns[len(turns)-1]
	for _, p := range pins {
		if p < last.Start {
			n += c.CountMessage(msgs[p])
		}
	}
	open := last.Start
	for open < last.End && msgs[open].Role != RoleAssistant {
		n += c.CountMessage(msgs[open])
		open++
	}
	newest, steps := -1, 0
	for i := open; i < last.End; i++ {
		if startsStep(msgs[i]) {
			newest = i
			steps++
		}
	}
	if steps > 1 {
		n += c.CountMessage(Message{Role: RoleUser, Content: StepBreadcrumbText, Kind: KindBreadcrumb})
	}
	if newest < 0 {
		return n
	}
	var ac argCounter
	var calls callIndex
	for i := newest; i < last.End; i++ {
		m := msgs[i]
		switch {
		case m.Role == RoleTool:
			calls.reset(msgs[newest].ToolCalls)
			marker := elided(m, cutMarker(m, toolName(&m, &calls), c.CountMessage(m), false))
			n += min(c.CountMessage(m), c.CountMessage(marker))
		case m.Role == RoleAssistant && !hasReasoning(m):
			m.ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
			for k := range m.ToolCalls {
				cost := ac.text(c, m.ToolCalls[k].Arguments, &ac.empty, &ac.set)
				if cost > ac.text(c, clearedArguments(cost), &ac.empty, &ac.set) {
					m.ToolCalls[k].Arguments = clearedArguments(cost)
				}
			}
			n += c.CountMessage(m)
		default:
			n += c.CountMessage(m)
		}
	}
	return n
}
