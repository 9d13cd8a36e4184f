// This file owns tool-result elision: which results may become placeholders
// (elisionCandidates), the placeholder itself, the cleared arguments of the
// calls they answer (ClearArguments), archiving originals, and the
// stand-alone ElideToolResults. The trim's planner decides how many to elide.

package history

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// ElideResult is the outcome of [ElideToolResults].
type ElideResult struct {
	// Messages is the new history: the same messages in the same order,
	// elided results replaced by copies with the placeholder as Content, no
	// Parts, and Kind set to [KindElided]. When nothing was elided (or
	// Archive failed) it is the input slice, clipped to its length;
	// otherwise a new slice whose other messages are shallow copies, as in a
	// [Result].
	Messages []Message
	// Elided is the number of results replaced.
	Elided int
	// ClearedCalls is the number of tool calls whose arguments were
	// cleared ([ElideOptions.ClearArguments]); their assistant messages
	// are copies with a new ToolCalls slice.
	ClearedCalls int
	// TokensSaved is the token count removed by the replacements, cleared
	// arguments included: the count of the input less that of Messages.
	TokensSaved int
}

// ElideToolResults replaces the content of old, large tool results with a
// short placeholder. It never removes or reorders a message and never
// touches ToolCallID, Name or roles; the assistant's calls keep their IDs
// and names, and their arguments change only under
// [ElideOptions.ClearArguments] (never in a message holding reasoning), so
// pairing and signed reasoning stay intact by construction. It is
// idempotent: elided results carry [KindElided] and are skipped, and cleared
// arguments are recognised. The input is validated like
// [TrimToRecentTurns]' (a *[MessageError] with an empty [ElideResult]; a
// negative ClearArguments is an *[OptionError]) and never modified.
//
// Stale tool results are usually re-derivable (a file can be read again, a
// command re-run), which makes them the cheapest tokens to give up. Under
// TrimToRecentTurns, [WithElision] applies the same rule only as far as
// needed.
func ElideToolResults(msgs []Message, opts ElideOptions) (ElideResult, error) {
	if err := validate(msgs); err != nil {
		return ElideResult{}, err
	}
	if err := opts.check("ElideOptions"); err != nil {
		return ElideResult{}, err
	}
	c := opts.Counter
	if c == nil {
		c = heuristic{}
	}
	counts := make([]int, len(msgs))
	for i := range msgs {
		if msgs[i].Role == RoleTool {
			counts[i] = clampCount(c.CountMessage(msgs[i]))
		}
	}
	policy := opts
	policy.Counter = nil // counts already are c's
	cands := elisionCandidates(msgs, counts, &policy, c)
	if len(cands) == 0 {
		return ElideResult{Messages: msgs[:len(msgs):len(msgs)]}, nil
	}
	mt := &mentions{msgs: msgs, from: cands[0].idx}
	for i := range cands {
		cands[i].finish(msgs, c, mt)
	}
	if err := archive(msgs, cands, &opts); err != nil {
		return ElideResult{Messages: msgs[:len(msgs):len(msgs)]}, err
	}
	out := slices.Clone(msgs)
	res := ElideResult{Messages: out}
	for _, e := range cands {
		if e.argsOnly {
			continue
		}
		out[e.idx] = elided(msgs[e.idx], e.text)
		res.Elided++
		res.TokensSaved += e.saved - e.argSaved
	}
	// Each assistant message whose calls are cleared is copied once and
	// counted before and after, so the saving is exact.
	var owners []clearedOwner
	for i := range cands {
		var ok bool
		if owners, ok = clearCall(owners, msgs, &cands[i]); ok {
			res.ClearedCalls++
		}
	}
	for _, g := range owners {
		out[g.idx] = g.msg
		res.TokensSaved += clampCount(c.CountMessage(msgs[g.idx])) - clampCount(c.CountMessage(g.msg))
	}
	return res, nil
}

// elideCand is a tool result that may be elided: its index, the
// placeholder text, and the tokens the replacement saves; with
// ClearArguments, also the call whose arguments eliding it clears.
type elideCand struct {
	idx   int
	saved int // the result's saving, plus argSaved (a lower bound until the digest is built)
	text  string
	// count is the result's count and bare that of its placeholder alone,
	// by the budget's Counter; digest is the size of the digest it keeps
	// (0: none), built into text by finish (built).
	count, bare, digest int
	built, cut          bool   // cut: cutTo made it a cut result
	head                string // the placeholder, before a digest
	// from is the index of the assistant message whose call (the
	// fromCall-th of its ToolCalls) the result answers, -1 when unknown;
	// name is the tool's name.
	from, fromCall int
	name           string
	// owner is the index of the assistant message whose call (the call-th
	// of its ToolCalls) the result answers and whose arguments eliding it
	// clears to args; -1 when none is cleared. argSaved estimates what
	// clearing saves: the arguments' cost as text less the placeholder's,
	// with the budget's Counter (exact for Heuristic and the tiktoken
	// counters, which count each call's arguments on their own; a trim
	// recounts the changed message once anyway).
	owner    int
	call     int
	args     string
	argSaved int
	// argsOnly: only the call's arguments are cleared; the result, too
	// short to elide, stays as it is (a large write_file call answered
	// "wrote 40 lines").
	argsOnly bool
}

