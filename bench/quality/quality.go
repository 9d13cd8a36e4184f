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
//
// # Per token
//
// A replay also counts every request of the session, needing trimming or
// not: the tokens it sends, the references it keeps, and what it bills
// under bench/cachesim's price model (a cached read at 0.1x, a cache write
// at 1.25x, prompts under 1,024 tokens uncached at 1x; cachesim.Meter),
// with its prefix rewrites. Every policy is then a point (billed input,
// recall) on one chart, at the same budgets and on the same requests.
package quality

import (
	"errors"
	"slices"
	"strconv"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/cachesim"
	"github.com/histrim/history/internal/refs"
)

// Ref is a reference (see the package doc and internal/refs).
type Ref = refs.Ref

// Common is the number of tool results above which a token is common to
// many results and makes no reference (see internal/refs).
const Common = refs.Common

// References returns the references of a session, ordered by T, then R.
func References(msgs []history.Message) []Ref { return refs.Of(msgs) }

// Session is one conversation prepared for replay.
type Session struct {
	Name     string
	Messages []history.Message
	Refs     []Ref
	// Peak is the largest request of the session (the history before its
	// last assistant message), by Counter.
	Peak int
	// Goal is the index of the opening request of the session's task:
	// the first user message (what a runtime passes to history.WithTask),
	// or -1 when there is none.
	Goal int
	// Counter counts the session for its budgets, its trims and its bill
	// (nil: history.Heuristic).
	Counter history.Counter
	// sizes[i] is the tokens of Messages[:i], by Counter.
	sizes []int
}

// NewSession prepares msgs for replay, counted by history.Heuristic.
func NewSession(name string, msgs []history.Message) Session {
	return NewCountedSession(name, msgs, nil)
}

