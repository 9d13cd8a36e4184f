package anthropicmsg

import (
	"errors"
	"slices"
	"strconv"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/notice"
	"github.com/histrim/history/internal/regroup"
)

// read is one native message as the conversion reads it: its role and
// what the rules read of each of its blocks. Nothing writes to infos once
// read (a Memo may give the same slice to every request).
type read[B any] struct {
	role  string
	infos []Info
}

// readAll reads every message of msgs, each through s.Memo when it is set.
func (s *SDK[R, M, B]) readAll(msgs []M) ([]read[B], error) {
	out := make([]read[B], len(msgs))
	readInfos := s.readInfos // one method value, not one per message
	for i := range msgs {
		var role string
		var infos []Info
		var err error
		if s.Memo != nil {
			role, infos, err = s.Memo(&msgs[i], readInfos)
		} else {
			role, infos, err = s.readInfos(&msgs[i])
		}
		if err != nil {
			return nil, s.Invalid(i, err.Error())
		}
		out[i] = read[B]{role, infos}
	}
	return out, nil
}

// readInfos returns the role of m and what the rules read of each of its
// blocks.
func (s *SDK[R, M, B]) readInfos(m *M) (string, []Info, error) {
	role, blocks, err := s.ReadMessage(m)
	if err != nil {
		return "", nil, err
	}
	infos := make([]Info, len(blocks))
	for j := range blocks {
		infos[j] = s.Info(&blocks[j])
	}
	return role, infos, nil
}

// Invalid is the *adapt.MessageError for msgs[i].
func (s *SDK[R, M, B]) Invalid(i int, reason string) error {
	return adapt.Invalid(s.Name, "message", nil, i, reason)
}

// Boundary returns where the latest compaction block with content stands
// in a message (of any role but system, which cannot hold one): the
// message and the block; -1, -1 when there is none. The API reads nothing
// before it, and refuses one that is not the first block of the messages
// (compaction_block_misplaced), whichever role its message has.
func Boundary[B any](rs []read[B]) (int, int) {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].role == RoleSystem {
			continue
		}
		for j := len(rs[i].infos) - 1; j >= 0; j-- {
			if rs[i].infos[j].Compaction.Boundary() {
				return i, j
			}
		}
	}
	return -1, -1
}

// Convert implements ToHistory and, with wantSources, also says where each
// converted message came from. It recognises the notices a trim with opts
// inserts (see notice.Mark): a message holding exactly a rendered notice's
// one text block (a cache_control marker on it is allowed, it is not read).
func (s *SDK[R, M, B]) Convert(system R, msgs []M, wantSources bool, opts []history.Option) ([]history.Message, []regroup.Slot, error) {
	hist, srcs, _, err := s.convertMessages(system, msgs, wantSources, nil)
	if err != nil {
		return nil, nil, err
	}
	notice.Mark(hist, opts, s.readNotice, nil)
	return hist, srcs, nil
}

// readNotice returns the notice b as ToHistory reads it once Trim has
// rendered it natively: a user (or assistant) message holding one text
// block; an assistant-role notice in both forms, since Trim renders it as
// a user message before an assistant message that opens with thinking.
func (s *SDK[R, M, B]) readNotice(b history.Message) []history.Message {
	forms := []M{s.FromBreadcrumb(b)}
	if b.Role == history.RoleAssistant {
		b.Role = history.RoleUser
		forms = append(forms, s.FromBreadcrumb(b))
	}
	hist := make([]history.Message, 0, len(forms))
	for _, f := range forms {
		var zero R
		h, _, _, _ := s.convertMessages(zero, []M{f}, false, nil) // a rendered notice always converts
		hist = append(hist, h...)
	}
	return hist
}

// FromBreadcrumb renders the breadcrumb b as a native message: a user
// message with one text block, or an assistant message when b's role is
// assistant. A system-role breadcrumb becomes a user message too, since
// the Messages API takes system text only in its separate system field.
func (s *SDK[R, M, B]) FromBreadcrumb(b history.Message) M {
	if b.Role == history.RoleAssistant {
		return s.Notice(RoleAssistant, b.Content)
	}
	return s.Notice(RoleUser, b.Content)
}

// conv is one conversion in progress.
type conv struct {
	hist        []history.Message
	srcs        []regroup.Slot
	wantSources bool
}

func (c *conv) add(m history.Message, slot regroup.Slot) {
	c.hist = append(c.hist, m)
	if c.wantSources {
		c.srcs = append(c.srcs, slot)
	}
}