// elisionCandidates returns, oldest first, the tool results of msgs that the
// options allow to elide and whose replacement saves tokens. counts holds
// c's count of every tool message; opts.Counter, when set, measures results
// for the elision rules instead. It is linear in the number of messages,
// tool calls and parts.
func elisionCandidates(msgs []Message, counts []int, opts *ElideOptions, c Counter) []elideCand {
	protect := protectStart(msgs, opts)
	var cands []elideCand
	var calls callIndex // calls of the nearest preceding assistant message
	owner := -1         // that message, while results may answer it, and when its calls may be cleared
	from := -1          // that message, while results may answer it
	var ac argCounter
	for i := 0; i < protect; i++ {
		m := &msgs[i]
		switch {
		case m.Role == RoleAssistant:
			calls.reset(m.ToolCalls)
			owner, from = -1, i
			if opts.ClearArguments > 0 && len(m.ToolCalls) > 0 && !hasReasoning(*m) {
				owner = i
			}
			continue
		case m.Role != RoleTool && m.Kind != KindNudge:
			owner, from = -1, -1 // a result after this answers no call (see SweepOrphans)
			continue
		case m.Role != RoleTool || m.Kind == KindElided:
			continue
		}
		if cand, ok := evalCandidate(m, i, counts[i], from, &calls, opts, c); ok {
			if owner >= 0 {
				ac.clearing(&cand, msgs, owner, &calls, m.ToolCallID, opts, c, math.MaxInt)
			}
			cands = append(cands, cand)
		} else if cand, ok := ac.argsOnly(m, i, msgs, owner, &calls, opts, c, math.MaxInt); ok {
			cands = append(cands, cand)
		}
	}
	return cands
}

// protectStart returns the index of the oldest of the KeepRecent newest tool
// results of msgs, which are never elided (len(msgs) when none is
// protected). It scans back from the end only as far as it must.
func protectStart(msgs []Message, opts *ElideOptions) int {
	keep := opts.KeepRecent
	if keep == 0 {
		keep = DefaultKeepRecent
	}
	protect := len(msgs)
	for i := len(msgs) - 1; i >= 0 && keep > 0; i-- {
		if msgs[i].Role == RoleTool {
			protect = i
			keep--
		}
	}
	return protect
}

// evalCandidate decides whether tool result m, at index i, before the
// protected tail and not elided yet, may be elided: count is c's count of
// it, calls the calls of the assistant message it answers. It returns the
// candidate, or false when the options keep m or the placeholder saves
// nothing.
func evalCandidate(m *Message, i, count, from int, calls *callIndex, opts *ElideOptions, c Counter) (elideCand, bool) {
	minTok := opts.MinTokens
	if minTok == 0 {
		minTok = DefaultMinTokens
	}
	size := count
	if opts.Counter != nil {
		size = clampCount(opts.Counter.CountMessage(*m))
	}
	if size < minTok {
		return elideCand{}, false
	}
	name := toolName(m, calls)
	tp := opts.tool(name)
	if tp.Keep || slices.Contains(opts.ExcludeTools, name) || (opts.KeepErrors && looksLikeError(m.Content)) {
		return elideCand{}, false
	}
	var text string
	switch {
	case opts.Placeholder != nil:
		text = opts.Placeholder(*m, size)
	case opts.Store != nil:
		text = recallPlaceholder(ElisionHandle(*m), name, size)
	default:
		text = defaultPlaceholder(name, size)
	}
	bare := clampCount(c.CountMessage(elided(*m, text)))
	saved := count - bare
	if saved <= 0 {
		return elideCand{}, false
	}
	cand := elideCand{idx: i, text: text, head: text, owner: -1, count: count, bare: bare, from: -1, fromCall: -1, name: name}
	if from >= 0 {
		if j := calls.find(m.ToolCallID); j >= 0 {
			cand.from, cand.fromCall = from, j
		}
	}
	// A digest costs at most half of what the placeholder saves. Until it
	// is built (only for the results a trim elides), the saving counted
	// is what remains with the digest at its largest.
	cand.digest = min(opts.digestSize(tp), saved/2)
	cand.saved = saved - cand.digest
	cand.built = cand.digest == 0
	return cand, true
}

