// Package anthropicserver is a local Messages API for the Anthropic
// adapters' tests: an http.Handler that speaks the wire format to the real
// anthropic-sdk-go clients (v1 and v2) and enforces what the API enforces
// about server-side context management, with the API's real error bodies
// and error codes:
//
//   - compaction (context_management edit compact_20260112): past its
//     trigger it answers with a compaction block first (content,
//     encrypted_content, signature, tool_changes, cache_control), reports
//     the pass in usage.iterations, and reads nothing before the latest
//     compaction block of a request. It checks every compaction and
//     thinking block sent back against the one it issued: signature,
//     content and tool_changes (compaction_signature_invalid,
//     compaction_content_mismatch, compaction_tool_changes_mismatch), the
//     backend that wrote it ("Could not decode the compaction blob"), its
//     placement (compaction_block_misplaced) and empty content;
//   - context editing (clear_tool_uses_20250919): past its trigger it
//     clears the oldest tool results but the last three and reports
//     applied_edits[].cleared_input_tokens;
//   - message threads: thread {"type":"create"} stores the conversation,
//     {"type":"continue"} extends it, and an expired or unknown thread is
//     a 404 thread_not_found;
//   - the beta header of each beta feature a request turns on: a
//     compact_20260112 edit without anthropic-beta compact-2026-01-12,
//     a clear_tool_uses_20250919 or clear_thinking_20251015 edit without
//     context-management-2025-06-27, a thread without
//     message-threads-2026-08-12 is a 400 invalid_request_error (the
//     status and type the API answers for a beta feature asked without
//     its header; the message is this server's);
//   - at most 4 cache_control breakpoints, tool pairing, and the window
//     ("prompt is too long: N tokens > M maximum").
//
// The model is loopserver's script (Play). The server counts a prompt
// with history.Estimate over its own reading of the wire format, and
// counts the prompt-cache prefix rewrites of the conversation by cause:
// the client's (a request that does not extend the previous one) and the
// server's (a compaction, a context edit).
package anthropicserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/loopserver"
)

// Server is the local Messages API. Set its fields before serving; it is
// safe for concurrent use, but it tracks one conversation's cache.
type Server struct {
	// Backend names this server: the opaque blocks it issues are bound
	// to it, and another backend cannot read them.
	Backend string
	// Window is the context window in tokens.
	Window int
	// Thinking makes the model open every reply with a signed thinking
	// block.
	Thinking bool
	// Burst, when positive, makes each tool step of the script call from
	// 1 to Burst tools (loopserver.Bursts) instead of 1 or 2.
	Burst int
	// Judge, when set, counts the prompt instead of history.Estimate and
	// decides whether it fits (an adaptertest.Loop, with its counting
	// mode and window), and hears of every request rejected for its
	// pairing; Window is then the limit the error states.
	Judge loopserver.Judge

	mu      sync.Mutex
	stats   Stats
	issued  map[string]string // signature -> the block's JSON as issued
	tasks   map[string]string // compaction signature -> the task it was in
	threads map[string][]message
	last    *turn
	seen    map[string]*parsed // the previous request's messages read, by content
}

// turn is what the server remembers of the previous request, for the
// cache accounting.
type turn struct {
	sent      []string // the request's prompt, canonical blocks
	reply     []string // the reply, as the next request sends it back
	compacted string   // the compaction block issued, "" if none
}

// Stats counts what the server saw.
type Stats struct {
	// Requests counts every request; Accepted those answered 200;
	// Rejected the others, by error_code (or error type when the error
	// has no code).
	Requests, Accepted int
	Rejected           map[string]int
	// Compactions counts the compaction passes; Edits the requests in
	// which context editing cleared something, ClearedTokens what it
	// cleared.
	Compactions, Edits, ClearedTokens int
	// ClientRewrites counts the requests whose prompt does not extend
	// the previous request's (with its reply), but for the front the
	// server compacted: the client rewrote the cached prefix.
	// ServerRewrites counts the requests in which the server rewrote the
	// prompt (a compaction, a context edit). BothRewrites counts the
	// requests rewritten by both.
	ClientRewrites, ServerRewrites, BothRewrites int
	// Opaque counts the compaction and thinking blocks sent back;
	// Verbatim those sent byte for byte as issued.
	Opaque, Verbatim int
	// MaxBreakpoints is the most cache_control markers one request had.
	MaxBreakpoints int
	// LastPrompt is the server's count of the latest accepted request's
	// prompt, before its edits.
	LastPrompt int
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Rejected = make(map[string]int, len(s.stats.Rejected))
	for k, v := range s.stats.Rejected {
		st.Rejected[k] = v
	}
	return st
}