// NewCountedSession prepares msgs for replay, counted by c (nil:
// history.Heuristic): the trims count with it too. bench/cachesim's
// Counter makes the replay of a long session fast.
func NewCountedSession(name string, msgs []history.Message, c history.Counter) Session {
	s := Session{Name: name, Messages: msgs, Refs: References(msgs), Goal: -1, Counter: c}
	if c == nil {
		c = history.Heuristic()
	}
	s.sizes = make([]int, len(msgs)+1)
	for i := range msgs {
		s.sizes[i+1] = s.sizes[i] + history.Estimate(msgs[i:i+1], c)
	}
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == history.RoleAssistant {
			s.Peak = s.sizes[i]
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
	// Trimmer replays the session through one history.Trimmer with the
	// options, fed every request as a runtime feeds it (its plan kept
	// between requests, a compact trigger acting below the budget);
	// otherwise each request that needs trimming is trimmed on its own by
	// TrimToRecentTurns, and the others are sent as they are.
	Trimmer bool
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

	// Every request of the session, needing trimming or not: All counts
	// them, AllRefs their references, AllKept those kept (none in a
	// request over the budget), AllSent their tokens.
	All, AllRefs, AllKept, AllSent int
	// The bill of every request (bench/cachesim's price model, prompts
	// counted by history.Heuristic): tokens read from the cache, written
	// to it and uncached, Billed their price-weighted sum in
	// uncached-token units, Rewrites the prefix rewrites.
	Read, Write, Uncached, Rewrites int
	Billed                          float64

	// Loss is where the references of the requests that need trimming
	// were lost.
	Loss Losses
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
	s.All += o.All
	s.AllRefs += o.AllRefs
	s.AllKept += o.AllKept
	s.AllSent += o.AllSent
	s.Read += o.Read
	s.Write += o.Write
	s.Uncached += o.Uncached
	s.Rewrites += o.Rewrites
	s.Billed += o.Billed
	s.Loss.Add(o.Loss)
}

// Recall returns Kept/Refs.
func (s Stats) Recall() float64 { return ratio(s.Kept, s.Refs) }

// RecallLenient returns KeptLenient/Refs.
func (s Stats) RecallLenient() float64 { return ratio(s.KeptLenient, s.Refs) }

// RecallTokens returns TokensKept/Tokens.
func (s Stats) RecallTokens() float64 { return ratio(s.TokensKept, s.Tokens) }

// RecallAll returns AllKept/AllRefs: recall over every request.
func (s Stats) RecallAll() float64 { return ratio(s.AllKept, s.AllRefs) }

// MeanSent returns the mean tokens sent per request that needs trimming.
func (s Stats) MeanSent() float64 { return ratio(s.Sent, s.Requests) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Replay replays s at budget under p: it trims every request of s that
// needs trimming (all of them with p.Trimmer), counts what each keeps of
// the references, and bills every request.
func Replay(s *Session, budget int, p Policy) (Stats, error) {
	var st Stats
	opts := p.Options(s)
	c := s.Counter
	if c != nil {
		opts = append(slices.Clip(opts), history.WithCounter(c))
	} else {
		c = history.Heuristic()
	}
	var tr *history.Trimmer
	if p.Trimmer {
		tr = history.NewTrimmer(opts...)
	}
	meter := cachesim.Meter{Counter: c}
	pins := p.Pins(s)
	rest := s.Refs
	for t := 1; t < len(s.Messages); t++ {
		if s.Messages[t].Role != history.RoleAssistant {
			continue
		}
		for len(rest) > 0 && rest[0].T < t {
			rest = rest[1:]
		}
		var mine []Ref
		mine, rest = refs.At(rest, t)
		hist := s.Messages[:t]
		size := s.sizes[t]
		need := size > budget
		var (
			res  history.Result
			err  error
			over bool
		)
		switch {
		case tr != nil:
			res, err = tr.Trim(hist, budget)
		case need:
			res, err = history.TrimToRecentTurns(hist, budget, opts...)
		default:
			res = history.Result{Messages: hist, TokensAfter: size} // sent as it is
		}
		if err != nil {
			var be *history.BudgetError
			if !errors.As(err, &be) {
				return st, err
			}
			over = true
		}
		b := meter.Add(res.Messages, res.TokensAfter, false)
		st.All++
		st.AllSent += res.TokensAfter
		st.Read += b.Read
		st.Write += b.Write
		st.Uncached += b.Uncached
		st.Billed += b.Billed
		if b.Rewrite {
			st.Rewrites++
		}
		kept, keptTokens := 0, 0
		switch {
		case over:
		case res.Kept == nil:
			kept = len(mine)
			for _, r := range mine {
				keptTokens += len(r.Tokens)
			}
		default:
			kept, keptTokens = refs.Kept(hist, &res, mine)
		}
		st.AllRefs += len(mine)
		st.AllKept += kept
		if !need {
			continue
		}
		st.Requests++
		st.Loss.Add(lose(hist, &res, mine, over, p.TurnStart))
		st.Sent += res.TokensAfter
		st.Budget += budget
		if over {
			st.Over++
			f, step := floor(hist, c, p.TurnStart, pins)
			if f > budget {
				st.Floor++
			}
			if step > budget {
				st.StepFloor++
			}
		}
		n := 0
		for _, r := range mine {
			n += len(r.Tokens)
		}
		st.Refs += len(mine)
		st.Tokens += n
		st.Kept += kept
		st.TokensKept += keptTokens
		st.KeptLenient += kept
		st.TokensKeptLenient += keptTokens
		if over {
			st.KeptLenient += len(mine)
			st.TokensKeptLenient += n
		}
	}
	return st, nil
}

// floor returns the tokens of what no trim that keeps the user's request
// can leave out of hist: the prefix, the pinned messages (pins, indices
// into hist) and the latest turn's opening block (the user's request and
// the messages the runtime sent with it, up to the agent's first step),
// under turnStart (nil: the default rule); and step, that floor with
// what the cut rung cannot shrink (see Stats.StepFloor).
func floor(hist []history.Message, c history.Counter, turnStart func(history.Message) bool, pins []int) (n, step int) {
	var opts []history.Option
	if turnStart != nil {
		opts = append(opts, history.WithTurnStart(turnStart))
	}
	turns := history.Turns(hist, opts...)
	lead := len(hist)
	if len(turns) > 0 {
		lead = turns[0].Start
	}
	n = history.Estimate(hist[:lead], c)
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
				if c.CountMessage(history.Message{Role: history.RoleAssistant, Content: cleared})-c.CountMessage(history.Message{Role: history.RoleAssistant}) < cost {
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
