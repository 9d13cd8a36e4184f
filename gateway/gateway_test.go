package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/histrim/history"
)

// recorded is what an upstream received.
type recorded struct {
	method, uri string
	header      http.Header
	body        []byte
}

// recordingUpstream answers every request with a small JSON body and
// records what it received.
func recordingUpstream(t *testing.T) (*httptest.Server, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, recorded{r.Method, r.RequestURI, r.Header.Clone(), b})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_1")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded { mu.Lock(); defer mu.Unlock(); return append([]recorded(nil), got...) }
}

// TestAuthHeadersUntouchedNeverLogged sends the APIs' auth headers (and a
// Gemini key in the query) through the gateway: they arrive byte for
// byte, and no log line holds any of their values.
func TestAuthHeadersUntouchedNeverLogged(t *testing.T) {
	up, got := recordingUpstream(t)
	var logs bytes.Buffer
	g, err := New(context.Background(), Config{Upstream: up.URL + "/base"}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gw := httptest.NewServer(g)
	defer gw.Close()

	secrets := map[string]string{
		"Authorization":       "Bearer sk-proj-SECRET1",        // OpenAI, OpenRouter, vLLM
		"X-Api-Key":           "sk-ant-SECRET2",                // Anthropic
		"X-Goog-Api-Key":      "AIzaSECRET3",                   // Gemini
		"Api-Key":             "azureSECRET4",                  // Azure OpenAI
		"Openai-Organization": "org-SECRET5",                   // sent as is, like the rest
		"Anthropic-Version":   "2023-06-01",                    // not a secret; must arrive
		"Anthropic-Beta":      "context-management-2025-06-27", // idem
	}
	cases := []struct{ path, query string }{
		{"/v1/chat/completions", ""},
		{"/v1/responses", ""},
		{"/v1/messages", ""},
		{"/v1beta/models/gemini-2.5-flash:generateContent", "key=AIzaQUERYSECRET6"},
	}
	for _, c := range cases {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"unknown":{"kept":[1,2.50,"\u00e9"]}}`
		u := gw.URL + c.path
		if c.query != "" {
			u += "?" + c.query
		}
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		for k, v := range secrets {
			req.Header.Set(k, v)
		}
		req.Header.Set("Connection", "X-Hop")
		req.Header.Set("X-Hop", "dropped")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(rb) != `{"ok":true}` || resp.Header.Get("X-Request-Id") != "req_1" {
			t.Fatalf("%s: %d %q %v", c.path, resp.StatusCode, rb, resp.Header)
		}
		r := got()[len(got())-1]
		wantURI := "/base" + c.path
		if c.query != "" {
			wantURI += "?" + c.query
		}
		if r.uri != wantURI {
			t.Errorf("upstream got %s, want %s", r.uri, wantURI)
		}
		for k, v := range secrets {
			if vs := r.header.Values(k); len(vs) != 1 || vs[0] != v {
				t.Errorf("%s: header %s arrived as %q, want %q", c.path, k, vs, v)
			}
		}
		if r.header.Get("X-Hop") != "" {
			t.Errorf("%s: the hop-by-hop header X-Hop (named in Connection) was forwarded", c.path)
		}
		if string(r.body) != body {
			t.Errorf("%s: body arrived as %q", c.path, r.body)
		}
	}
	gw.Close() // waits for the handlers: every line is logged
	out := logs.String()
	if !strings.Contains(out, "gateway: request") {
		t.Fatalf("no request was logged: %q", out)
	}
	for _, v := range append(mapValues(secrets), "AIzaQUERYSECRET6") {
		if strings.Contains(v, "SECRET") && strings.Contains(out, v) {
			t.Errorf("the log holds %q:\n%s", v, out)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestBodyLimit: a body over MaxBodyBytes gets 413 whether its length is
// declared or not, and one at the limit passes.
func TestBodyLimit(t *testing.T) {
	up, got := recordingUpstream(t)
	_, gw := newTestGateway(t, Config{Upstream: up.URL, MaxBodyBytes: 1000})
	cases := []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"at the limit, declared", 1000, false, 200},
		{"over, declared: refused before the upstream", 1001, false, 413},
		{"over, chunked: refused as it is read", 5000, true, 413},
		{"at the limit, chunked", 1000, true, 200},
	}
	for _, c := range cases {
		var body io.Reader = strings.NewReader(strings.Repeat("x", c.size))
		if c.chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
		before := len(got())
		resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", body)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d (%s), want %d", c.name, resp.StatusCode, b, c.want)
		}
		if c.want == 413 && !c.chunked && len(got()) != before {
			t.Errorf("%s: the upstream was called", c.name)
		}
	}
}

// TestUpstreamFailures: an upstream that does not answer in time gets
// 504, one that cannot be reached 502, and one that breaks off mid-body
// leaves the client with a broken body, not a complete one.
func TestUpstreamFailures(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	_, gw := newTestGateway(t, Config{Upstream: slow.URL, UpstreamTimeout: 50 * time.Millisecond})
	resp, err := http.Post(gw.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("slow upstream: status %d, want 504", resp.StatusCode)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	_, gw2 := newTestGateway(t, Config{Upstream: dead})
	resp, err = http.Post(gw2.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("unreachable upstream: status %d, want 502", resp.StatusCode)
	}

	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"first\":1}\n\n")
		_ = http.NewResponseController(w).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // mid-chunked body
		}
	}))
	defer cut.Close()
	_, gw3 := newTestGateway(t, Config{Upstream: cut.URL})
	resp, err = http.Post(gw3.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("a stream the upstream broke off read as complete: %q", b)
	}
	if !strings.HasPrefix(string(b), "data: {\"first\":1}") {
		t.Errorf("the event before the break was lost: %q", b)
	}
}

// TestHealthzAndMetrics: /healthz answers ok; /metrics is the Prometheus
// text format, every counter present from the start, requests counted by
// API and status.
func TestHealthzAndMetrics(t *testing.T) {
	up, _ := recordingUpstream(t)
	g, gw := newTestGateway(t, Config{Upstream: up.URL})
	get := func(path string) (int, string) {
		resp, err := http.Get(gw.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	for range 2 {
		resp, _ := http.Post(gw.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{}`))
		resp.Body.Close()
	}
	resp, _ := http.Post(gw.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
	resp.Body.Close()
	g.metrics.add(mStoreErrors, "", 1)
	g.metrics.add(mTokensBefore, apiChat, 1234)

	_, text := get("/metrics")
	line := regexp.MustCompile(`^[a-z_]+(\{[a-z]+="[^"]*"(,[a-z]+="[^"]*")*\})? [0-9]+$`)
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !strings.HasPrefix(l, "# HELP ") && !strings.HasPrefix(l, "# TYPE ") && !line.MatchString(l) {
			t.Errorf("not a Prometheus sample line: %q", l)
		}
	}
	for _, want := range []string{
		`histrim_gateway_requests_total{api="chat",code="200"} 2`,
		`histrim_gateway_requests_total{api="messages",code="200"} 1`,
		`histrim_gateway_tokens_before_total{api="chat"} 1234`,
		`histrim_gateway_tokens_after_total{api="gemini"} 0`,
		`histrim_gateway_trims_total{api="responses"} 0`,
		`histrim_gateway_overflows_recovered_total{api="messages"} 0`,
		`histrim_gateway_prefix_rewrites_total 0`,
		`histrim_gateway_store_errors_total 1`,
		"# TYPE histrim_gateway_trims_total counter",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, text)
		}
	}
}

