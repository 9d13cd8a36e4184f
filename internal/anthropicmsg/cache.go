package anthropicmsg

import (
	"encoding/json"
	"slices"

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
// content or a null one is sent as it came) and keeps at most
// MaxBreakpoints breakpoints in the system prompt and the messages,
// removing the oldest ones of the messages beyond that (never a
// compaction block's). rs is what the conversion read of the input, from
// where each output message came from. out is copied before any change.
func (s *SDK[R, M, B]) finish(system R, out []M, from []int, rs []read[B]) []M {
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
		return out
	}
	if !copied {
		out = slices.Clone(out)
	}
	return s.limitMarks(system, out, -1)
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
	for j := 0; j < len(out) && marks > MaxBreakpoints; j++ {
		if counts[j] == 0 || j == keep {
			continue
		}
		excess := marks - MaxBreakpoints
		out[j] = s.editBlocks(out[j], func(in *Info, raw json.RawMessage) (json.RawMessage, bool) {
			if excess == 0 || !in.Cache || in.Compaction != nil {
				return raw, false
			}
			edited, err := setKey(raw, "cache_control", nil)
			if err != nil {
				return raw, false
			}
			excess--
			marks--
			return edited, true
		})
	}
	return out
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
