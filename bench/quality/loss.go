package quality

import (
	history "github.com/histrim/history"
	"github.com/histrim/history/internal/refs"
)

// Losses are where the references a replay did not keep were lost, over
// the requests that need trimming (see Stats.Loss).
type Losses struct {
	// Over: the request was sent over the budget. Step: R was in the
	// latest turn (under the policy's turn rule) and not sent, so it went
	// with a dropped step. Turn: R was in an older turn and not sent.
	// Hidden: R was sent, but some token of the reference is not shown
	// (behind a placeholder, not in its digest, or cut away).
	Over, Step, Turn, Hidden int
	// Mentioned counts, of Step and Turn, the references one of whose
	// tokens a message between R and the request's end (not a tool
	// result) mentions: what a choice by later mentions could see.
	Mentioned int
}

// Add adds o to l.
func (l *Losses) Add(o Losses) {
	l.Over += o.Over
	l.Step += o.Step
	l.Turn += o.Turn
	l.Hidden += o.Hidden
	l.Mentioned += o.Mentioned
}

// lose classifies the references of mine that res does not keep.
func lose(hist []history.Message, res *history.Result, mine []Ref, over bool, turnStart func(history.Message) bool) Losses {
	var l Losses
	if over {
		l.Over = len(mine)
		return l
	}
	if res.Kept == nil || len(mine) == 0 {
		return l
	}
	latest := 0
	for i := len(hist) - 1; i >= 0; i-- {
		m := hist[i]
		if m.Role == history.RoleUser && (turnStart == nil || turnStart(m)) {
			latest = i
			break
		}
	}
	sent := map[int]int{}
	for j, k := range res.Kept {
		if k >= 0 {
			sent[k] = j
		}
	}
	for _, r := range mine {
		j, ok := sent[r.R]
		if ok {
			if refs.Shown(&res.Messages[j], &hist[r.R], r.Tokens) < len(r.Tokens) {
				l.Hidden++
			}
			continue
		}
		if r.R >= latest {
			l.Step++
		} else {
			l.Turn++
		}
	mention:
		for i := r.R + 1; i < len(hist); i++ {
			if hist[i].Role == history.RoleTool {
				continue
			}
			s := refs.Text(&hist[i])
			for _, c := range hist[i].ToolCalls {
				s += "\n" + c.Arguments
			}
			for _, tok := range r.Tokens {
				if refs.Visible(s, tok) {
					l.Mentioned++
					break mention
				}
			}
		}
	}
	return l
}
