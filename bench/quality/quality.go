// Package quality measures what a trimming policy keeps of what the agent
// goes on to use: reference recall over the shared corpus, replayed request
// by request as a runtime would send it.
//
// # The measure
//
// The request for the assistant message at t is the history before t,
// trimmed. A reference (see [Ref]) is a pair (t, R): the assistant message
// at t uses salient tokens (file paths, dotted, underscored or camelCase
// identifiers, ids and hashes, error codes) that it could only have got
// from the earlier tool result R. A reference is kept when the trimmed
// request still shows every one of its tokens inside R: R is sent, and no
// token is hidden behind a placeholder or cut away. Recall is the number of
// references kept over the number of references; recall by tokens counts
// each token of each reference instead. Both count only the requests that
// need trimming (the history before t is over the budget), and count
// nothing as kept in a request sent over the budget; Lenient counts the
// references of those requests as kept.
package quality

import (
	"errors"
	"slices"
	"strconv"

	history "github.com/histrim/history"
)

// Session is one conversation prepared for replay.
type Session struct {
	Name     string
	Messages []history.Message
	Refs     []Ref
	// Peak is the largest request of the session (the history before its
	// last assistant message), by history.Heuristic.
	Peak int
	// Goal is the index of the opening request of the session's task:
	// the first user message (what a runtime passes to history.WithTask),
	// or -1 when there is none.
	Goal int
}

// NewSession prepares msgs for replay.
func NewSession(name string, msgs []history.Message) Session {
	s := Session{Name: name, Messages: msgs, Refs: References(msgs), Goal: -1}
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == history.RoleAssistant {
			s.Peak = history.Estimate(msgs[:i], nil)
			break
		}
	}
	for i, m := range msgs {
		if m.Role == history.RoleUser && history.UserWritten(m) {
			s.Goal = i
			break
		}
	}
	return s
}

// Policy is a trimming policy: the options of every request of a
// session.
type Policy struct {
	Name    string
	Options func(s *Session) []history.Option
	// TurnStart is the turn rule the options set (nil: the default), and
	// Goal whether they pin the session's goal, for the floor.
	TurnStart func(history.Message) bool
	Goal      bool
}

// Stats are the totals of a replay.
type Stats struct {
	// Requests counts the requests that need trimming; Over those sent
	// over the budget (a *history.BudgetError).
	Requests, Over int
	// Refs counts the references of the requests that need trimming;
	// Kept those kept, and KeptLenient those kept when every reference of
	// a request over budget counts as kept.
	Refs, Kept, KeptLenient int
	// Tokens, TokensKept, TokensKeptLenient: the same, by token.
	Tokens, TokensKept, TokensKeptLenient int
	// Sent is the sum of the requests' tokens (TokensAfter); Budget the
	// sum of their budgets.
	Sent, Budget int
	// Floor counts the requests over budget whose prefix, pinned
	// messages and opening request (the latest turn's opening block, as
	// the policy's turn rule reads it) alone exceed it; StepFloor those
	// whose floor together with what the cut rung cannot shrink in the
	// newest step (its assistant text and user-role messages, its calls'
	// arguments cleared, its results at their cut markers) and the
	// breadcrumbs exceeds it.
	Floor, StepFloor int
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Requests += o.Requests
	s.Over += o.Over
	s.Refs += o.Refs
	s.Kept += o.Kept
	s.KeptLenient += o.KeptLenient
	s.Tokens += o.Tokens
	s.TokensKept += o.TokensKept
	s.TokensKeptLenient += o.TokensKeptLenient
	s.Sent += o.Sent
	s.Budget += o.Budget
	s.Floor += o.Floor
	s.StepFloor += o.StepFloor
}

// Recall returns Kept/Refs.
func (s Stats) Recall() float64 { return ratio(s.Kept, s.Refs) }

// RecallLenient returns KeptLenient/Refs.
func (s Stats) RecallLenient() float64 { return ratio(s.KeptLenient, s.Refs) }

// RecallTokens returns TokensKept/Tokens.
func (s Stats) RecallTokens() float64 { return ratio(s.TokensKept, s.Tokens) }

