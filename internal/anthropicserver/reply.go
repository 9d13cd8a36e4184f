package anthropicserver

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/loopserver"
)

// trigger returns the input-token trigger of the edit typ the request
// turns on (def when it states none), or 0 when it is off.
func trigger(req *request, typ string, def int) int {
	if req.ContextManagement == nil {
		return 0
	}
	for _, e := range req.ContextManagement.Edits {
		if e.Type == typ {
			if e.Trigger != nil && e.Trigger.Value > 0 && e.Trigger.Type != "tool_uses" {
				return e.Trigger.Value
			}
			return def
		}
	}
	return 0
}

// clear applies clear_tool_uses_20250919 past its trigger: every tool
// result but the last three is cleared. It returns the applied_edits and
// the tokens cleared.
func (s *Server) clear(req *request, msgs []message, count int) ([]map[string]any, int) {
	edits := []map[string]any{}
	t := trigger(req, "clear_tool_uses_20250919", 100_000)
	if t == 0 || count <= t {
		return edits, 0
	}
	var results []string
	for i := range msgs {
		p := msgs[i].read()
		for j, b := range p.blocks {
			if b.Type == "tool_result" {
				results = append(results, p.texts[j])
			}
		}
	}
	if len(results) <= 3 {
		return edits, 0
	}
	cleared := 0
	for _, r := range results[:len(results)-3] {
		cleared += history.EstimateText(r)
	}
	s.stats.Edits++
	s.stats.ClearedTokens += cleared
	edits = append(edits, map[string]any{"type": "clear_tool_uses_20250919", "cleared_tool_uses": len(results) - 3, "cleared_input_tokens": cleared})
	return edits, cleared
}

// compacts reports whether compact_20260112 runs on a prompt of count
// tokens.
func (s *Server) compacts(req *request, count int) bool {
	t := trigger(req, "compact_20260112", 150_000)
	return t > 0 && count > t
}

// compaction issues a compaction block closing hist, and remembers the
// task it was in so that the script goes on after it.
func (s *Server) compaction(hist []history.Message) string {
	task := ""
	for i := len(hist) - 1; i >= 0 && task == ""; i-- {
		if hist[i].Role == history.RoleUser && strings.HasPrefix(hist[i].Content, "Task ") {
			task = hist[i].Content
		}
	}
	summary := "Summary of " + strconv.Itoa(len(hist)) + " messages: the user asked for code reviews; the findings so far are recorded. Current: " + task
	h := sha256.Sum256([]byte(summary))
	enc := base64.StdEncoding.EncodeToString(append([]byte(s.Backend+":"), h[:]...))
	sig := s.sign(summary + enc)
	raw, _ := json.Marshal(map[string]any{"type": "compaction", "content": summary, "encrypted_content": enc, "signature": sig, "tool_changes": []any{}})
	if s.issued == nil {
		s.issued, s.tasks = map[string]string{}, map[string]string{}
	}
	s.issued[sig], s.tasks[sig] = string(raw), task
	s.stats.Compactions++
	return string(raw)
}

// play returns the script's reply to hist, the conversation from its
// latest compaction on: the task the compaction closed stands first.
func (s *Server) play(msgs []message, hist []history.Message) loopserver.Reply {
	if len(msgs) > 0 {
		if bs := msgs[0].read().blocks; len(bs) > 0 {
			if b := bs[0]; b.Type == "compaction" && b.Signature != nil && s.tasks[*b.Signature] != "" {
				hist = append([]history.Message{{Role: history.RoleUser, Content: s.tasks[*b.Signature]}}, hist...)
			}
		}
	}
	if s.Burst > 0 {
		return loopserver.PlayWith(hist, loopserver.Bursts(s.Burst))
	}
	return loopserver.Play(hist)
}

// reply builds the answer to an accepted request and does the cache
// accounting and the thread's bookkeeping.
func (s *Server) reply(req *request, msgs []message, hist []history.Message, id string, count int, edits []map[string]any, cleared int, compact bool) []byte {
	var content []json.RawMessage
	compacted := ""
	if compact {
		compacted = s.compaction(hist)
		content = append(content, json.RawMessage(compacted))
	}
	r := s.play(msgs, hist)
	if s.Thinking {
		th := "Thinking about request " + id + "."
		raw, _ := json.Marshal(map[string]any{"type": "thinking", "thinking": th, "signature": s.sign(th)})
		if s.issued == nil {
			s.issued, s.tasks = map[string]string{}, map[string]string{}
		}
		s.issued[s.sign(th)] = string(raw)
		content = append(content, raw)
	}
	stop := "end_turn"
	if len(r.Calls) == 0 {
		raw, _ := json.Marshal(map[string]any{"type": "text", "text": r.Text})
		content = append(content, raw)
	}
	for _, c := range r.Calls {
		raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
		content = append(content, raw)
		stop = "tool_use"
	}
	read := s.account(req, msgs, content, compacted, len(edits) > 0)
	if read > count-cleared {
		read = 0
	}
	usage := map[string]any{"input_tokens": count - cleared - read, "cache_read_input_tokens": read,
		"cache_creation_input_tokens": 0, "output_tokens": 20 * len(content)}
	if compact {
		summary := history.EstimateText(compacted)
		usage["iterations"] = []map[string]any{
			{"type": "compaction", "input_tokens": count - cleared, "output_tokens": summary, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
			{"type": "message", "input_tokens": summary, "output_tokens": 20 * len(content), "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
		}
		usage["input_tokens"], usage["cache_read_input_tokens"] = summary, 0
	}
	if req.Thread != nil {
		if s.threads == nil {
			s.threads = map[string][]message{}
		}
		c, _ := json.Marshal(content)
		s.threads[id] = append(slices.Clip(msgs), message{Role: "assistant", Content: c})
	}
	out, _ := json.Marshal(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		"context_management": map[string]any{"applied_edits": edits},
	})
	return out
}

// account counts the cache rewrites of a request and remembers it; it
// returns the tokens the request read from the cache (the previous
// prompt's, when this one extends it).
func (s *Server) account(req *request, msgs []message, content []json.RawMessage, compacted string, edited bool) int {
	sent := prompt(req.System, msgs)
	client := false
	if s.last != nil && !hasPrefix(sent, append(slices.Clip(s.last.sent), s.last.reply...)) {
		// After a compaction the client sends the compacted reply first:
		// that rewrite is the server's.
		follows := s.last.compacted != "" && len(msgs) > 0 && len(msgs[0].blocks()) > 0 &&
			msgs[0].read().canonical()[0] == canonical(json.RawMessage(s.last.compacted))
		client = !follows
	}
	server := compacted != "" || edited
	switch {
	case client && server:
		s.stats.BothRewrites++
		s.stats.ClientRewrites++
		s.stats.ServerRewrites++
	case client:
		s.stats.ClientRewrites++
	case server:
		s.stats.ServerRewrites++
	}
	read := 0
	if s.last != nil && !client && !server {
		read = s.stats.LastPrompt / 2
	}
	reply := []string{"role:assistant"}
	for _, c := range content {
		reply = append(reply, canonical(c))
	}
	s.last = &turn{sent: sent, reply: reply, compacted: compacted}
	return read
}