// finish builds the digest of cand, a candidate of msgs (the view it was
// found in) with the budget's Counter c, when it keeps one, and sets its
// exact saving. mt indexes what later messages mention (nil: nothing).
func (cand *elideCand) finish(msgs []Message, c Counter, mt *mentions) {
	if cand.built || cand.argsOnly {
		return
	}
	cand.built = true
	m := &msgs[cand.idx]
	target := ""
	if cand.from >= 0 {
		target = callTarget(msgs[cand.from].ToolCalls[cand.fromCall].Arguments)
	}
	head := cand.head
	measure := func(d string) int { return clampCount(c.CountMessage(elided(*m, head+"\n"+d))) - cand.bare }
	if d := digest(resultText(m), target, cand.digest, digestHeadTail, measure, mt.after(cand.idx)); d != "" {
		cand.text = head + "\n" + d
	}
	cand.saved = cand.count - clampCount(c.CountMessage(elided(*m, cand.text))) + cand.argSaved
}

// cutTo turns cand, elided in a plan at tokens, into a cut result whose
// head and tail digest takes room more tokens than its elided form, and
// returns the plan's tokens (at most tokens+room). It leaves cand as it
// is when the cut would not show more. mt: see finish.
func (cand *elideCand) cutTo(msgs []Message, c Counter, room, tokens int, store bool, mt *mentions) int {
	if cand.argsOnly {
		return tokens
	}
	m := &msgs[cand.idx]
	cost := cand.count + cand.argSaved - cand.saved // of the elided form, as counted
	head := cutMarker(*m, cand.name, cand.count, store)
	bare := clampCount(c.CountMessage(elided(*m, head)))
	size := cost + room - bare
	if size <= 0 {
		return tokens
	}
	target := ""
	if cand.from >= 0 {
		target = callTarget(msgs[cand.from].ToolCalls[cand.fromCall].Arguments)
	}
	measure := func(d string) int { return clampCount(c.CountMessage(elided(*m, head+"\n"+d))) - bare }
	d := digest(resultText(m), target, size, cutHeadTail, measure, mt.after(cand.idx))
	if d == "" {
		return tokens
	}
	text := head + "\n" + d
	saved := cand.count - clampCount(c.CountMessage(elided(*m, text))) + cand.argSaved
	tokens += cand.saved - saved
	cand.text, cand.saved, cand.cut = text, saved, true
	return tokens
}

// strip removes the digest finish built, and returns what that saves.
func (cand *elideCand) strip() int {
	if !cand.built || cand.cut || cand.text == cand.head {
		return 0
	}
	cand.text = cand.head
	was := cand.saved
	cand.saved = cand.count - cand.bare + cand.argSaved
	return cand.saved - was
}

// Cleared arguments ([ElideOptions.ClearArguments]) read
// clearedArgsPrefix + N + clearedArgsSuffix: a JSON object, so that
// adapters whose SDKs take arguments as an object can still send it.
const (
	clearedArgsPrefix = `{"elided":"[arguments elided: `
	clearedArgsSuffix = ` tokens]"}`
)

// archive hands the originals of cands to opts.Archive, oldest first.
func archive(msgs []Message, cands []elideCand, opts *ElideOptions) error {
	for _, e := range cands {
		if e.argsOnly {
			continue // the result is sent as it is
		}
		if err := archiveOne(msgs[e.idx], opts.Archive, opts.Store); err != nil {
			return &archiveError{index: e.idx, err: err}
		}
	}
	return nil
}

// archiveOne hands the original m to Archive and to Store, when set.
func archiveOne(m Message, archive func(Message) error, store Store) error {
	if archive != nil {
		if err := archive(m); err != nil {
			return err
		}
	}
	if store != nil {
		return store.Put(ElisionHandle(m), m)
	}
	return nil
}

type archiveError struct {
	index int
	err   error
}

func (e *archiveError) Error() string {
	return "history: archiving tool result at index " + strconv.Itoa(e.index) + " failed, nothing elided: " + e.err.Error()
}

func (e *archiveError) Unwrap() error { return e.err }

// elided returns the placeholder copy of tool result m.
func elided(m Message, text string) Message {
	m.Content = text
	m.Parts = nil
	m.Kind = KindElided
	return m
}

// toolName returns the name of the tool that produced result m: its Name, or
// the Name of the call it answers, or "tool".
func toolName(m *Message, calls *callIndex) string {
	if m.Name != "" {
		return m.Name
	}
	if j := calls.find(m.ToolCallID); j >= 0 {
		return calls.calls[j].Name
	}
	return "tool"
}

func defaultPlaceholder(name string, tokens int) string {
	return "[elided tool result: " + name + ", " + strconv.Itoa(tokens) + " tokens; re-run the tool if needed]"
}

// looksLikeError reports whether a tool result's first line reads as an
// error report.
func looksLikeError(s string) bool {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	s = strings.ToLower(s)
	for _, w := range [...]string{"error", "exception", "traceback", "panic", "fail", "fatal", "denied", "not found"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}
