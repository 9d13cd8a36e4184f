package anthropicmsg

import (
	"encoding/json"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/notice"
	"github.com/histrim/history/internal/regroup"
)

// Codec returns the adapter's part of the shape every adapter shares
// (internal/adapt): the conversion both ways, the system prompt taken
// separately.
func (s *SDK[R, M, B]) Codec() *adapt.Codec[R, M] {
	return &adapt.Codec[R, M]{Name: s.Name, Noun: "message", Convert: s.view}
}

// view converts a request for a trim and maps decisions back, then
// leaves out the empty compaction blocks the API would reject and keeps
// at most MaxBreakpoints cache breakpoints (see Finish).
func (s *SDK[R, M, B]) view(system R, msgs []M, opts []history.Option) (*adapt.View[M], error) {
	var buf *regroup.Arrays
	if s.Reuse {
		buf = regroup.TakeArrays()
	}
	hist, srcs, rs, err := s.convertMessages(system, msgs, true, buf)
	if err != nil {
		return nil, err
	}
	notice.Mark(hist, opts, s.readNotice, nil)
	lead := len(hist) - len(srcs) // the system prompt, if any
	render := func(b history.Message, next *regroup.Group) M {
		if b.Role == history.RoleAssistant && next != nil && next.Native >= 0 && opensWithThinking(rs[next.Native]) {
			// The API joins consecutive assistant messages: the notice's
			// text would open the message before its thinking, which the
			// API rejects when thinking is enabled.
			b.Role = history.RoleUser
		}
		return s.FromBreadcrumb(b)
	}
	v := adapt.Grouped(msgs, hist, lead, srcs, render, s.rebuild)
	back := v.Back
	v.Back = func(res history.Result) ([]M, []int) {
		out, from := back(res)
		out, from = s.finish(system, out, from, rs)
		if s.Reuse {
			// The decision is mapped: the output holds the caller's
			// messages and new ones, never the conversion's arrays.
			buf.Give(hist, srcs)
		}
		return out, from
	}
	return v, nil
}

// opensWithThinking reports whether r is an assistant message whose first
// block is a thinking or redacted_thinking block. A trim never removes
// such a block (it strips tool_use and tool_result blocks only), so a kept
// or cut-down copy of it opens with it too.
func opensWithThinking[B any](r read[B]) bool {
	return r.role == RoleAssistant && len(r.infos) > 0 && IsThinking(r.infos[0].Type)
}

// IsThinking reports whether a block of type t is thinking or
// redacted_thinking.
func IsThinking(t string) bool { return t == TypeThinking || t == TypeRedactedThinking }

// rebuild returns a copy of orig, a native message the trim cut down or
// elided in (its group g), holding only the blocks g keeps (those of its
// kept pieces, minus the tool_use blocks the sweep stripped) in their
// original order, the tool_result blocks the core elided replaced by
// their placeholder and the tool_use blocks whose arguments the core
// cleared (history.ElideOptions.ClearArguments) by copies with the new
// input. ok is false when no block is left, or only thinking blocks (see
// onlyThinking).
func (s *SDK[R, M, B]) rebuild(orig M, g *regroup.Group) (M, bool) {
	_, blocks, content, _ := s.readMessage(&orig)
	keep := g.Keep(len(blocks))
	if !slices.Contains(keep, true) || s.onlyThinking(blocks, keep) {
		return orig, false
	}
	if s.Message == nil {
		return s.rebuildJSON(orig, g, len(blocks)), true
	}
	if content != nil { // s.Message read orig: one block of content per block
		m := s.WithContent(orig, regroup.KeptParts(g, regroup.WithArgs(g, content, s.withInput), s.elideBlock))
		return m, true
	}
	return s.rebuildJSON(orig, g, len(blocks)), true
}

// onlyThinking reports whether the blocks keep keeps are all thinking or
// redacted_thinking blocks: what is left of an assistant message that
// thought and called tools no result answers, once the sweep stripped the
// calls. The API rejects an assistant message that ends with thinking
// ("The final block in an assistant message cannot be `thinking`"), so
// such a message is left out whole.
func (s *SDK[R, M, B]) onlyThinking(blocks []Block[B], keep []bool) bool {
	for j, ok := range keep {
		if ok && !IsThinking(s.BlockType(&blocks[j])) {
			return false
		}
	}
	return true
}

// elideBlock returns a copy of the tool_result block b whose content is
// one text block holding text: tool_use_id, is_error, cache_control and
// extra fields are kept. A block built with param.Override is rewritten at
// the JSON level, keeping its unknown keys. b is not modified.
func (s *SDK[R, M, B]) elideBlock(b B, text string) B {
	return s.editBlock(b, s.ElideResult, text, ElideJSON, func(raw json.RawMessage) json.RawMessage {
		// b was read through its JSON form, so this does not happen; if
		// it did, send the placeholder alone rather than the full result.
		var id struct {
			ToolUseID string `json:"tool_use_id"`
		}
		_ = json.Unmarshal(raw, &id)
		raw, _ = json.Marshal(map[string]any{"type": TypeToolResult, "tool_use_id": id.ToolUseID,
			"content": []map[string]string{{"type": TypeText, "text": text}}})
		return raw
	})
}

