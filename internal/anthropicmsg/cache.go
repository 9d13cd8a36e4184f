package anthropicmsg

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/histrim/history"
)

// MaxBreakpoints is the number of cache_control breakpoints the Messages
// API accepts in one request ("A maximum of 4 blocks with cache_control
// may be provided").
const MaxBreakpoints = 4

// ephemeral is the cache_control a placed breakpoint carries.
var ephemeral = json.RawMessage(`{"type":"ephemeral"}`)

// finish makes a trim's output sendable: it leaves out the compaction
// blocks with empty content (the API rejects them; a compaction with
// content or a null one is sent as it came), and a message that held
// nothing else (the API refuses a message with no content but the final
// assistant one), and keeps at most MaxBreakpoints breakpoints in the
// system prompt and the messages, removing the oldest ones of the
// messages beyond that (a compaction block's last). rs is what the
// conversion read of the input, from where each output message came from.
// out and from are copied before any change.
func (s *SDK[R, M, B]) finish(system R, out []M, from []int, rs []read[B]) ([]M, []int) {
	out, from = s.dropEmptied(out, from, rs)
	copied := false
	marks := systemMarks(s, system)
	for j, i := range from {
		if i < 0 {
			continue
		}
		r := &rs[i]
		empty := false
		for k := range r.infos {
			if r.infos[k].Cache {
				marks++
			}
			empty = empty || (r.infos[k].Compaction != nil && r.infos[k].Compaction.Empty)
		}
		if empty {
			if !copied {
				out, copied = slices.Clone(out), true
			}
			out[j] = s.editBlocks(out[j], func(in *Info, raw json.RawMessage) (json.RawMessage, bool) {
				return nil, in.Compaction != nil && in.Compaction.Empty
			})
		}
	}
	if marks <= MaxBreakpoints {
		return out, from
	}
	if !copied {
		out = slices.Clone(out)
	}
	return s.limitMarks(system, out, -1), from
}

// dropEmptied leaves out of out (and from) the messages whose every block
// is a compaction with empty content: once those blocks are left out
// nothing would remain. out and from are copied when anything goes.
func (s *SDK[R, M, B]) dropEmptied(out []M, from []int, rs []read[B]) ([]M, []int) {
	empty := func(i int) bool {
		return i >= 0 && len(rs[i].infos) > 0 && onlyEmptyCompactions(rs[i].infos)
	}
	if !slices.ContainsFunc(from, empty) {
		return out, from
	}
	o := make([]M, 0, len(out))
	f := make([]int, 0, len(from))
	for j, i := range from {
		if !empty(i) {
			o, f = append(o, out[j]), append(f, i)
		}
	}
	return o, f
}

// systemMarks counts the breakpoints of the system prompt.
func systemMarks[R, M, B any](s *SDK[R, M, B], system R) int {
	_, cached := s.System(system)
	n := 0
	for _, c := range cached {
		if c {
			n++
		}
	}
	return n
}

// limitMarks removes the oldest breakpoints of out's messages (other
// than a compaction block's and message keep's) until the request holds
// at most MaxBreakpoints. It modifies out, which the caller owns.
func (s *SDK[R, M, B]) limitMarks(system R, out []M, keep int) []M {
	marks := systemMarks(s, system)
	counts := make([]int, len(out))
	for j := range out {
		_, blocks, err := s.ReadMessage(&out[j])
		if err != nil {
			continue
		}
		for k := range blocks {
			if s.Info(&blocks[k]).Cache {
				counts[j]++
			}
		}
		marks += counts[j]
	}
	// The oldest marks go first; a compaction block's only when nothing
	// else is left to take (a system prompt with four marks, say): the
	// API counts it like any other, and it is a request's hint, not part
	// of what the block's signature covers.
	for _, compactions := range [2]bool{false, true} {
		for j := 0; j < len(out) && marks > MaxBreakpoints; j++ {
			if counts[j] == 0 || j == keep {
				continue
			}
			excess := marks - MaxBreakpoints
			out[j] = s.editBlocks(out[j], func(in *Info, raw json.RawMessage) (json.RawMessage, bool) {
				if excess == 0 || !in.Cache || (in.Compaction != nil) != compactions {
					return raw, false
				}
				edited, err := setKey(raw, "cache_control", nil)
				if err != nil {
					return raw, false
				}
				excess--
				marks--
				counts[j]--
				return edited, true
			})
		}
	}
	return out
}

