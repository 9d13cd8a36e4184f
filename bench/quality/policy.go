package quality

import (
	"fmt"

	history "github.com/histrim/history"
	"github.com/histrim/history/fit"
)

// Budget is a budget for every session: a share of the session's peak
// request, or a fixed number of tokens.
type Budget struct {
	Name   string
	Share  float64
	Tokens int
}

// For returns the budget for s.
func (b Budget) For(s *Session) int {
	if b.Tokens > 0 {
		return b.Tokens
	}
	return max(int(b.Share*float64(s.Peak)), 1)
}

// Policies returns the policies the recall table compares: stateless
// trims, rung by rung.
func Policies() []Policy {
	return []Policy{
		{Name: "whole turns", Options: func(*Session) []history.Option { return nil }},
		{Name: "WithElision(ElideOptions{}) + WithStepTrim()", Options: func(*Session) []history.Option {
			return []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
		}},
		{Name: "+ Cut", Options: func(*Session) []history.Option {
			return []history.Option{history.WithElision(history.ElideOptions{Cut: true}), history.WithStepTrim()}
		}},
		{Name: "+ Cut, Digest: 200", Options: func(*Session) []history.Option {
			return []history.Option{history.WithElision(history.ElideOptions{Cut: true, Digest: history.DefaultDigest}), history.WithStepTrim()}
		}},
		{Name: "WithTask(goal, ElideOptions{})", TurnStart: history.UserWritten, Goal: true, Options: func(s *Session) []history.Option {
			return []history.Option{history.WithTask(s.Goal, history.ElideOptions{})}
		}},
	}
}

// Candidate is a policy that a runtime could be given by default, with
// the short label of the charts.
type Candidate struct {
	Label string
	Policy
}

// Marks are the (trigger, low-water) pairs of the candidates' grid: no
// trigger (a trim starts past the budget) and no low-water mark (1, 1),
// no trigger down to 0.9, 0.8, 0.7, 0.6, 0.5 or 0.4, and compact triggers from 0.8
// to 0.6.
var Marks = [][2]float64{{1, 1}, {1, 0.9}, {1, 0.8}, {1, 0.7}, {1, 0.6}, {1, 0.5}, {1, 0.4}, {0.8, 0.5}, {0.8, 0.4}, {0.7, 0.42}, {0.7, 0.35}, {0.6, 0.36}}

// KeepRecents are the ElideOptions.KeepRecent values of the grid (3 is
// the default).
var KeepRecents = []int{3, 6, 10, 16, 24}

// fitPolicy returns the candidate of package fit's policy opts: through a
// Trimmer, as fit.New builds it (the budget is the replay's).
func fitPolicy(label, name string, opts ...history.Option) Candidate {
	return Candidate{Label: label, Policy: Policy{Name: name, Trimmer: true, TurnStart: history.UserWritten,
		Options: func(*Session) []history.Option { return opts }}}
}

// Candidates returns the candidate default policies of the front (issue
// 34): the baselines (exact and WithTask stateless trims), package fit's
// default and its two other points (fit.Cheaper, fit.KeepMore), the documented
// recipes (b: the Trimmer with the task preset and low-water 0.7, fit's
// placeholder; c: with the compact trigger; d: today's cheap policy, the
// trigger without the preset; w: the Trimmer with whole turns only), then
// the grid: the Trimmer with the task preset (as fit sets it: WithTask(-1),
// a runtime that names no goal) at every pair of Marks and every
// KeepRecents.
func Candidates() []Candidate {
	task := func(e history.ElideOptions, extra ...history.Option) func(*Session) []history.Option {
		return func(*Session) []history.Option {
			return append([]history.Option{history.WithTask(-1, e)}, extra...)
		}
	}
	tr := func(label, name string, opts func(*Session) []history.Option) Candidate {
		return Candidate{Label: label, Policy: Policy{Name: name, Options: opts, Trimmer: true, TurnStart: history.UserWritten}}
	}
	out := []Candidate{
		{Label: "exact", Policy: Policy{Name: "stateless, whole turns (exact trimming)", Options: func(*Session) []history.Option { return nil }}},
		{Label: "a", Policy: Policy{Name: "(a) stateless, WithTask", TurnStart: history.UserWritten, Options: task(history.ElideOptions{})}},
		{Label: "w", Policy: Policy{Name: "Trimmer, whole turns, low-water 0.7", Trimmer: true, Options: func(*Session) []history.Option {
			return []history.Option{history.WithLowWater(0.7)}
		}}},
		tr("b", "(b) Trimmer, WithTask, low-water 0.7", task(history.ElideOptions{}, history.WithLowWater(0.7))),
		tr("c", "(c) Trimmer, WithTask, trigger 0.6, low-water 0.36", task(history.ElideOptions{}, history.WithTrigger(0.6), history.WithLowWater(0.36))),
		tr("c1", "Trimmer, WithTask(-1, ElideOptions{KeepRecent: 1, MinTokens: 64}), trigger 0.6, low-water 0.36",
			task(history.ElideOptions{KeepRecent: 1, MinTokens: 64}, history.WithTrigger(0.6), history.WithLowWater(0.36))),
		fitPolicy("fit", "fit.New's default (fit.Policy): Trimmer, WithTask(-1, ElideOptions{KeepRecent: 6, Digest: 1600}), low-water 0.5", fit.Policy()...),
		fitPolicy("cheaper", "fit.Cheaper(): Trimmer, WithTask(-1, ElideOptions{KeepRecent: 1, Digest: 800}), trigger 0.65, low-water 0.32", fit.Cheaper()),
		fitPolicy("more", "fit.KeepMore(): Trimmer, WithTask(-1, ElideOptions{KeepRecent: 16, Digest: 800}), low-water 0.9", fit.KeepMore()),
		{Label: "d", Policy: Policy{Name: "(d) Trimmer, trigger 0.6, low-water 0.36, WithElision(KeepRecent 1, MinTokens 64), WithStepTrim", Trimmer: true, Options: func(*Session) []history.Option {
			return []history.Option{history.WithTrigger(0.6), history.WithLowWater(0.36),
				history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: 64}), history.WithStepTrim()}
		}}},
	}
	for _, m := range Marks {
		for _, k := range KeepRecents {
			label := fmt.Sprintf("t%g/%g k%d", m[0], m[1], k)
			name := fmt.Sprintf("Trimmer, WithTask(-1, ElideOptions{KeepRecent: %d}), trigger %g, low-water %g", k, m[0], m[1])
			var extra []history.Option
			switch {
			case m[0] < 1:
				extra = []history.Option{history.WithTrigger(m[0]), history.WithLowWater(m[1])}
			case m[1] < 1:
				extra = []history.Option{history.WithLowWater(m[1])}
				name = fmt.Sprintf("Trimmer, WithTask(-1, ElideOptions{KeepRecent: %d}), low-water %g", k, m[1])
			default:
				name = fmt.Sprintf("Trimmer, WithTask(-1, ElideOptions{KeepRecent: %d})", k)
			}
			out = append(out, tr(label, name, task(history.ElideOptions{KeepRecent: k}, extra...)))
		}
	}
	return out
}