// withInput returns a copy of the tool_use block b whose input is args,
// the JSON object the core cleared its arguments to, sent as it is: its
// id, name, cache_control, caller and extra fields are kept. A block built
// with param.Override is rewritten at the JSON level, keeping its unknown
// keys. b is not modified.
func (s *SDK[R, M, B]) withInput(b B, args string) B {
	return s.editBlock(b, s.WithInput, args, WithInputJSON, func(raw json.RawMessage) json.RawMessage {
		var id struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &id)
		raw, _ = json.Marshal(map[string]any{"type": TypeToolUse, "id": id.ID, "name": id.Name, "input": json.RawMessage(args)})
		return raw
	})
}

// editBlock returns a copy of b with arg written in: through typed (the
// SDK's typed edit, when set and b was not built with param.Override),
// else at the JSON level with edit, keeping unknown keys, else (when
// edit fails) as the bare block fallback builds from b's JSON. b is not
// modified.
func (s *SDK[R, M, B]) editBlock(b B, typed func(b *B, arg string) (B, bool), arg string,
	edit func(raw json.RawMessage, arg string) (json.RawMessage, error), fallback func(raw json.RawMessage) json.RawMessage) B {
	if typed != nil && (s.Overridden == nil || !s.Overridden(&b)) {
		if e, ok := typed(&b, arg); ok {
			return e
		}
	}
	raw, err := json.Marshal(b)
	if err == nil {
		raw, err = edit(raw, arg)
	}
	if err != nil {
		raw = fallback(raw)
	}
	return s.OverrideBlock(raw)
}

// WithInputJSON replaces the "input" of the JSON object raw, a tool_use
// block, with args, a JSON object.
func WithInputJSON(raw json.RawMessage, args string) (json.RawMessage, error) {
	return setKey(raw, "input", json.RawMessage(args))
}

// ElideJSON replaces the "content" of the JSON object raw, a tool_result
// block, with one text block holding text.
func ElideJSON(raw json.RawMessage, text string) (json.RawMessage, error) {
	content, err := json.Marshal([]map[string]string{{"type": TypeText, "text": text}})
	if err != nil {
		return raw, err
	}
	return setKey(raw, "content", content)
}

// setKey sets key of the JSON object raw to v (deleting it for nil),
// keeping every other key.
func setKey(raw json.RawMessage, key string, v json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return raw, err
	}
	if v == nil {
		delete(obj, key)
	} else {
		obj[key] = v
	}
	return json.Marshal(obj)
}

// rebuildJSON is rebuild for a message read through its JSON: it filters
// the "content" array of its JSON form, elides the blocks the core elided
// there and sets the input of the calls whose arguments it cleared, so
// unknown keys survive. n is the number of blocks the conversion read;
// should the JSON not read as it did then, orig is kept whole.
func (s *SDK[R, M, B]) rebuildJSON(orig M, g *regroup.Group, n int) M {
	obj, content, ok := contentJSON(orig, n)
	if !ok {
		return orig
	}
	failed := false
	content = regroup.WithArgs(g, content, func(c json.RawMessage, args string) json.RawMessage {
		e, err := WithInputJSON(c, args)
		failed = failed || err != nil
		return e
	})
	kept := regroup.KeptParts(g, content, func(c json.RawMessage, text string) json.RawMessage {
		e, err := ElideJSON(c, text)
		failed = failed || err != nil
		return e
	})
	if failed {
		return orig
	}
	return s.withContentJSON(orig, obj, kept)
}

// contentJSON returns the JSON object of m and its "content" array, which
// must hold n blocks (a string content is one text block).
func contentJSON[M any](m M, n int) (map[string]json.RawMessage, []json.RawMessage, bool) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, nil, false
	}
	var content []json.RawMessage
	var text string
	if json.Unmarshal(obj["content"], &text) == nil {
		b, _ := json.Marshal(map[string]string{"type": TypeText, "text": text})
		content = []json.RawMessage{b}
	} else if json.Unmarshal(obj["content"], &content) != nil {
		return nil, nil, false
	}
	if len(content) != n {
		return nil, nil, false
	}
	return obj, content, true
}

// withContentJSON returns orig with its JSON object obj's content set to
// content; orig when it does not encode.
func (s *SDK[R, M, B]) withContentJSON(orig M, obj map[string]json.RawMessage, content []json.RawMessage) M {
	c, err := json.Marshal(content)
	if err != nil {
		return orig
	}
	obj["content"] = c
	raw, err := json.Marshal(obj)
	if err != nil {
		return orig
	}
	return s.Override(raw)
}
