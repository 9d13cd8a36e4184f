package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/models"
)

// recorder is an upstream that records every body it receives and
// answers with answer.
type recorder struct {
	mu     sync.Mutex
	bodies [][]byte
	heads  []http.Header
	answer func(w http.ResponseWriter, body []byte, n int)
}

func (s *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, b)
	s.heads = append(s.heads, r.Header.Clone())
	n := len(s.bodies)
	s.mu.Unlock()
	s.answer(w, b, n)
}

func okAnswer(prompt int) func(w http.ResponseWriter, body []byte, n int) {
	return func(w http.ResponseWriter, _ []byte, _ int) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":%d}}`, prompt)
	}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// fixedModel resolves every name but "unknown" to a model of window.
func fixedModel(window int) func(context.Context, string) (models.Model, error) {
	return func(_ context.Context, name string) (models.Model, error) {
		if name == "unknown" {
			return models.Lookup("no-such-model-anywhere")
		}
		return models.Model{Name: name, Window: window}, nil
	}
}

func post(t *testing.T, tr http.RoundTripper, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestForwardUntouched checks the requests the Transport must not
// change, each for its reason: they arrive byte for byte.
func TestForwardUntouched(t *testing.T) {
	big := chatBody(30, 300) // far over the window of 2,000
	cases := []struct {
		name, path, body string
		forwarded        bool // an Event says it was forwarded
	}{
		{"another API's path", "/v1/embeddings", `{"model":"m","input":"x"}`, false},
		{"an unknown model is never guessed", "/v1/chat/completions", strings.Replace(big, `"gpt-4.1"`, `"unknown"`, 1), true},
		{"a body that is not JSON", "/v1/chat/completions", `{"model":"m","messages":[`, true},
		{"a message that does not convert", "/v1/chat/completions", `{"model":"m","messages":[{"role":"critic","content":"` + strings.Repeat("x ", 5000) + `"}]}`, true},
		{"a request within the window", "/v1/chat/completions", chatBody(1, 10), false},
		{"responses, whose codec no adapter registered in this program", "/v1/responses",
			`{"model":"m","input":[{"role":"user","content":"` + strings.Repeat("x ", 5000) + `"}]}`, true},
		{"gemini, whose codec no adapter registered in this program", "/v1beta/models/m:generateContent",
			`{"contents":[{"role":"user","parts":[{"text":"` + strings.Repeat("x ", 5000) + `"}]}]}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := &recorder{answer: okAnswer(10)}
			ts := httptest.NewServer(up)
			defer ts.Close()
			var evs []Event
			tr := &Transport{Models: fixedModel(2_000), Logger: quiet(), OnEvent: func(e Event) { evs = append(evs, e) }}
			post(t, tr, ts.URL+c.path, c.body, "Authorization", "Bearer sk-secret")
			if len(up.bodies) != 1 || string(up.bodies[0]) != c.body {
				t.Fatalf("upstream got %d bodies, the first changed", len(up.bodies))
			}
			if up.heads[0].Get("Authorization") != "Bearer sk-secret" {
				t.Error("the auth header did not pass untouched")
			}
			if c.forwarded && (len(evs) != 1 || !evs[0].Forwarded || evs[0].Err == nil) {
				t.Errorf("events %+v, want one saying forwarded, with the reason", evs)
			}
			if (Detect(c.path) == Responses || Detect(c.path) == Gemini) && (len(evs) != 1 || !errors.Is(evs[0].Err, ErrNotRegistered)) {
				t.Errorf("events %+v, want one whose Err wraps ErrNotRegistered", evs)
			}
		})
	}
}

// TestOverflowRetry: a provider that refuses every request over its
// window with OpenAI's real 400 body, under a model whose window the
// table states too large. The Transport resends smaller each time, never
// what was refused, and the caller sees the success; a provider whose
// window nothing fits gets at most MaxRetries+1 requests, none repeated,
// and the caller sees its answer.
func TestOverflowRetry(t *testing.T) {
	for _, c := range []struct {
		name           string
		window         int // the provider's real window
		wantStatus     int
		maxRequests    int
		checkDecreases bool
	}{
		{"recovers", 9_000, 200, 3, true},
		{"cannot fit: the provider's answer", 10, 400, 1 + DefaultMaxRetries, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := &recorder{}
			up.answer = func(w http.ResponseWriter, body []byte, _ int) {
				n := len(body) / 4 // the provider's count
				if n > c.window {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					fmt.Fprintf(w, loopserver.OpenAIOverflowBody, c.window, n)
					return
				}
				okAnswer(n)(w, body, 0)
			}
			ts := httptest.NewServer(up)
			defer ts.Close()
			var evs []Event
			tr := &Transport{Models: fixedModel(200_000), Logger: quiet(), OnEvent: func(e Event) { evs = append(evs, e) }}
			resp, body := post(t, tr, ts.URL+"/v1/chat/completions", chatBody(40, 300))
			if resp.StatusCode != c.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.wantStatus, body)
			}
			if len(up.bodies) > c.maxRequests || len(up.bodies) < 2 {
				t.Fatalf("%d requests, want 2 to %d", len(up.bodies), c.maxRequests)
			}
			for i := 1; i < len(up.bodies); i++ {
				if len(up.bodies[i]) >= len(up.bodies[i-1]) {
					t.Errorf("request %d (%d bytes) is not smaller than the refused one (%d)", i, len(up.bodies[i]), len(up.bodies[i-1]))
				}
			}
			if c.wantStatus == 400 && !bytes.Contains(body, []byte("context_length_exceeded")) {
				t.Errorf("the caller did not get the provider's answer: %s", body)
			}
			if len(evs) != 1 || evs[0].Overflows == 0 {
				t.Errorf("events %+v", evs)
			}
		})
	}
}

// TestStreamNotDelayed: the upstream sends one event and waits until the
// caller has read it before it sends the usage: the Transport hands each
// byte on as it comes (a transport that buffered the stream for its usage
// would deadlock here), and the usage reaches the Calibration.
func TestStreamNotDelayed(t *testing.T) {
	read := make(chan struct{})
	up := &recorder{answer: func(w http.ResponseWriter, _ []byte, _ int) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-read
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1234,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}}
	ts := httptest.NewServer(up)
	defer ts.Close()
	tr := &Transport{Models: fixedModel(100_000), Logger: quiet()}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"`+strings.Repeat("word ", 1000)+`"}]}`))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	var got []byte
	for !bytes.Contains(got, []byte("\n\n")) {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	close(read)
	rest, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(rest, []byte("[DONE]")) {
		t.Fatalf("stream ended early: %s", rest)
	}
	md := tr.model(context.Background(), ChatCompletions, "m")
	if n := md.observations(); n != 1 {
		t.Errorf("the Calibration observed %d responses, want 1", n)
	}
}

// TestSilentTruncation: an upstream that reports a prompt far smaller
// than was sent (Ollama over its num_ctx) gets an Event saying so, its
// count does not teach the Calibration, and the next request of the
// model is trimmed below the window it showed.
func TestSilentTruncation(t *testing.T) {
	up := &recorder{answer: okAnswer(2048)}
	ts := httptest.NewServer(up)
	defer ts.Close()
	var evs []Event
	var mu sync.Mutex
	tr := &Transport{Models: fixedModel(128_000), Logger: quiet(), OnEvent: func(e Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }}
	body := chatBody(20, 200) // about 12k tokens
	// Two responses in a row show the same truncation: the window is
	// learnt from the second.
	post(t, tr, ts.URL+"/v1/chat/completions", body)
	post(t, tr, ts.URL+"/v1/chat/completions", body)
	mu.Lock()
	var trunc []Event
	for i := range evs {
		if evs[i].Kind == EventTruncation {
			trunc = append(trunc, evs[i])
		}
	}
	mu.Unlock()
	if len(trunc) != 2 || !trunc[0].Truncated || trunc[0].Reported != 2048 || trunc[0].Learnt || !trunc[1].Learnt {
		t.Fatalf("truncation events %+v: want two, the second learning the window", trunc)
	}
	md := tr.model(context.Background(), ChatCompletions, "gpt-4.1")
	if n := md.observations(); n != 0 {
		t.Errorf("the truncated count taught the Calibration (%d observations)", n)
	}
	post(t, tr, ts.URL+"/v1/chat/completions", body)
	r, err := Parse("/v1/chat/completions", up.bodies[2])
	if err != nil {
		t.Fatal(err)
	}
	if len(r.items) >= 1+4*20 {
		t.Errorf("the request after the truncation was not trimmed: %d messages", len(r.items))
	}
	var last Event
	for _, e := range evs {
		if e.Kind == EventRequest {
			last = e
		}
	}
	if last.Budget > 2048 || last.TokensAfter > 2048 {
		t.Errorf("budget %d, sent %d: not within the window the truncation showed", last.Budget, last.TokensAfter)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(up.bodies[1], &probe) != nil {
		t.Fatal("invalid body")
	}
}

func (md *model) observations() int {
	md.mu.Lock()
	defer md.mu.Unlock()
	return md.observed
}

// TestModelsRetried: a model the table does not know is remembered as
// unknown, but a discovery that failed (a local server not up yet) is
// asked again on the next request, which is then trimmed.
func TestModelsRetried(t *testing.T) {
	up := &recorder{answer: okAnswer(10)}
	ts := httptest.NewServer(up)
	defer ts.Close()
	calls := 0
	var evs []Event
	tr := &Transport{Logger: quiet(), OnEvent: func(e Event) {
		if e.Kind == EventRequest {
			evs = append(evs, e)
		}
	},
		Models: func(_ context.Context, name string) (models.Model, error) {
			calls++
			if calls == 1 {
				return models.Model{}, fmt.Errorf("discover: connection refused")
			}
			return models.Model{Name: name, Window: 2_000}, nil
		}}
	body := chatBody(20, 100)
	post(t, tr, ts.URL+"/v1/chat/completions", body)
	post(t, tr, ts.URL+"/v1/chat/completions", body)
	if len(evs) != 2 || !evs[0].Forwarded || evs[1].Forwarded || !evs[1].Trimmed {
		t.Fatalf("events %+v: want the first forwarded, the second trimmed", evs)
	}
}

// TestConversationKey checks where a request's conversation key comes
// from, in order, with the reason for each case; the header never
// reaches the upstream.
func TestConversationKey(t *testing.T) {
	opening := `{"role":"system","content":"s"},{"role":"user","content":"first"}`
	cases := []struct {
		name, header, body, wantFrom, wantKey string
	}{
		{"the header wins", "conv-1", `{"model":"m","prompt_cache_key":"pk","messages":[` + opening + `]}`, KeyHeader, "conv-1"},
		{"prompt_cache_key", "", `{"model":"m","prompt_cache_key":"pk","user":"u","messages":[` + opening + `]}`, KeyRequest, "pk"},
		{"user when no cache key", "", `{"model":"m","user":"u","messages":[` + opening + `]}`, KeyRequest, "u"},
		{"Anthropic's metadata.user_id", "", `{"model":"m","max_tokens":10,"metadata":{"user_id":"au"},"messages":[{"role":"user","content":"x"}]}`, KeyRequest, "au"},
		{"the opening otherwise", "", `{"model":"m","messages":[` + opening + `]}`, KeyOpening, ""},
	}
	var openingKey string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := &recorder{answer: okAnswer(10)}
			ts := httptest.NewServer(up)
			defer ts.Close()
			var ev Event
			tr := &Transport{Models: fixedModel(100_000), Logger: quiet(), OnEvent: func(e Event) { ev = e }}
			path := "/v1/chat/completions"
			if strings.Contains(c.body, "metadata") {
				path = "/v1/messages"
			}
			var h []string
			if c.header != "" {
				h = []string{ConversationHeader, c.header}
			}
			post(t, tr, ts.URL+path, c.body, h...)
			if ev.KeyFrom != c.wantFrom || (c.wantKey != "" && ev.Conversation != c.wantKey) {
				t.Errorf("key %q from %q, want %q from %q", ev.Conversation, ev.KeyFrom, c.wantKey, c.wantFrom)
			}
			if up.heads[0].Get(ConversationHeader) != "" {
				t.Error("the conversation header reached the upstream")
			}
			if c.wantFrom == KeyOpening {
				openingKey = ev.Conversation
				// The same conversation a turn later: the same key.
				post(t, tr, ts.URL+path, `{"model":"m","messages":[`+opening+`,{"role":"assistant","content":"a"},{"role":"user","content":"second"}]}`)
				if ev.Conversation != openingKey {
					t.Errorf("the next turn's key %q differs from %q", ev.Conversation, openingKey)
				}
			}
		})
	}
}

