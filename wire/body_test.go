package wire

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/retained"
)

// anthropicOverflowBody is the body of Anthropic's HTTP 400 for a request
// over the model's window: the count sent, then the window.
const anthropicOverflowBody = `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"}}`

// refuser is an upstream that keeps every body it is sent and refuses
// each one over its window (a byte's quarter counted as a token) with the
// provider's real 400 body, answering any other with a small response and
// a usage.
type refuser struct {
	window   int
	refusal  func(prompt, window int) string
	answer   string // a %d for the usage's input tokens
	mu       sync.Mutex
	bodies   [][]byte
	refusals int
}

func (u *refuser) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	_ = req.Body.Close()
	u.mu.Lock()
	u.bodies = append(u.bodies, b)
	u.mu.Unlock()
	status, body := http.StatusOK, fmt.Sprintf(u.answer, len(b)/4)
	if len(b)/4 > u.window {
		u.mu.Lock()
		u.refusals++
		u.mu.Unlock()
		status, body = http.StatusBadRequest, u.refusal(len(b)/4, u.window)
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// drainBodies empties the pool of released bodies: what every processor's
// cache of it holds too (two collections: a Pool keeps its items through
// one, in its victim cache).
func drainBodies() {
	runtime.GC()
	runtime.GC()
}

// TestBodyReuse: the body of a request the Transport trimmed goes, once
// the request is done, to a later request's read (release), overwritten
// first in this test (poison), and client loops of each API the package
// trims (chat completions, Messages: one request per user message, each
// resending the transcript up to it) send byte for byte what the same
// loops send when no body is reused (each body's length unstated, so that
// it is read into fresh memory), with the same events: through windows
// that trim and elide, and a provider whose real window is smaller than
// the model's, whose refusals (its real 400 bodies) the Transport
// recovers from. Nothing the Transport keeps past a request (the
// conversations' state, the codecs' memos, the calibration, the events)
// holds a body's bytes: and in a third run of each loop, every body the
// Transport was done with, held weakly, is unreachable once the
// collector ran (retained.Watch). A body sent as it came is never released: Base
// may still read it after RoundTrip returns.
func TestBodyReuse(t *testing.T) {
	was := poison
	poison = true
	defer func() { poison = was }()
	cases := []struct {
		name, path, body string
		refusal          func(prompt, window int) string
		answer           string
	}{
		{"chat", "/v1/chat/completions", chatBody(24, 150),
			func(p, w int) string { return fmt.Sprintf(loopserver.OpenAIOverflowBody, w, p) },
			`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":2}}`},
		{"messages", "/v1/messages", anthropicBody(24, 150),
			func(p, w int) string { return fmt.Sprintf(anthropicOverflowBody, p, w) },
			`{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":%d,"output_tokens":2}}`},
	}
	for _, c := range cases {
		r, err := Parse(c.path, []byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		total := len(c.body) / 4
		for _, window := range []int{total / 3, total / 8} {
			t.Run(c.name+"/"+strconv.Itoa(window), func(t *testing.T) {
				// The provider's window is a third of what the model's row
				// says: the first request over it is refused.
				loop := func(reuse bool) (*refuser, []Event, int) {
					up := &refuser{window: window / 3, refusal: c.refusal, answer: c.answer}
					var evs []Event
					tr := &Transport{Base: up, Logger: quiet(), Models: fixedModel(window),
						OnEvent: func(e Event) { evs = append(evs, e) }}
					defer tr.Close()
					drainBodies()
					reused := 0
					for _, body := range clientBodies(r) {
						req, _ := http.NewRequest(http.MethodPost, "http://upstream"+c.path, bytes.NewReader(body))
						req.Header.Set(ConversationHeader, "reuse")
						if !reuse {
							req.ContentLength = -1 // read whole into fresh memory, never a pooled buffer
						}
						resp, err := tr.RoundTrip(req)
						if err != nil {
							t.Fatal(err)
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						if p, _ := bodies.Get().(*[]byte); p != nil {
							if b := (*p)[:cap(*p)]; !bytes.Equal(b, bytes.Repeat([]byte{0xff}, len(b))) {
								t.Fatal("a released body was not overwritten")
							}
							reused++
							bodies.Put(p)
						}
					}
					return up, evs, reused
				}
				want, wantEvs, _ := loop(false)
				got, gotEvs, reused := loop(true)
				if reused == 0 {
					t.Fatal("no body was released for reuse")
				}
				if want.refusals == 0 {
					t.Fatal("the provider refused nothing: the recovery is not exercised")
				}
				if len(got.bodies) != len(want.bodies) {
					t.Fatalf("%d requests reached the provider, %d without reuse", len(got.bodies), len(want.bodies))
				}
				for i := range want.bodies {
					if !bytes.Equal(got.bodies[i], want.bodies[i]) {
						t.Fatalf("request %d: sent other bytes than without reuse\n%s\nwant\n%s", i, got.bodies[i], want.bodies[i])
					}
				}
				trimmed := 0
				for i := range wantEvs {
					g, w := gotEvs[i], wantEvs[i]
					if g.TokensBefore != w.TokensBefore || g.TokensAfter != w.TokensAfter || g.Sent != w.Sent ||
						g.Overflows != w.Overflows || g.Recovered != w.Recovered || g.Status != w.Status || g.Forwarded != w.Forwarded {
						t.Errorf("event %d: %+v, without reuse %+v", i, g, w)
					}
					if w.Trimmed {
						trimmed++
					}
				}
				t.Logf("%d requests, %d refused, %d trimmed, %d bodies released and seen in the pool", len(want.bodies), want.refusals, trimmed, reused)

				// The same loop once more, each body the Transport is done
				// with held weakly: none is reachable once the collector ran.
				check := retained.Watch(t)
				loop(true)
				if check() == 0 {
					t.Fatal("no body was released: the check watched nothing")
				}
			})
		}
	}

	t.Run("a body sent as it came is not released", func(t *testing.T) {
		tr := &Transport{Base: &refuser{window: 1 << 30, answer: cases[0].answer}, Logger: quiet(), Models: fixedModel(1 << 30)}
		defer tr.Close()
		drainBodies()
		req, _ := http.NewRequest(http.MethodPost, "http://upstream/v1/chat/completions", strings.NewReader(cases[0].body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if p := bodies.Get(); p != nil {
			t.Fatal("the body sent untouched was released for reuse")
		}
	})
}
