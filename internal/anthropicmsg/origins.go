package anthropicmsg

import (
	"encoding/json"

	"github.com/histrim/history/internal/origins"
)

// Origin names the backend that wrote an opaque block.
type Origin = origins.Origin

// Origins records which backend wrote each opaque block (see package
// origins).
type Origins = origins.Origins

// opaque returns the opaque payload of a block (what binds it to its
// backend), "" for a block that has none.
func opaque(in *Info, raw json.RawMessage) string {
	switch {
	case in.Compaction != nil:
		return "compaction\x00" + in.Compaction.Payload
	case in.Type == TypeThinking, in.Type == TypeRedactedThinking:
		var w struct {
			Signature string `json:"signature"`
			Data      string `json:"data"`
		}
		_ = json.Unmarshal(raw, &w)
		if w.Signature == "" && w.Data == "" {
			return ""
		}
		return in.Type + "\x00" + w.Signature + w.Data
	}
	return ""
}

// Record notes that origin wrote the opaque blocks of msgs (the reply it
// returned, as the caller appends it to its transcript).
func (s *SDK[R, M, B]) Record(o *Origins, origin Origin, msgs []M) {
	for i := range msgs {
		_, blocks, err := s.ReadMessage(&msgs[i])
		if err != nil {
			continue
		}
		for k := range blocks {
			in := s.Info(&blocks[k])
			if p := opaque(&in, s.rawOf(&blocks[k])); p != "" {
				o.Set(p, origin)
			}
		}
	}
}

// rawOf returns the JSON of a block.
func (s *SDK[R, M, B]) rawOf(b *Block[B]) json.RawMessage {
	if b.Raw != nil {
		return b.Raw
	}
	raw, _ := json.Marshal(b.Typed)
	return raw
}

// SummaryHeader opens the text that stands in for a compaction block
// another backend wrote (see Retarget).
const SummaryHeader = "[Summary of the earlier conversation]\n"

// Retarget returns msgs made sendable to the backend to: every opaque
// block that o records as written by another backend is left out (a
// thinking or redacted_thinking block, which only its writer can verify),
// and a compaction block from another backend is replaced by a user
// message holding SummaryHeader and the block's summary, placed before
// the message that held it (none for a null one). A message left with no
// block is left out. Blocks o does not know are kept. n counts the blocks
// left out or replaced; msgs is not modified, and is returned itself when
// n is 0.
func (s *SDK[R, M, B]) Retarget(msgs []M, o *Origins, to Origin) ([]M, int) {
	var out []M
	n := 0
	for i := range msgs {
		var summaries []string
		m := s.editBlocks(msgs[i], func(in *Info, raw json.RawMessage) (json.RawMessage, bool) {
			p := opaque(in, raw)
			if p == "" {
				return raw, false
			}
			if !o.Foreign(p, to) {
				return raw, false
			}
			n++
			if in.Compaction != nil && len(in.Parts) > 0 {
				summaries = append(summaries, in.Parts[0].Text)
			}
			return nil, true
		})
		if out == nil && n == 0 {
			continue
		}
		if out == nil {
			out = append(make([]M, 0, len(msgs)+1), msgs[:i]...)
		}
		for _, sum := range summaries {
			out = append(out, s.Notice(RoleUser, SummaryHeader+sum))
		}
		if _, blocks, err := s.ReadMessage(&m); err == nil && len(blocks) == 0 {
			continue
		}
		out = append(out, m)
	}
	if out == nil {
		return msgs, 0
	}
	return out, n
}