// Breakpoints checks the cache breakpoints of a whole request, params the
// SDK's parameters: the top-level cache_control (automatic caching, which
// takes one), the tools', the system prompt's and the messages' blocks'
// together must be at most MaxBreakpoints, or the API refuses the request
// ("A maximum of 4 blocks with cache_control may be provided"). It returns
// a *MessageError at the message holding the first mark over the limit
// (-1 when it is not in a message), or nil; nil too when params does not
// encode (the request could not be sent either).
func (s *SDK[R, M, B]) Breakpoints(params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil
	}
	var req struct {
		CacheControl json.RawMessage   `json:"cache_control"`
		Tools        []json.RawMessage `json:"tools"`
		System       json.RawMessage   `json:"system"`
		Messages     []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(raw, &req) != nil {
		return nil
	}
	marked := func(b json.RawMessage) bool {
		var v struct {
			CacheControl json.RawMessage `json:"cache_control"`
		}
		return json.Unmarshal(b, &v) == nil && len(v.CacheControl) > 0 && string(v.CacheControl) != "null"
	}
	blocks := func(content json.RawMessage) []json.RawMessage {
		var bs []json.RawMessage
		_ = json.Unmarshal(content, &bs) // a string content holds no mark
		return bs
	}
	outside := 0
	if len(req.CacheControl) > 0 && string(req.CacheControl) != "null" {
		outside++
	}
	for _, t := range req.Tools {
		if marked(t) {
			outside++
		}
	}
	for _, b := range blocks(req.System) {
		if marked(b) {
			outside++
		}
	}
	n := outside
	for i, m := range req.Messages {
		for _, b := range blocks(m.Content) {
			if marked(b) {
				if n++; n > MaxBreakpoints {
					return s.Invalid(i, "a cache_control breakpoint over the "+strconv.Itoa(MaxBreakpoints)+" the API accepts ("+strconv.Itoa(outside)+" outside the messages: automatic caching, tools, system prompt)")
				}
			}
		}
	}
	if n > MaxBreakpoints {
		return s.Invalid(-1, strconv.Itoa(n)+" cache_control breakpoints outside the messages (automatic caching, tools, system prompt); the API accepts "+strconv.Itoa(MaxBreakpoints))
	}
	return nil
}

// editBlocks returns m with each block for which edit reports true
// replaced by the JSON edit returns (left out when it is nil), as a
// param.Override block; m itself when edit changes nothing. A message the
// SDK's accessor reads stays typed, its other blocks as they were.
func (s *SDK[R, M, B]) editBlocks(m M, edit func(in *Info, raw json.RawMessage) (json.RawMessage, bool)) M {
	_, blocks, err := s.ReadMessage(&m)
	if err != nil {
		return m
	}
	var content []B
	typed := false
	if s.Message != nil {
		_, content, typed = s.Message(&m)
		typed = typed && len(content) == len(blocks)
	}
	raws := make([]json.RawMessage, 0, len(blocks))
	kept := make([]B, 0, len(blocks))
	changed := false
	for k := range blocks {
		raw := blocks[k].Raw
		if raw == nil {
			if raw, err = json.Marshal(blocks[k].Typed); err != nil {
				return m
			}
		}
		in := s.Info(&blocks[k])
		e, ok := edit(&in, raw)
		switch {
		case !ok:
			raws = append(raws, raw)
			if typed {
				kept = append(kept, content[k])
			}
		case e != nil:
			raws = append(raws, e)
			kept = append(kept, s.OverrideBlock(e))
		}
		changed = changed || ok
	}
	if !changed {
		return m
	}
	if typed {
		return s.WithContent(m, kept)
	}
	obj, _, ok := contentJSON(m, len(blocks))
	if !ok {
		return m
	}
	return s.withContentJSON(m, obj, raws)
}

// MarkPrefix places a cache breakpoint on the end of the new prefix of
// out, the output of a trim with opts: on the last notice or summary of
// its leading block (the turn notice a maintenance point inserted), so
// that the next request reads everything up to it from the cache. It adds
// none when out's leading block holds no notice or summary, or when that
// message already carries one; it then removes the oldest breakpoints of
// the other messages beyond MaxBreakpoints. out is not modified: the
// result is a copy when anything changed, out itself otherwise.
func (s *SDK[R, M, B]) MarkPrefix(system R, out []M, opts []history.Option) []M {
	var zero R
	hist, srcs, err := s.Convert(zero, out, true, opts)
	if err != nil {
		return out
	}
	at := -1
	for j := range hist {
		k := hist[j].Kind
		if k != history.KindBreadcrumb && k != history.KindSummary && k != history.KindCompaction && hist[j].Role != history.RoleSystem {
			break
		}
		if k == history.KindBreadcrumb || k == history.KindSummary {
			at = srcs[j].Native
		}
	}
	if at < 0 {
		return out
	}
	placed := false
	m := s.editBlocks(out[at], func(in *Info, raw json.RawMessage) (json.RawMessage, bool) {
		placed = placed || in.Cache
		return raw, false
	})
	if placed {
		return out
	}
	out = slices.Clone(out)
	_, blocks, _ := s.ReadMessage(&m)
	last := len(blocks) - 1
	k := 0
	out[at] = s.editBlocks(m, func(in *Info, raw json.RawMessage) (json.RawMessage, bool) {
		k++
		if k-1 != last {
			return raw, false
		}
		edited, err := setKey(raw, "cache_control", ephemeral)
		return edited, err == nil
	})
	return s.limitMarks(system, out, at)
}