// TestUnknownAPIWithoutUpstream: with no upstream set, a path of no known
// API gets 404 rather than going anywhere.
func TestUnknownAPIWithoutUpstream(t *testing.T) {
	_, gw := newTestGateway(t, Config{})
	resp, err := http.Post(gw.URL+"/v1/embeddings", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", resp.StatusCode)
	}
}

// TestGracefulShutdown: a stream in flight when the shutdown begins
// finishes whole; the gateway then stops and refuses new connections.
func TestGracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		_ = http.NewResponseController(w).Flush()
		<-release
		_, _ = io.WriteString(w, "data: 2\n\ndata: [DONE]\n\n")
	}))
	defer up.Close()
	g, err := New(context.Background(), Config{Upstream: up.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	shutdown := make(chan struct{})
	g.onShutdown = func() { close(shutdown) }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()

	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if l, _ := br.ReadString('\n'); l != "data: 1\n" {
		t.Fatalf("first line %q", l)
	}
	cancel()
	<-shutdown
	close(release)
	rest, err := io.ReadAll(br)
	resp.Body.Close()
	if err != nil || string(rest) != "\ndata: 2\n\ndata: [DONE]\n\n" {
		t.Fatalf("the stream in flight did not finish: %q, %v", rest, err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the gateway still accepts connections after its shutdown")
	}
}

// TestConfigEnvAndFlags: the environment sets the settings, flags
// override it, and a bad value is a *ConfigError naming its setting.
func TestConfigEnvAndFlags(t *testing.T) {
	env := map[string]string{
		"HISTRIM_ADDR":             "127.0.0.1:9999",
		"HISTRIM_UPSTREAM":         "http://env.example:8000/v1",
		"HISTRIM_MAX_BODY_BYTES":   "4096",
		"HISTRIM_UPSTREAM_TIMEOUT": "90s",
	}
	var c Config
	if err := c.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse([]string{"-upstream", "http://flag.example", "-store", "memory:"}); err != nil {
		t.Fatal(err)
	}
	want := Config{Addr: "127.0.0.1:9999", Upstream: "http://flag.example", Store: "memory:", MaxBodyBytes: 4096, UpstreamTimeout: 90 * time.Second}
	if c != want {
		t.Errorf("config %+v, want %+v", c, want)
	}

	bad := []struct {
		name, env, value, setting string
	}{
		{"a size that is not a number", "HISTRIM_MAX_BODY_BYTES", "32MB", "HISTRIM_MAX_BODY_BYTES"},
		{"a negative size", "HISTRIM_MAX_BODY_BYTES", "-1", "HISTRIM_MAX_BODY_BYTES"},
		{"a duration without unit", "HISTRIM_IDLE_TIMEOUT", "30", "HISTRIM_IDLE_TIMEOUT"},
	}
	for _, b := range bad {
		var c Config
		err := c.ApplyEnv(func(k string) string {
			if k == b.env {
				return b.value
			}
			return ""
		})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Setting != b.setting {
			t.Errorf("%s: error %v, want a *ConfigError for %s", b.name, err, b.setting)
		}
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"an upstream without scheme", Config{Upstream: "localhost:8000"}},
		{"an upstream of another scheme", Config{Upstream: "ftp://x"}},
		{"a store without scheme", Config{Store: "/var/lib/histrim"}},
	} {
		var ce *ConfigError
		if _, err := New(context.Background(), c.cfg, nil); !errors.As(err, &ce) {
			t.Errorf("%s: error %v, want a *ConfigError", c.name, err)
		}
	}
}

// closingStore is a StateStore with a Close method that counts its calls.
type closingStore struct {
	history.MemoryStateStore
	u      *url.URL
	closed int
}

func (s *closingStore) Close() error { s.closed++; return nil }

// TestStoreRegistry: a registered scheme's opener gets the store URL and
// its store is closed once with the gateway; an unregistered scheme is
// ErrUnknownStore, and the passwords of store URLs stay out of errors.
func TestStoreRegistry(t *testing.T) {
	var opened *closingStore
	RegisterStore("teststore", func(_ context.Context, u *url.URL) (history.StateStore, error) {
		opened = &closingStore{u: u}
		return opened, nil
	})
	defer RegisterStore("teststore", nil)
	g, err := New(context.Background(), Config{Store: "teststore://user:pw@host:1/db?x=1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opened == nil || opened.u.Host != "host:1" || opened.u.Path != "/db" {
		t.Fatalf("opener got %+v", opened)
	}
	g.Close()
	g.Close()
	if opened.closed != 1 {
		t.Errorf("store closed %d times, want 1", opened.closed)
	}
	_, err = New(context.Background(), Config{Store: "nosuch://user:hunter2@host"}, nil)
	if !errors.Is(err, ErrUnknownStore) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unknown scheme: %v", err)
	}
	RegisterStore("failing", func(context.Context, *url.URL) (history.StateStore, error) {
		return nil, errors.New("refused")
	})
	defer RegisterStore("failing", nil)
	if _, err := New(context.Background(), Config{Store: "failing://u:hunter2@h"}, nil); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("failing opener: %v", err)
	}
}

