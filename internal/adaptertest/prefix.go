package adaptertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
)

// Prefix counts, among the requests a stand-in server receives, those that
// rewrite the prompt cache's prefix: whose messages (the JSON array under
// Key, element by element as sent) do not start with the messages of the
// request before. A request that only appends to the one before reads its
// whole prefix from the provider's cache; one that rewrites it pays for
// the prompt from the first message that changed. It is safe for
// concurrent use.
type Prefix struct {
	// Key is the request body's key holding the messages: "messages"
	// (Chat Completions, Messages API), "contents" (Gemini), "input"
	// (Responses).
	Key string

	mu       sync.Mutex
	prev     []json.RawMessage
	requests int
	rewrites int
}

// Wrap returns next with every request's body read by p first.
func (p *Prefix) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			p.see(body)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// see records one request's body.
func (p *Prefix) see(body []byte) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return
	}
	var msgs []json.RawMessage
	if json.Unmarshal(req[p.Key], &msgs) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.requests > 0 && !startsWith(msgs, p.prev) {
		p.rewrites++
	}
	p.requests++
	p.prev = msgs
}

// startsWith reports whether msgs starts with prefix, element by element
// (compacted JSON).
func startsWith(msgs, prefix []json.RawMessage) bool {
	if len(prefix) > len(msgs) {
		return false
	}
	for i := range prefix {
		var a, b bytes.Buffer
		if json.Compact(&a, msgs[i]) != nil || json.Compact(&b, prefix[i]) != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			return false
		}
	}
	return true
}

// Counts returns the requests seen and how many of them rewrote the prefix
// of the one before (the first never does).
func (p *Prefix) Counts() (requests, rewrites int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests, p.rewrites
}
