package anthropicserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// resolveThread returns the request's whole conversation: its messages,
// after those of the thread it continues.
func (s *Server) resolveThread(req *request) ([]message, *apiError) {
	if req.Thread == nil || req.Thread.Type != "continue" {
		return req.Messages, nil
	}
	stored, ok := s.threads[req.Thread.PreviousMessageID]
	if !ok {
		return nil, &apiError{status: http.StatusNotFound, typ: "not_found_error", code: "thread_not_found",
			text: "No usable Thread state was found for `previous_message_id`. Replay the full conversation with `thread: {\"type\": \"create\"}` to start a new Thread."}
	}
	return append(slices.Clip(stored), req.Messages...), nil
}

// betaOf is the beta header that turns on each beta feature of the
// request body: the context_management edits, by type, and threads.
var betaOf = map[string]string{
	"compact_20260112":         "compact-2026-01-12",
	"clear_tool_uses_20250919": "context-management-2025-06-27",
	"clear_thinking_20251015":  "context-management-2025-06-27",
	"thread":                   "message-threads-2026-08-12",
}

// checkBetas rejects a request that turns on a beta feature without its
// beta header (anthropic-beta, one header a value or values joined with
// commas, as the SDKs send them): Anthropic's guides ask for the header
// on every request that uses the feature.
func checkBetas(req *request, h http.Header) *apiError {
	sent := map[string]bool{}
	for _, v := range h.Values("anthropic-beta") {
		for _, b := range strings.Split(v, ",") {
			sent[strings.TrimSpace(b)] = true
		}
	}
	var features []string
	if req.ContextManagement != nil {
		for _, e := range req.ContextManagement.Edits {
			features = append(features, e.Type)
		}
	}
	if req.Thread != nil {
		features = append(features, "thread")
	}
	for _, f := range features {
		if beta, ok := betaOf[f]; ok && !sent[beta] {
			return badRequest("", fmt.Sprintf("%s is a beta feature: send the header `anthropic-beta: %s` to use it.", f, beta))
		}
	}
	return nil
}

// checkBreakpoints rejects a request with more than 4 cache_control
// breakpoints, as the API does.
// Automatic caching (a top-level cache_control) takes one. It also rejects
// a message with no content but the final assistant message, as the API
// does (checked here, before the blocks are read).
func (s *Server) checkBreakpoints(req *request, msgs []message) *apiError {
	for i := range msgs {
		if len(msgs[i].blocks()) == 0 && (i != len(msgs)-1 || msgs[i].Role != "assistant") {
			return badRequest("", "messages."+strconv.Itoa(i)+": all messages must have non-empty content except for the optional final assistant message")
		}
	}
	n := strings.Count(string(req.System), `"cache_control":{`) + strings.Count(string(req.Tools), `"cache_control":{`)
	if len(req.CacheControl) > 0 && string(req.CacheControl) != "null" {
		n++
	}
	for i := range msgs {
		n += strings.Count(string(msgs[i].Content), `"cache_control":{`)
	}
	s.stats.MaxBreakpoints = max(s.stats.MaxBreakpoints, n)
	if n > 4 {
		return badRequest("", "A maximum of 4 blocks with cache_control may be provided. Found "+strconv.Itoa(n)+".")
	}
	return nil
}

// checkOpaque checks every compaction and thinking block sent back
// against the one the server issued, and where compaction blocks stand.
func (s *Server) checkOpaque(msgs []message) *apiError {
	for i := range msgs {
		p := msgs[i].read()
		for j, raw := range p.raws {
			b := p.blocks[j]
			where := "messages." + strconv.Itoa(i) + ".content." + strconv.Itoa(j)
			switch b.Type {
			case "compaction":
				if aerr := s.checkCompaction(where, i, j, msgs[i].Role, b, raw); aerr != nil {
					return aerr
				}
			case "thinking":
				if b.Signature == nil || !strings.HasPrefix(*b.Signature, s.Backend+".") || s.issued[*b.Signature] == "" {
					return badRequest("", where+": Invalid `signature` in `thinking` block.")
				}
				s.stats.Opaque++
				if s.issued[*b.Signature] == string(raw) {
					s.stats.Verbatim++
				}
			}
		}
	}
	return nil
}

// checkCompaction checks one compaction block, block j of message i.
func (s *Server) checkCompaction(where string, i, j int, role string, b block, raw json.RawMessage) *apiError {
	content, ok := b.compactionContent()
	if !ok {
		return nil // null: a failed compaction, a no-op
	}
	if content == "" {
		return badRequest("", where+".content: Empty string content is not allowed.")
	}
	if i != 0 || j != 0 || role == "system" {
		return badRequest("compaction_block_misplaced", where+": The `compaction` block must be the first block of the conversation, and cannot be in a `system` message.")
	}
	sig := ""
	if b.Signature != nil {
		sig = *b.Signature
	}
	if !strings.HasPrefix(sig, s.Backend+".") {
		return badRequest("compaction_signature_invalid", where+": Could not decode the compaction blob.")
	}
	issued, ok := s.issued[sig]
	if !ok {
		return badRequest("compaction_signature_invalid", where+": The `compaction` block's `signature` does not verify.")
	}
	was := readBlock(json.RawMessage(issued))
	switch {
	case string(was.Content) != string(b.Content):
		return badRequest("compaction_content_mismatch", where+": The `compaction` block's `content` differs from the text its `signature` recorded.")
	case canonical(was.ToolChanges) != canonical(b.ToolChanges):
		return badRequest("compaction_tool_changes_mismatch", where+": The `compaction` block's `tool_changes` differs from what was returned with the block.")
	case was.Encrypted == nil || b.Encrypted == nil || *was.Encrypted != *b.Encrypted:
		return badRequest("compaction_signature_invalid", where+": The `compaction` block's `signature` does not verify.")
	}
	s.stats.Opaque++
	if issued == string(raw) || issued == withoutCache(raw) {
		s.stats.Verbatim++
	}
	return nil
}

// withoutCache returns a block's JSON without a cache_control marker the
// client may add to a block it sends back.
func withoutCache(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return string(raw)
	}
	delete(obj, "cache_control")
	out, _ := json.Marshal(obj)
	return string(out)
}

// pairing applies the API's rule on tool use and returns its message for
// the first violation, or "": the tool_use blocks of an assistant message
// are answered in the next message, and every tool_result answers a
// tool_use of the message before.
func pairing(msgs []message) string {
	for i := range msgs {
		var prev []string
		if i > 0 && msgs[i-1].Role == "assistant" {
			for _, b := range msgs[i-1].read().blocks {
				if b.Type == "tool_use" {
					prev = append(prev, b.ID)
				}
			}
		}
		var answered []string
		for j, b := range msgs[i].read().blocks {
			if b.Type == "tool_result" {
				if msgs[i].Role != "user" || !slices.Contains(prev, b.ToolUseID) {
					return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
						"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
				answered = append(answered, b.ToolUseID)
			}
		}
		if i > 0 && msgs[i-1].Role == "assistant" {
			for _, id := range prev {
				if !slices.Contains(answered, id) {
					return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
						"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
				}
			}
		}
	}
	return ""
}