// TestTarget: the upstream's path prefix and the request's path and query
// join as a client pointed at the gateway expects.
func TestTarget(t *testing.T) {
	cases := []struct {
		why, upstream, path, query, want string
	}{
		{"no prefix", "http://u:1", "/v1/chat/completions", "", "http://u:1/v1/chat/completions"},
		{"prefix, as OpenRouter's /api", "https://openrouter.example/api", "/v1/chat/completions", "", "https://openrouter.example/api/v1/chat/completions"},
		{"prefix with a slash", "http://u:1/p/", "/v1/messages", "", "http://u:1/p/v1/messages"},
		{"Gemini's key in the query", "http://u:1", "/v1beta/models/g:generateContent", "key=k&alt=sse", "http://u:1/v1beta/models/g:generateContent?key=k&alt=sse"},
		{"no upstream: OpenAI", "", "/v1/responses", "", "https://api.openai.com/v1/responses"},
		{"no upstream: Anthropic", "", "/v1/messages", "", "https://api.anthropic.com/v1/messages"},
	}
	for _, c := range cases {
		g, err := New(context.Background(), Config{Upstream: c.upstream}, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := &url.URL{Path: c.path, RawQuery: c.query}
		if got := g.target(in, apiOf(c.path)); got == nil || got.String() != c.want {
			t.Errorf("%s: %v, want %s", c.why, got, c.want)
		}
	}
}