// MeanSent returns the mean tokens sent per request that needs trimming.
func (s Stats) MeanSent() float64 { return ratio(s.Sent, s.Requests) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Replay trims every request of s that needs trimming at budget with
// opts, and counts what it keeps. turnStart is the policy's turn rule
// (nil: the default) and pins the messages it pins, for the floor.
func Replay(s *Session, budget int, opts []history.Option, turnStart func(history.Message) bool, pins []int) (Stats, error) {
	var st Stats
	refs := s.Refs
	for t := 1; t < len(s.Messages); t++ {
		if s.Messages[t].Role != history.RoleAssistant {
			continue
		}
		var mine []Ref
		for len(refs) > 0 && refs[0].T < t {
			refs = refs[1:]
		}
		for len(refs) > 0 && refs[0].T == t {
			mine = append(mine, refs[0])
			refs = refs[1:]
		}
		hist := s.Messages[:t]
		if history.Estimate(hist, nil) <= budget {
			continue
		}
		res, err := history.TrimToRecentTurns(hist, budget, opts...)
		over := false
		if err != nil {
			var be *history.BudgetError
			if !errors.As(err, &be) {
				return st, err
			}
			over = true
		}
		st.Requests++
		st.Sent += res.TokensAfter
		st.Budget += budget
		if over {
			st.Over++
			f, step := floor(hist, turnStart, pins)
			if f > budget {
				st.Floor++
			}
			if step > budget {
				st.StepFloor++
			}
		}
		at := make(map[int]int, len(res.Kept))
		for j, k := range res.Kept {
			if k >= 0 {
				at[k] = j
			}
		}
		for _, r := range mine {
			st.Refs++
			st.KeptLenient++
			st.Tokens += len(r.Tokens)
			st.TokensKeptLenient += len(r.Tokens)
			if over {
				continue
			}
			st.KeptLenient--
			st.TokensKeptLenient -= len(r.Tokens)
			j, ok := at[r.R]
			n := 0
			if ok {
				n = shown(&res.Messages[j], &s.Messages[r.R], r.Tokens)
			}
			st.TokensKept += n
			st.TokensKeptLenient += n
			if n == len(r.Tokens) {
				st.Kept++
				st.KeptLenient++
			}
		}
	}
	return st, nil
}

// shown returns how many of toks sent, the message sent for orig, shows.
func shown(sent, orig *history.Message, toks []string) int {
	if sent.Content == orig.Content && len(sent.Parts) == len(orig.Parts) {
		return len(toks) // sent as it is
	}
	s := text(sent)
	n := 0
	for _, t := range toks {
		if visible(s, t) {
			n++
		}
	}
	return n
}

// floor returns the tokens of what no trim that keeps the user's request
// can leave out of hist: the prefix, the pinned messages (pins, indices
// into hist) and the latest turn's opening block (the user's request and
// the messages the runtime sent with it, up to the agent's first step),
// under turnStart (nil: the default rule); and step, that floor with
// what the cut rung cannot shrink (see Stats.StepFloor).
func floor(hist []history.Message, turnStart func(history.Message) bool, pins []int) (n, step int) {
	c := history.Heuristic()
	var opts []history.Option
	if turnStart != nil {
		opts = append(opts, history.WithTurnStart(turnStart))
	}
	turns := history.Turns(hist, opts...)
	lead := len(hist)
	if len(turns) > 0 {
		lead = turns[0].Start
	}
	n = history.Estimate(hist[:lead], nil)
	if len(turns) == 0 {
		return n, n
	}
	last := turns[len(turns)-1]
	open := last.Start
	for ; open < last.End && hist[open].Role != history.RoleAssistant; open++ {
		n += c.CountMessage(hist[open])
	}
	for _, i := range pins {
		if i >= 0 && i < last.Start {
			n += c.CountMessage(hist[i])
		}
	}
	step = n
	if len(turns) > 1 {
		step += c.CountMessage(history.Breadcrumb())
	}
	newest, steps := -1, 0
	for i := open; i < last.End; i++ {
		if hist[i].Role == history.RoleAssistant {
			newest, steps = i, steps+1
		}
	}
	if steps > 1 {
		step += c.CountMessage(history.Message{Role: history.RoleUser, Content: history.StepBreadcrumbText, Kind: history.KindBreadcrumb})
	}
	for i := max(newest, 0); newest >= 0 && i < last.End; i++ {
		m := hist[i]
		switch m.Role {
		case history.RoleTool:
			marker := m
			marker.Content, marker.Parts = "[cut tool result: "+callName(hist, i)+", "+strconv.Itoa(c.CountMessage(m))+
				" tokens cut to fit the context window; head, tail and key lines below; re-run the tool for the rest]", nil
			step += min(c.CountMessage(m), c.CountMessage(marker))
		case history.RoleAssistant:
			m.ToolCalls = slices.Clone(m.ToolCalls)
			for k := range m.ToolCalls {
				cost := c.CountMessage(history.Message{Role: history.RoleAssistant, Content: m.ToolCalls[k].Arguments}) - c.CountMessage(history.Message{Role: history.RoleAssistant})
				cleared := `{"elided":"[arguments elided: ` + strconv.Itoa(cost) + ` tokens]"}`
				if history.EstimateText(cleared) < cost {
					m.ToolCalls[k].Arguments = cleared
				}
			}
			step += c.CountMessage(m)
		default:
			step += c.CountMessage(m)
		}
	}
	return n, step
}

// callName returns the name of the call tool result msgs[r] answers.
func callName(msgs []history.Message, r int) string {
	for i := r - 1; i >= 0; i-- {
		if msgs[i].Role == history.RoleAssistant {
			for _, c := range msgs[i].ToolCalls {
				if c.ID == msgs[r].ToolCallID {
					return c.Name
				}
			}
			break
		}
	}
	return "tool"
}

// Pins returns the messages of s that p pins.
func (p Policy) Pins(s *Session) []int {
	if p.Goal && s.Goal >= 0 {
		return []int{s.Goal}
	}
	return nil
}