// TestTruncationProviders: a count far below what was sent teaches the
// window only for a provider that may truncate silently (a local server,
// a model the caller described); for a hosted provider that refuses an
// over-long prompt with an error it can only be a misread usage, and the
// Event says so without changing later budgets.
func TestTruncationProviders(t *testing.T) {
	for _, c := range []struct {
		provider string
		learn    bool
	}{
		{"ollama", true}, {"", true}, {"meta", true}, {"openai", false}, {"anthropic", false},
	} {
		t.Run(c.provider, func(t *testing.T) {
			up := &recorder{answer: okAnswer(2048)}
			ts := httptest.NewServer(up)
			defer ts.Close()
			var trunc []Event
			tr := &Transport{Logger: quiet(), OnEvent: func(e Event) {
				if e.Kind == EventTruncation {
					trunc = append(trunc, e)
				}
			}, Models: func(_ context.Context, name string) (models.Model, error) {
				return models.Model{Name: name, Provider: c.provider, Window: 128_000}, nil
			}}
			post(t, tr, ts.URL+"/v1/chat/completions", chatBody(20, 200))
			post(t, tr, ts.URL+"/v1/chat/completions", chatBody(20, 200))
			if len(trunc) != 2 || trunc[0].Learnt || trunc[1].Learnt != c.learn {
				t.Fatalf("truncation events %+v, want two, the second with Learnt %v", trunc, c.learn)
			}
			md := tr.model(context.Background(), ChatCompletions, "gpt-4.1")
			if got := md.budget(&Request{}); (got < 2048) != c.learn {
				t.Errorf("budget %d after the truncation", got)
			}
		})
	}
}

// TestCachedPromptNotTruncation: a server that counts only the part of
// the prompt its cache did not hold (Ollama's prompt_eval_count) reports
// far less than was sent on every request of a conversation, each time a
// different count: reported, never learnt as the window.
func TestCachedPromptNotTruncation(t *testing.T) {
	counts := []int{2100, 3300, 2500, 4100, 2900}
	up := &recorder{}
	up.answer = func(w http.ResponseWriter, body []byte, n int) { okAnswer(counts[(n-1)%len(counts)])(w, body, n) }
	ts := httptest.NewServer(up)
	defer ts.Close()
	learnt := 0
	tr := &Transport{Logger: quiet(), OnEvent: func(e Event) {
		if e.Learnt {
			learnt++
		}
	}, Models: func(_ context.Context, name string) (models.Model, error) {
		return models.Model{Name: name, Provider: "ollama", Window: 128_000}, nil
	}}
	for range counts {
		post(t, tr, ts.URL+"/v1/chat/completions", chatBody(20, 200))
	}
	if learnt > 0 {
		t.Errorf("a window was learnt from counts that do not agree")
	}
}