// convertMessages is Convert without the recognition of notices; it also
// returns what it read of each message. It builds the messages and slots
// in buf's arrays (nil: fresh ones).
func (s *SDK[R, M, B]) convertMessages(system R, msgs []M, wantSources bool, buf *regroup.Arrays) ([]history.Message, []regroup.Slot, []read[B], error) {
	rs, err := s.readAll(msgs)
	if err != nil {
		return nil, nil, nil, err
	}
	c := &conv{wantSources: wantSources}
	srcs := 0
	if wantSources {
		srcs = len(msgs) + 1
	}
	c.hist, c.srcs = buf.Make(len(msgs)+1, srcs)
	if texts, _ := s.System(system); len(texts) > 0 {
		m := history.Message{Role: history.RoleSystem, Parts: make([]history.Part, len(texts))}
		for i, t := range texts {
			m.Parts[i] = history.Part{Type: history.PartText, Text: t}
		}
		c.hist = append(c.hist, m)
	}
	bi, bj := Boundary(rs)
	for i := range rs {
		r := &rs[i]
		switch r.role {
		case RoleSystem:
			m := history.Message{Role: history.RoleSystem}
			for j := range r.infos {
				m.Parts = addParts(m.Parts, r.infos[j].Parts)
			}
			c.add(m, regroup.Slot{Native: i})
		case RoleAssistant:
			at := -1
			if i == bi {
				at = bj
			}
			if err := c.assistant(i, r.infos, at); err != nil {
				return nil, nil, nil, s.Invalid(i, err.Error())
			}
		case RoleUser:
			if n := len(c.hist); n > 0 && (c.hist[n-1].Role == history.RoleTool || c.hist[n-1].Kind == history.KindNudge) && hasResults(r.infos) {
				// The previous message answered tool calls too. The core
				// would read both as one exchange, but the API wants every
				// result in the message right after its call: end the
				// exchange here with an empty assistant message that maps
				// to no block (it costs the per-message overhead only), so
				// the sweep drops these results as orphans.
				c.add(history.Message{Role: history.RoleAssistant}, regroup.Slot{Native: i, Parts: []int{}})
			}
			var err error
			if i == bi {
				err = c.userBoundary(i, r.infos, bj)
			} else {
				err = c.user(i, r.infos)
			}
			if err != nil {
				return nil, nil, nil, s.Invalid(i, err.Error())
			}
		default:
			return nil, nil, nil, s.Invalid(i, "unknown role "+strconv.Quote(r.role))
		}
	}
	return c.hist, c.srcs, rs, nil
}

// assistant appends the conversion of assistant message i: one assistant
// message, or, when block at is the compaction the API reads from, the
// blocks before it (which the core drops), a history.KindCompaction
// message and the blocks after it. An empty compaction block maps to no
// message: it is never sent.
func (c *conv) assistant(i int, infos []Info, at int) error {
	if at < 0 {
		return c.assistantRange(i, infos, 0, len(infos), true)
	}
	if err := c.assistantRange(i, infos, 0, at, false); err != nil {
		return err
	}
	c.add(history.Message{Role: history.RoleAssistant, Kind: history.KindCompaction, Parts: infos[at].Parts},
		regroup.Slot{Native: i, Parts: []int{at}})
	return c.assistantRange(i, infos, at+1, len(infos), false)
}

// assistantRange appends one assistant message for blocks [lo, hi) of
// assistant message i; none for an empty range, unless always (an
// assistant message with no block).
func (c *conv) assistantRange(i int, infos []Info, lo, hi int, always bool) error {
	if lo == hi && !always {
		return nil
	}
	if lo < hi && onlyEmptyCompactions(infos[lo:hi]) {
		// Nothing of it is ever sent, and a message left with no block is
		// one the API refuses (only the final assistant message may be
		// empty): it maps to no message.
		return nil
	}
	m := history.Message{Role: history.RoleAssistant}
	var calls []int
	skipped := false
	for j := lo; j < hi; j++ {
		in := &infos[j]
		switch in.Type {
		case TypeToolUse:
			if in.ID == "" {
				return errors.New("tool_use block " + strconv.Itoa(j) + " has an empty id")
			}
			for k := range m.ToolCalls {
				if m.ToolCalls[k].ID == in.ID {
					return errors.New("tool_use id " + strconv.Quote(in.ID) + " used twice in one message")
				}
			}
			m.ToolCalls = append(m.ToolCalls, history.ToolCall{ID: in.ID, Name: in.Name, Arguments: in.Input})
			calls = append(calls, j)
		case TypeToolResult:
			return errors.New("tool_result block " + strconv.Itoa(j) + " in an assistant message")
		default:
			if in.Compaction != nil && in.Compaction.Empty {
				skipped = true
				continue // never sent
			}
			m.Parts = addParts(m.Parts, in.Parts)
		}
	}
	slot := regroup.Slot{Native: i, Calls: calls}
	if lo > 0 || hi < len(infos) || skipped {
		// The blocks it stands for, those sent: all but the empty
		// compactions.
		parts := make([]int, 0, hi-lo)
		for j := lo; j < hi; j++ {
			if in := &infos[j]; in.Type == TypeToolUse || in.Compaction == nil || !in.Compaction.Empty {
				parts = append(parts, j)
			}
		}
		slot.Parts = parts
	}
	c.add(m, slot)
	return nil
}