// ExpireThreads forgets every thread, as the API does about five minutes
// after a thread's last request.
func (s *Server) ExpireThreads() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.threads = nil
}

// apiError is an error answer: the HTTP status, the error type, the
// message, and the error_code of error.details ("" for none).
type apiError struct {
	status    int
	typ, text string
	code      string
}

func badRequest(code, text string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", text: text, code: code}
}

// ServeHTTP answers POST /v1/messages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Requests++
	id := "msg_" + s.Backend + strconv.Itoa(s.stats.Requests)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_"+id)
	body, err := io.ReadAll(r.Body)
	var req request
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if r.URL.Path != "/v1/messages" || err != nil {
		s.reject(w, badRequest("", "malformed request"))
		return
	}
	s.remember(req.Messages)
	aerr := checkBetas(&req, r.Header)
	var out []byte
	if aerr == nil {
		out, aerr = s.answer(&req, id)
	}
	if aerr != nil {
		s.reject(w, aerr)
		return
	}
	s.stats.Accepted++
	_, _ = w.Write(out)
}

// remember reads msgs, taking the reading of a content the previous
// request sent too from it, and keeps their readings for the next
// request: an agent loop resends its history with every request, and
// the server would read it again at each.
func (s *Server) remember(msgs []message) {
	seen := make(map[string]*parsed, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		if m.p = s.seen[string(m.Content)]; m.p == nil {
			m.p = parse(m.Content)
		}
		seen[string(m.Content)] = m.p
	}
	s.seen = seen
}

// reject answers with the API's error body and counts it.
func (s *Server) reject(w http.ResponseWriter, e *apiError) {
	if s.stats.Rejected == nil {
		s.stats.Rejected = map[string]int{}
	}
	key := e.code
	if key == "" {
		key = e.typ
	}
	s.stats.Rejected[key]++
	errBody := map[string]any{"type": e.typ, "message": e.text}
	if e.code != "" {
		errBody["details"] = map[string]string{"error_code": e.code}
	}
	body, _ := json.Marshal(map[string]any{"type": "error", "error": errBody, "request_id": "req_rejected"})
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
}

// answer checks and answers one request: its JSON body, or the error.
func (s *Server) answer(req *request, id string) ([]byte, *apiError) {
	msgs, aerr := s.resolveThread(req)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := s.checkBreakpoints(req, msgs); aerr != nil {
		return nil, aerr
	}
	if aerr := s.checkOpaque(msgs); aerr != nil {
		return nil, aerr
	}
	if why := pairing(msgs); why != "" {
		if s.Judge != nil {
			s.Judge.Unpaired(why)
		}
		return nil, badRequest("", why)
	}
	hist := toHistory(msgs)
	count := s.count(req, hist)
	fits := count <= s.Window
	if s.Judge != nil {
		count, fits = s.judge(req, hist)
	}
	if !fits {
		return nil, badRequest("", "prompt is too long: "+strconv.Itoa(count)+" tokens > "+strconv.Itoa(s.Window)+" maximum")
	}
	s.stats.LastPrompt = count
	edits, cleared := s.clear(req, msgs, count)
	compact := s.compacts(req, count-cleared)
	return s.reply(req, msgs, hist, id, count, edits, cleared, compact), nil
}

// count is the server's count of a prompt: the system prompt and the
// messages (history.Estimate) and the tools.
func (s *Server) count(req *request, hist []history.Message) int {
	return history.Estimate(withSystem(req, hist), nil) + history.EstimateText(tools(req))
}

// withSystem returns hist after the request's system prompt, as one system
// message.
func withSystem(req *request, hist []history.Message) []history.Message {
	var sys []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(req.System, &sys)
	if len(sys) == 0 {
		return hist
	}
	m := history.Message{Role: history.RoleSystem}
	for _, b := range sys {
		m.Content += b.Text
	}
	return append([]history.Message{m}, hist...)
}

// tools returns the request's tools JSON, "" when it has none.
func tools(req *request) string {
	if len(req.Tools) == 0 || string(req.Tools) == "null" {
		return ""
	}
	return string(req.Tools)
}

// judge is the Judge's count of a prompt, and whether it fits: the
// system prompt as a system message, the messages and the tools JSON.
func (s *Server) judge(req *request, hist []history.Message) (int, bool) {
	return s.Judge.Receive(withSystem(req, hist), tools(req), func(text string) bool {
		for i := range hist {
			if hist[i].Role == history.RoleUser && hist[i].Content == text {
				return true
			}
		}
		return false
	})
}

// sign returns the signature the server gives a block's text.
func (s *Server) sign(text string) string {
	h := sha256.Sum256([]byte(s.Backend + "\x00" + text))
	return s.Backend + "." + hex.EncodeToString(h[:12])
}
