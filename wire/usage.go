package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"mime"
	"net/http"
	"sync"
)

// Bounds of what a usage reader keeps: a JSON body is parsed at its end
// when it is at most maxJSONBody bytes (a chat completion's usage comes
// last); an event line of a stream at most maxEventLine bytes (usage
// events are small; a longer line is passed on unread).
const (
	maxJSONBody  = 8 << 20
	maxEventLine = 1 << 20
)

// isSSE reports whether resp is a stream of server-sent events.
func isSSE(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// usageBody is a response body that reads the usage in the bytes as the
// caller reads them: each Read returns what the body's Read returned, at
// once, and the bytes are looked at after they are copied to the caller.
// report is called at most once, with the prompt's count.
type usageBody struct {
	rc     io.ReadCloser
	api    API
	sse    bool
	buf    []byte     // JSON: the body so far; SSE: the line so far
	over   bool       // buf overflowed its bound: nothing more is kept
	found  int        // the prompt's count found in a stream
	mu     sync.Mutex // Close may come during a Read
	once   sync.Once
	report func(reported int)
}

func newUsageBody(rc io.ReadCloser, api API, sse bool, report func(int)) io.ReadCloser {
	return &usageBody{rc: rc, api: api, sse: sse, report: report}
}

// Read reads from the body and looks at what it read.
func (u *usageBody) Read(p []byte) (int, error) {
	n, err := u.rc.Read(p)
	if n > 0 {
		u.mu.Lock()
		u.look(p[:n])
		u.mu.Unlock()
	}
	if err != nil {
		u.finish()
	}
	return n, err
}

// Close closes the body; the usage seen so far is reported.
func (u *usageBody) Close() error {
	u.finish()
	return u.rc.Close()
}

func (u *usageBody) look(b []byte) {
	if !u.sse {
		if !u.over && len(u.buf)+len(b) <= maxJSONBody {
			u.buf = append(u.buf, b...)
		} else {
			u.over, u.buf = true, nil
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			u.keep(b)
			return
		}
		u.keep(b[:i])
		if !u.over {
			u.line(u.buf)
		}
		u.buf, u.over = u.buf[:0], false
		b = b[i+1:]
	}
}

// keep appends b to the line so far, within its bound.
func (u *usageBody) keep(b []byte) {
	if u.over || len(u.buf)+len(b) > maxEventLine {
		u.over, u.buf = true, u.buf[:0]
		return
	}
	u.buf = append(u.buf, b...)
}

// line reads one line of a stream: a data line holding a usage.
func (u *usageBody) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte{'\r'})
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte("oken")) { // "tokens", Gemini's "promptTokenCount"
		return
	}
	if n := promptTokens(u.api, bytes.TrimSpace(data)); n > 0 {
		u.found = n
	}
}

// finish reports the usage found, once.
func (u *usageBody) finish() {
	u.once.Do(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		n := u.found
		if !u.sse && !u.over {
			n = promptTokens(u.api, u.buf)
		}
		u.buf = nil
		if n > 0 {
			u.report(n)
		}
	})
}

// promptTokens returns the prompt's count in a response body or a stream
// event of api, or 0.
func promptTokens(api API, b []byte) int {
	type usage struct {
		PromptTokens int `json:"prompt_tokens"`
		// Anthropic's input is the three together.
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	}
	var v struct {
		Usage   *usage `json:"usage"`
		Message *struct {
			Usage *usage `json:"usage"`
		} `json:"message"` // Anthropic's message_start event
		Response *struct {
			Usage *usage `json:"usage"`
		} `json:"response"` // Responses' response.completed event
		UsageMetadata *struct {
			PromptTokenCount int `json:"promptTokenCount"` // cached content included
		} `json:"usageMetadata"` // Gemini's, in a response and in each streamed chunk
	}
	if api == Gemini {
		if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '[' {
			// :streamGenerateContent without alt=sse: one JSON array of
			// chunks, the last holding the final usage.
			var chunks []json.RawMessage
			if json.Unmarshal(b, &chunks) != nil {
				return 0
			}
			n := 0
			for _, c := range chunks {
				if c = bytes.TrimSpace(c); len(c) == 0 || c[0] != '{' {
					continue
				}
				if k := promptTokens(api, c); k > 0 {
					n = k
				}
			}
			return n
		}
	}
	if json.Unmarshal(b, &v) != nil {
		return 0
	}
	if api == Gemini {
		if v.UsageMetadata == nil {
			return 0
		}
		return max(v.UsageMetadata.PromptTokenCount, 0)
	}
	u := v.Usage
	if u == nil && v.Message != nil {
		u = v.Message.Usage
	}
	if u == nil && v.Response != nil {
		u = v.Response.Usage
	}
	if u == nil {
		return 0
	}
	switch api {
	case AnthropicMessages:
		return satSum(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens)
	case Responses:
		return max(u.InputTokens, 0) // the cached tokens are part of it
	}
	return u.PromptTokens
}

// satSum is the sum of counts, negatives counting 0, saturating at
// math.MaxInt.
func satSum(ns ...int) int {
	total := 0
	for _, n := range ns {
		if n <= 0 {
			continue
		}
		if n > math.MaxInt-total {
			return math.MaxInt
		}
		total += n
	}
	return total
}
