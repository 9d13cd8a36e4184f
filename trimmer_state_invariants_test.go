package history

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// stateInvariants is what every trim by a Trimmer must keep, whatever
// state it was restored from: checked independently of the planner and of
// the state's own checks, from the transcript and the Trimmer's options.
type stateInvariants struct {
	pins   []int              // WithPin's indices and WithTask's goal
	rule   func(Message) bool // the turn rule (nil: the default)
	crumbs []Message          // the notices the options insert (none under WithoutBreadcrumb)
	// summary reports whether text is a summary this Trimmer's Summarizer
	// wrote of the transcript being trimmed (nil: no Summarizer).
	summary func(text string) bool
	// elided reports whether text is a placeholder this Trimmer wrote for
	// transcript message k (nil: any placeholder of a tool result).
	elided func(k int, text string) bool
}

// invariantsFor returns the invariants of a Trimmer built with opts.
func invariantsFor(opts []Option, summary func(string) bool) *stateInvariants {
	o := newOptions(opts)
	defer o.release()
	inv := &stateInvariants{pins: slices.Clone(o.pins), rule: o.turnStart, summary: summary}
	if !o.noBreadcrumb {
		inv.crumbs = []Message{o.breadcrumb.Clone(), o.stepBreadcrumb().Clone()}
	}
	return inv
}

// textViolation is a violation of the text-origin invariant alone in a
// message the Trimmer writes itself (a tool result's placeholder, the
// summary): text a state carries, which a forged state with a valid
// checksum can change (see docs/replicas.md).
type textViolation struct{ msg string }

func (v *textViolation) Error() string { return v.msg }

// check returns the first invariant that the trim of msgs under budget,
// res and err, breaks, or nil:
//
//   - the error is nil or a *BudgetError, and without an error the
//     request is within budget;
//   - a non-empty transcript gives a non-empty request;
//   - the leading block's messages (the system prompt) come first, in
//     order, unchanged (its breadcrumbs may be replaced);
//   - every pin in the transcript is sent unchanged;
//   - the latest real turn start (the user's latest request) is sent,
//     unchanged;
//   - every transcript message is sent at most once, in transcript order
//     but for lifted pins and hoisted summaries;
//   - no tool pair is broken (a second sweep finds nothing);
//   - the output is valid UTF-8 when the transcript is;
//   - every message is a transcript message (a tool result possibly
//     elided, a call's arguments possibly cleared, calls possibly
//     stripped by the sweep), one of the options' notices, or a summary
//     the Summarizer wrote of this transcript.
func (inv *stateInvariants) check(msgs []Message, res Result, err error, budget int) error {
	if err != nil && !isTooLarge(err) {
		return errors.New("error " + err.Error())
	}
	if err == nil && res.TokensAfter > budget {
		return errors.New("over budget without an error: " + strconv.Itoa(res.TokensAfter) + " > " + strconv.Itoa(budget))
	}
	if len(msgs) > 0 && len(res.Messages) == 0 {
		return errors.New("an empty request")
	}
	if len(res.Kept) != len(res.Messages) {
		return errors.New("Kept does not parallel Messages")
	}
	sent := make(map[int]int, len(res.Kept)) // transcript index -> position
	for j, k := range res.Kept {
		if k >= len(msgs) || k < -1 {
			return errors.New("Kept names " + strconv.Itoa(k))
		}
		if k < 0 {
			continue
		}
		if _, dup := sent[k]; dup {
			return errors.New("message " + strconv.Itoa(k) + " sent twice")
		}
		sent[k] = j
	}
	lead := leadEnd(msgs)
	p := 0
	for i := range lead {
		if p < len(res.Kept) && res.Kept[p] == i {
			if !equal(&res.Messages[p], &msgs[i]) {
				return errors.New("leading message " + strconv.Itoa(i) + " changed")
			}
			p++
			continue
		}
		if msgs[i].Kind != KindBreadcrumb {
			return errors.New("leading message " + strconv.Itoa(i) + " (the system prompt) not sent first")
		}
	}
	unchanged := func(i int, what string) error {
		j, ok := sent[i]
		if !ok {
			return errors.New(what + " " + strconv.Itoa(i) + " not sent")
		}
		if !equal(&res.Messages[j], &msgs[i]) {
			return errors.New(what + " " + strconv.Itoa(i) + " changed")
		}
		return nil
	}
	for _, pin := range inv.pins {
		if pin >= 0 && pin < len(msgs) {
			if err := unchanged(pin, "pinned message"); err != nil {
				return err
			}
		}
	}
	for i := len(msgs) - 1; i >= lead; i-- {
		if isTurnStart(msgs[i], inv.rule) {
			if err := unchanged(i, "the latest request"); err != nil {
				return err
			}
			break
		}
	}
	last := -1
	for _, k := range res.Kept {
		if k < 0 || slices.Contains(inv.pins, k) || msgs[k].Kind == KindSummary {
			continue
		}
		if k < last {
			return errors.New("message " + strconv.Itoa(k) + " sent after " + strconv.Itoa(last))
		}
		last = k
	}
	if _, rep := SweepOrphans(res.Messages); rep != (SweepReport{}) {
		return errors.New("a broken tool pair")
	}
	if validUTF8(msgs) {
		for j := range res.Messages {
			if m := res.Messages[j : j+1]; !validUTF8(m) {
				return errors.New("invalid UTF-8 in the request: message " + strconv.Itoa(j) + " (" + strconv.Itoa(res.Kept[j]) + ", " + string(m[0].Role) + " " + string(m[0].Kind) + ")")
			}
		}
	}
	for j, k := range res.Kept {
		if err := inv.origin(msgs, &res.Messages[j], k); err != nil {
			return err
		}
	}
	for j := 1; j < len(res.Messages); j++ {
		if res.Kept[j] < 0 && res.Kept[j-1] < 0 && res.Messages[j].Kind == KindBreadcrumb && res.Messages[j-1].Kind == KindBreadcrumb {
			return errors.New("stacked breadcrumbs")
		}
	}
	return nil
}

