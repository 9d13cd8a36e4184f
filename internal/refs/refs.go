// Package refs is the reference-recall measure of bench/quality, shared
// with cmd/histrim's replay: what a trimmed request keeps of what the agent
// goes on to use.
//
// A reference (see [Ref]) is a pair (T, R): the assistant message at T uses
// salient tokens (file paths, dotted, underscored or camelCase
// identifiers, ids and hashes, error codes) that it could only have got
// from the earlier tool result R. A request for the message at T keeps the
// reference when it still shows every one of its tokens inside R ([Kept]):
// R is sent, and no token is hidden behind a placeholder or cut away.
package refs

import (
	"slices"
	"strings"

	history "github.com/histrim/history"
)

// Common is the number of tool results above which a token is common to
// many results: a token seen in more than Common results before the
// message that uses it is not a reference (the model could have it from
// any of them, or from general knowledge of the project).
const Common = 4

// Ref is a reference: the assistant message at T uses salient tokens
// (Tokens, sorted) that it could only have got from the earlier tool
// result at R, the most recent place it saw each of them.
//
// A token counts when it appears in no user or system message before T,
// was first seen in a tool result (not first written by the model), is not
// in the arguments of the call R answers (an echo of what the model asked
// for), and appears in at most Common tool results before T.
type Ref struct {
	T, R   int
	Tokens []string
}

// Text returns the text of m that a model reads: its content and its
// text parts.
func Text(m *history.Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Type == history.PartText || p.Type == history.PartReasoning {
			b.WriteByte('\n')
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// Of returns the references of a session, ordered by T, then R.
func Of(msgs []history.Message) []Ref {
	first := map[string]history.Role{} // who first wrote a token
	userSys := tokenSet{}              // tokens of user and system messages
	results := map[string][]int{}      // tool results holding a token, ascending
	var refs []Ref
	var calls map[string]string // id -> argument values, of the nearest assistant
	argsOf := make(map[int]tokenSet)
	for t := range msgs {
		m := &msgs[t]
		var set tokenSet
		switch m.Role {
		case history.RoleAssistant:
			set = tokensOf(Text(m), nil)
			calls = map[string]string{}
			for _, c := range m.ToolCalls {
				v := argValues(c.Arguments)
				calls[c.ID] = v
				tokensOf(v, set)
			}
			refs = append(refs, refsAt(t, set, first, userSys, results, argsOf)...)
		case history.RoleTool:
			set = tokensOf(Text(m), nil)
			argsOf[t] = tokensOf(calls[m.ToolCallID], nil)
			for tok := range set {
				results[tok] = append(results[tok], t)
			}
		default:
			set = tokensOf(Text(m), nil)
			for tok := range set {
				userSys.add(tok)
			}
		}
		for tok := range set {
			if _, ok := first[tok]; !ok {
				first[tok] = m.Role
			}
		}
	}
	return refs
}

// refsAt returns the references of the assistant message at t, whose
// tokens are set, from the state of the session before it.
func refsAt(t int, set tokenSet, first map[string]history.Role, userSys tokenSet, results map[string][]int, argsOf map[int]tokenSet) []Ref {
	byR := map[int][]string{}
	for tok := range set {
		rs := results[tok]
		if len(rs) == 0 || len(rs) > Common || userSys.has(tok) || first[tok] != history.RoleTool {
			continue
		}
		r := rs[len(rs)-1]
		if argsOf[r].has(tok) {
			continue
		}
		byR[r] = append(byR[r], tok)
	}
	out := make([]Ref, 0, len(byR))
	for r, toks := range byR {
		slices.Sort(toks)
		out = append(out, Ref{T: t, R: r, Tokens: dedupeParts(toks)})
	}
	slices.SortFunc(out, func(a, b Ref) int { return a.R - b.R })
	return out
}

// dedupeParts drops, from sorted tokens, those that are part of a longer
// token of the same reference ("plan.go" when "/repo/plan.go" is there):
// one use, counted once.
func dedupeParts(toks []string) []string {
	out := toks[:0]
	for i, t := range toks {
		part := false
		for j, u := range toks {
			if j != i && len(u) > len(t) && Visible(u, t) {
				part = true
				break
			}
		}
		if !part {
			out = append(out, t)
		}
	}
	return out
}
