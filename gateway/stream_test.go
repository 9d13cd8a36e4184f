package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/histrim/history/internal/race"
)

// streamAPIs are the streamed endpoints of the four APIs, with the shape
// of their events.
var streamAPIs = []struct {
	name, path string
	event      func(i, k int, text string) string
	done       string
}{
	{"chat", "/v1/chat/completions", func(i, k int, text string) string {
		return fmt.Sprintf("data: {\"id\":\"chatcmpl-%d\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", i, text)
	}, "data: {\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"},
	{"responses", "/v1/responses", func(i, k int, text string) string {
		return fmt.Sprintf("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_%d\",\"output_index\":0,\"content_index\":0,\"delta\":%q}\n\n", k, i, text)
	}, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":3}}}\n\n"},
	{"messages", "/v1/messages", func(i, k int, text string) string {
		return fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text)
	}, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":12,\"output_tokens\":3}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	{"gemini", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", func(i, k int, text string) string {
		return fmt.Sprintf("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":%q}]},\"index\":0}]}\r\n\r\n", text)
	}, "data: {\"candidates\":[],\"usageMetadata\":{\"promptTokenCount\":12,\"candidatesTokenCount\":3}}\r\n\r\n"},
}

// streamBody returns the events of stream i of an API: from 1 to 64
// events of 1 to ~4,000 bytes (a few of them large, as a tool call's
// arguments are), then the API's closing events; a deterministic function
// of i.
func streamBody(i int, event func(i, k int, text string) string, done string) []string {
	h := uint32(i)*2654435761 + 12345
	next := func() uint32 { h ^= h << 13; h ^= h >> 17; h ^= h << 5; return h }
	n := 1 + int(next()%64)
	out := make([]string, 0, n+1)
	for k := range n {
		size := 1 + int(next()%40)
		if next()%16 == 0 {
			size = 500 + int(next()%3500)
		}
		text := strings.Repeat(strconv.Itoa(i%10)+"é\"\\\n", size/4+1)[:size]
		out = append(out, event(i, k, text))
	}
	return append(out, done)
}

// streamUpstream is an upstream that answers POST <path>?i=N with stream
// N, flushing after every event, as the APIs do.
func streamUpstream(t *testing.T, path string, event func(i, k int, text string) string, done string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.Error(w, "wrong path "+r.URL.Path, http.StatusNotFound)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		i, _ := strconv.Atoi(r.URL.Query().Get("i"))
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		for _, e := range streamBody(i, event, done) {
			if _, err := io.WriteString(w, e); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// newTestGateway returns a gateway over upstream and its test server.
func newTestGateway(t *testing.T, cfg Config) (*Gateway, *httptest.Server) {
	t.Helper()
	g, err := New(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv
}

// TestStreamsSurvive sends 1,000 streamed requests of each API through the
// gateway, eight at a time over kept-alive connections, and compares each
// body the client reads with the one the upstream wrote, byte for byte: 0
// broken streams (the acceptance of issue 35; a plain
// httputil.ReverseProxy in the same place broke 3-7 of 150). Under the
// race detector, 250 of each.
func TestStreamsSurvive(t *testing.T) {
	const workers = 8
	requests := 1000
	if race.Enabled {
		requests = 250
	}
	for _, api := range streamAPIs {
		t.Run(api.name, func(t *testing.T) {
			up := streamUpstream(t, api.path, api.event, api.done)
			_, gw := newTestGateway(t, Config{Upstream: up.URL})
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
			defer client.CloseIdleConnections()
			var broken, wrong atomic.Int64
			var firstErr sync.Once
			var wg sync.WaitGroup
			jobs := make(chan int)
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range jobs {
						body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"stream ` + strconv.Itoa(i) + `"}]}`
						resp, err := client.Post(gw.URL+api.path+"?i="+strconv.Itoa(i), "application/json", strings.NewReader(body))
						if err != nil {
							broken.Add(1)
							firstErr.Do(func() { t.Errorf("request %d: %v", i, err) })
							continue
						}
						got, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						want := strings.Join(streamBody(i, api.event, api.done), "")
						switch {
						case err != nil:
							broken.Add(1)
							firstErr.Do(func() { t.Errorf("stream %d broke after %d bytes: %v", i, len(got), err) })
						case resp.StatusCode != http.StatusOK || !bytes.Equal(got, []byte(want)):
							wrong.Add(1)
							firstErr.Do(func() { t.Errorf("stream %d: status %d, %d bytes, want %d", i, resp.StatusCode, len(got), len(want)) })
						}
					}
				}()
			}
			for i := range requests {
				jobs <- i
			}
			close(jobs)
			wg.Wait()
			if broken.Load() != 0 || wrong.Load() != 0 {
				t.Fatalf("%d of %d streams broken, %d differ", broken.Load(), requests, wrong.Load())
			}
		})
	}
}

// TestStreamFlushedEventByEvent checks that each event reaches the client
// before the upstream writes the next: the upstream waits for the client
// to have read event k before it writes event k+1, so a gateway that
// buffers would deadlock (the request's deadline then ends it).
func TestStreamFlushedEventByEvent(t *testing.T) {
	read := make(chan int)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for k := range 5 {
			fmt.Fprintf(w, "data: {\"k\":%d}\n\n", k)
			_ = rc.Flush()
			select {
			case <-read:
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer up.Close()
	_, gw := newTestGateway(t, Config{Upstream: up.URL})
	// A bound on the deadlock a buffering gateway would cause, not a wait.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/v1/chat/completions", strings.NewReader(`{"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64)
	for k := range 5 {
		want := fmt.Sprintf("data: {\"k\":%d}\n\n", k)
		if _, err := io.ReadFull(resp.Body, buf[:len(want)]); err != nil {
			t.Fatalf("event %d: %v", k, err)
		}
		if string(buf[:len(want)]) != want {
			t.Fatalf("event %d = %q, want %q", k, buf[:len(want)], want)
		}
		select {
		case read <- k:
		case <-ctx.Done():
			t.Fatalf("event %d: %v", k, ctx.Err())
		}
	}
}