// user appends the conversion of user message i: a plain RoleUser
// message, or one RoleTool message per tool_result block followed by a
// KindNudge message holding any other blocks.
func (c *conv) user(i int, infos []Info) error {
	results := 0
	for j := range infos {
		switch infos[j].Type {
		case TypeToolUse:
			return errors.New("tool_use block " + strconv.Itoa(j) + " in a user message")
		case TypeToolResult:
			results++
		}
	}
	if results == 0 {
		m := history.Message{Role: history.RoleUser}
		for j := range infos {
			m.Parts = addParts(m.Parts, infos[j].Parts)
		}
		c.add(m, regroup.Slot{Native: i})
		return nil
	}
	var rest []int
	for j := range infos {
		in := &infos[j]
		if in.Type != TypeToolResult {
			rest = append(rest, j)
			continue
		}
		if in.ResultFor == "" {
			return errors.New("tool_result block " + strconv.Itoa(j) + " has an empty tool_use_id")
		}
		c.add(history.Message{Role: history.RoleTool, ToolCallID: in.ResultFor, Parts: in.Parts}, regroup.Slot{Native: i, Parts: []int{j}})
	}
	if len(rest) > 0 {
		m := history.Message{Role: history.RoleUser, Kind: history.KindNudge}
		for _, j := range rest {
			m.Parts = addParts(m.Parts, infos[j].Parts)
		}
		c.add(m, regroup.Slot{Native: i, Parts: rest})
	}
	return nil
}

// userBoundary appends the conversion of user message i whose block at is
// the compaction the API reads from: the blocks before it as one user
// message (which the core drops, as it drops everything before a
// compaction), a history.KindCompaction message, and the blocks after it
// as a user message of their own.
func (c *conv) userBoundary(i int, infos []Info, at int) error {
	for j := range infos {
		if infos[j].Type == TypeToolUse {
			return errors.New("tool_use block " + strconv.Itoa(j) + " in a user message")
		}
	}
	run := func(lo, hi int) {
		if lo == hi {
			return
		}
		m := history.Message{Role: history.RoleUser}
		parts := make([]int, 0, hi-lo)
		for j := lo; j < hi; j++ {
			m.Parts = addParts(m.Parts, infos[j].Parts)
			parts = append(parts, j)
		}
		c.add(m, regroup.Slot{Native: i, Parts: parts})
	}
	run(0, at)
	c.add(history.Message{Role: history.RoleAssistant, Kind: history.KindCompaction, Parts: infos[at].Parts},
		regroup.Slot{Native: i, Parts: []int{at}})
	run(at+1, len(infos))
	return nil
}

// onlyEmptyCompactions reports whether every block of infos is a
// compaction block with empty content.
func onlyEmptyCompactions(infos []Info) bool {
	for j := range infos {
		if infos[j].Compaction == nil || !infos[j].Compaction.Empty {
			return false
		}
	}
	return true
}

func hasResults(infos []Info) bool {
	for j := range infos {
		if infos[j].Type == TypeToolResult {
			return true
		}
	}
	return false
}

// addParts is append(dst, ps...), but takes ps itself (clipped) when dst
// is empty, so that the history message of a block that alone holds
// parts shares them instead of copying them on every conversion: nothing
// writes to a message's parts, and an append to a clipped slice copies.
func addParts(dst, ps []history.Part) []history.Part {
	if len(dst) == 0 && len(ps) > 0 {
		return slices.Clip(ps)
	}
	return append(dst, ps...)
}