// origin returns why m, sent for transcript index k (-1: a notice), is not
// what a trim may send.
func (inv *stateInvariants) origin(msgs []Message, m *Message, k int) error {
	if k < 0 {
		for i := range inv.crumbs {
			if equal(m, &inv.crumbs[i]) {
				return nil
			}
		}
		if m.Kind == KindSummary && inv.summary != nil {
			if inv.summary(m.Content) {
				return nil
			}
			return &textViolation{"a summary this Trimmer did not write of this transcript: " + clipForLog(m.Content)}
		}
		return errors.New("a notice the options do not write: " + string(m.Role) + " " + clipForLog(m.Content))
	}
	o := &msgs[k]
	if m.Kind == KindElided && o.Kind != KindElided {
		if o.Role != RoleTool || m.Role != RoleTool || m.ToolCallID != o.ToolCallID || m.Name != o.Name || len(m.ToolCalls) > 0 {
			return errors.New("message " + strconv.Itoa(k) + " elided but not a tool result")
		}
		if inv.elided != nil && !inv.elided(k, m.Content) {
			return &textViolation{"a placeholder this Trimmer did not write for " + strconv.Itoa(k) + ": " + clipForLog(m.Content)}
		}
		return nil
	}
	if m.Role != o.Role || m.Content != o.Content || m.ToolCallID != o.ToolCallID || m.Name != o.Name || m.Kind != o.Kind || !slices.Equal(m.Parts, o.Parts) {
		return errors.New("message " + strconv.Itoa(k) + " changed")
	}
	for _, c := range m.ToolCalls {
		j := slices.IndexFunc(o.ToolCalls, func(oc ToolCall) bool { return oc.ID == c.ID })
		if j < 0 || o.ToolCalls[j].Name != c.Name || (o.ToolCalls[j].Arguments != c.Arguments && !isClearedArguments(c.Arguments)) {
			return errors.New("message " + strconv.Itoa(k) + " has a call the transcript does not")
		}
	}
	return nil
}

// validUTF8 reports whether every text of msgs is valid UTF-8.
func validUTF8(msgs []Message) bool {
	for i := range msgs {
		m := &msgs[i]
		if !utf8.ValidString(m.Content) {
			return false
		}
		for _, p := range m.Parts {
			if !utf8.ValidString(p.Text) {
				return false
			}
		}
		for _, c := range m.ToolCalls {
			if !utf8.ValidString(c.Arguments) {
				return false
			}
		}
	}
	return true
}

func clipForLog(s string) string {
	if len(s) > 80 {
		return strings.ToValidUTF8(s[:80], "?") + "..."
	}
	return s
}
