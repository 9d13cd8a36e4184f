package models

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixture returns a file of testdata (see testdata/README.md).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edit returns a fixture with old replaced by new, failing when old is
// not in it (so a fixture change cannot silently void a test).
func edit(t testing.TB, b []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("fixture lacks %q", old)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

// route is one endpoint of a stand-in server: "GET /api/ps".
type routes map[string]http.HandlerFunc

// body answers with a status and a JSON body.
func body(status int, b []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(b)
	}
}

// standIn serves routes and answers 404 elsewhere, as the servers do for
// paths they do not have. It records the requests it gets.
type standIn struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func serve(t testing.TB, rs routes) *standIn {
	s := &standIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Method + " " + r.URL.Path
		s.mu.Lock()
		s.seen = append(s.seen, key)
		s.mu.Unlock()
		if h, ok := rs[key]; ok {
			h(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// ollama is a stand-in Ollama with the given /api/show and /api/ps answers.
func ollama(t testing.TB, show, ps http.HandlerFunc) *standIn {
	return serve(t, routes{
		"GET /api/version": body(200, fixture(t, "ollama/version.json")),
		"POST /api/show":   show,
		"GET /api/ps":      ps,
	})
}

// discover calls Discover with a bounded context and checks what every
// answer must satisfy.
func discover(t *testing.T, base, model string) (Model, error) {
	t.Helper()
	m, err := Discover(context.Background(), nil, base, model)
	if err != nil {
		var de *DiscoverError
		if !errors.As(err, &de) || de.URL != base || de.Model != model {
			t.Fatalf("error %v is not a *DiscoverError for %q at %q", err, model, base)
		}
		if !strings.HasPrefix(err.Error(), "history/models: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
		if m != (Model{}) {
			t.Errorf("Discover returned %+v with its error", m)
		}
		return m, err
	}
	if m.Window < 1 || m.Window > maxTokens || m.Output < 0 || m.Checked != "" || m.Source == "" {
		t.Errorf("Discover returned %+v: window out of range, or source/checked wrong", m)
	}
	return m, nil
}

type want struct {
	server string
	window int
	output int
	source string // path the window came from
	err    error
}

func check(t *testing.T, base string, m Model, err error, w want) {
	t.Helper()
	if w.err != nil {
		if !errors.Is(err, w.err) {
			t.Fatalf("error %v, want %v", err, w.err)
		}
		var de *DiscoverError
		if errors.As(err, &de) && de.Server != w.server {
			t.Errorf("error names server %q, want %q", de.Server, w.server)
		}
		return
	}
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if m.Provider != w.server || m.Window != w.window || m.Output != w.output {
		t.Errorf("got %s window %d output %d, want %s window %d output %d", m.Provider, m.Window, m.Output, w.server, w.window, w.output)
	}
	if w.source != "" && m.Source != base+w.source {
		t.Errorf("source %q, want %q", m.Source, base+w.source)
	}
}

func TestDiscoverOllama(t *testing.T) {
	show := fixture(t, "ollama/show.json") // llama.context_length 8192, no num_ctx
	cases := []struct {
		name, model string
		show, ps    http.HandlerFunc
		want        want
	}{
		{"loaded: the context /api/ps reports", "llava", body(200, show), body(200, fixture(t, "ollama/ps_context.json")),
			want{server: "ollama", window: 8192, source: "/api/ps"}},
		{"loaded, named with its tag and in another case", "LLaVA:latest", body(200, show), body(200, fixture(t, "ollama/ps_context.json")),
			want{server: "ollama", window: 8192, source: "/api/ps"}},
		{"not loaded, Modelfile num_ctx", "llava", body(200, fixture(t, "ollama/show_num_ctx.json")), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", window: 2048, source: "/api/show"}},
		{"not loaded, no num_ctx: the smallest default", "llava", body(200, show), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", window: UnloadedWindow, source: "/api/show"}},
		{"not loaded, model smaller than the default", "llava", body(200, edit(t, show, `"llama.context_length": 8192`, `"llama.context_length": 2048`)), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", window: 2048, source: "/api/show"}},
		{"num_ctx above the model's maximum is capped", "llava", body(200, edit(t, fixture(t, "ollama/show_num_ctx.json"), "num_ctx                        2048", "num_ctx                        65536")), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", window: 8192}},
		{"older server: /api/ps without context_length", "mistral", body(200, show), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", window: UnloadedWindow}},
		{"/api/ps fails: fall back to /api/show", "llava", body(200, fixture(t, "ollama/show_num_ctx.json")), body(500, []byte(`{"error":"boom"}`)),
			want{server: "ollama", window: 2048}},
		{"/api/ps hostile: negative and huge counts ignored", "llava", body(200, show), body(200, []byte(`{"models":[{"name":"llava:latest","context_length":-5},{"name":"llava","context_length":1e300}]}`)),
			want{server: "ollama", window: UnloadedWindow}},
		{"/api/ps not JSON", "llava", body(200, show), body(200, []byte(`<html>`)),
			want{server: "ollama", window: UnloadedWindow}},
		{"architecture missing: any *.context_length", "llava", body(200, edit(t, show, `"general.architecture": "llama",`, ``)), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", window: UnloadedWindow}},
		{"model not pulled", "llava", body(404, fixture(t, "ollama/show_not_found.json")), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", err: ErrModelNotFound}},
		{"empty model name: Ollama answers 400", "", body(400, []byte(`{"error":"model is required"}`)), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", err: ErrModelNotFound}},
		{"/api/show fails", "llava", body(500, []byte(`{"error":"boom"}`)), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", err: ErrNoWindow}},
		{"context length of the wrong type, not loaded", "llava", body(200, edit(t, show, `"llama.context_length": 8192`, `"llama.context_length": "8192"`)), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", err: ErrNoWindow}},
		{"parameters of the wrong type are ignored", "llava", body(200, edit(t, show, `"parameters": "num_keep`, `"parameters": 42, "x": "num_keep`)), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", window: UnloadedWindow}},
		{"/api/show not JSON", "llava", body(200, []byte("not json")), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", err: ErrNoWindow}},
		{"model_info missing and not loaded", "llava", body(200, []byte(`{"parameters":"num_keep 24"}`)), body(200, fixture(t, "ollama/ps.json")),
			want{server: "ollama", err: ErrNoWindow}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ollama(t, tc.show, tc.ps)
			for _, base := range []string{s.URL, s.URL + "/", s.URL + "/v1", s.URL + "/api"} {
				m, err := discover(t, base, tc.model)
				check(t, s.URL, m, err, tc.want)
			}
		})
	}
}

func TestDiscoverOllamaNotFoundNamesTheRemedy(t *testing.T) {
	s := ollama(t, body(404, fixture(t, "ollama/show_not_found.json")), body(200, fixture(t, "ollama/ps.json")))
	_, err := discover(t, s.URL, "qwen3:8b")
	if err == nil || !strings.Contains(err.Error(), "ollama pull qwen3:8b") {
		t.Fatalf("error %v does not name the remedy", err)
	}
}

func TestDiscoverLMStudio(t *testing.T) {
	list := fixture(t, "lmstudio/models.json")
	cases := []struct {
		name, model string
		list        []byte
		want        want
	}{
		{"loaded: loaded_context_length", "meta-llama-3.1-8b-instruct", list, want{server: "lmstudio", window: 16384, source: "/api/v0/models"}},
		{"not loaded: the smallest default", "qwen2-vl-7b-instruct", list, want{server: "lmstudio", window: UnloadedWindow}},
		{"not loaded, model smaller than the default", "text-embedding-nomic-embed-text-v1.5", list, want{server: "lmstudio", window: 2048}},
		{"case-insensitive id", "Meta-Llama-3.1-8B-Instruct", list, want{server: "lmstudio", window: 16384}},
		{"loaded but no loaded_context_length (older server)", "meta-llama-3.1-8b-instruct", edit(t, list, `"loaded_context_length": 16384`, `"x": 0`), want{server: "lmstudio", window: UnloadedWindow}},
		{"not listed", "gpt-oss-20b", list, want{server: "lmstudio", err: ErrModelNotFound}},
		{"no context at all", "qwen2-vl-7b-instruct", edit(t, list, `"max_context_length": 32768`, `"max_context_length": null`), want{server: "lmstudio", err: ErrNoWindow}},
		{"context of the wrong type", "qwen2-vl-7b-instruct", edit(t, list, `"max_context_length": 32768`, `"max_context_length": {"tokens": 32768}`), want{server: "lmstudio", err: ErrNoWindow}},
		{"entries that are not objects are skipped", "qwen2-vl-7b-instruct", edit(t, list, `"data": [`, `"data": [7, "x", null, `), want{server: "lmstudio", window: UnloadedWindow}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, routes{"GET /api/v0/models": body(200, tc.list)})
			m, err := discover(t, s.URL+"/v1", tc.model)
			check(t, s.URL, m, err, tc.want)
		})
	}
}

func TestDiscoverLlamaCpp(t *testing.T) {
	props := fixture(t, "llamacpp/props.json")
	cases := []struct {
		name  string
		props []byte
		want  want
	}{
		{"README's /props: the slot's n_ctx", props, want{server: "llamacpp", window: 1024, source: "/props"}},
		{"2025 server", fixture(t, "llamacpp/props_2025.json"), want{server: "llamacpp", window: 4096}},
		{"n_ctx at the top level", fixture(t, "llamacpp/props_top_level.json"), want{server: "llamacpp", window: 2048}},
		{"n_ctx missing", edit(t, props, `"n_ctx": 1024,`, ``), want{server: "llamacpp", err: ErrNoWindow}},
		{"n_ctx zero", edit(t, props, `"n_ctx": 1024`, `"n_ctx": 0`), want{server: "llamacpp", err: ErrNoWindow}},
		{"n_ctx a string", edit(t, props, `"n_ctx": 1024`, `"n_ctx": "1024"`), want{server: "llamacpp", err: ErrNoWindow}},
		{"n_ctx fractional", edit(t, props, `"n_ctx": 1024`, `"n_ctx": 1024.5`), want{server: "llamacpp", err: ErrNoWindow}},
		{"n_ctx as a float of a whole number", edit(t, props, `"n_ctx": 1024`, `"n_ctx": 1.024e3`), want{server: "llamacpp", window: 1024}},
		{"n_ctx beyond any window", edit(t, props, `"n_ctx": 1024`, `"n_ctx": 99999999999`), want{server: "llamacpp", err: ErrNoWindow}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, routes{"GET /props": body(200, tc.props), "GET /v1/models": body(200, fixture(t, "llamacpp/models.json"))})
			m, err := discover(t, s.URL+"/v1", "anything: llama.cpp serves one model")
			check(t, s.URL, m, err, tc.want)
		})
	}
}

func TestDiscoverVLLM(t *testing.T) {
	list := fixture(t, "vllm/models.json")
	cases := []struct {
		name, model string
		list        []byte
		want        want
	}{
		{"max_model_len", "Qwen/Qwen3-8B", list, want{server: "vllm", window: 32768, source: "/v1/models"}},
		{"LoRA adapter: its base model's", "sql-lora", list, want{server: "vllm", window: 32768}},
		{"older LoRA card: root names the base", "sql-lora", edit(t, edit(t, list, `"parent": "Qwen/Qwen3-8B"`, `"parent": null`), `"root": "/adapters/sql-lora"`, `"root": "Qwen/Qwen3-8B"`), want{server: "vllm", window: 32768}},
		{"LoRA card naming no listed base", "sql-lora", edit(t, list, `"parent": "Qwen/Qwen3-8B"`, `"parent": null`), want{server: "vllm", err: ErrNoWindow}},
		{"not served", "Qwen/Qwen3-32B", list, want{server: "vllm", err: ErrModelNotFound}},
		{"max_model_len null", "Qwen/Qwen3-8B", edit(t, list, `"max_model_len": 32768`, `"max_model_len": null`), want{server: "vllm", err: ErrNoWindow}},
		{"max_model_len negative", "Qwen/Qwen3-8B", edit(t, list, `"max_model_len": 32768`, `"max_model_len": -1`), want{server: "vllm", err: ErrNoWindow}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, routes{"GET /v1/models": body(200, tc.list)})
			m, err := discover(t, s.URL+"/v1", tc.model)
			check(t, s.URL, m, err, tc.want)
		})
	}
}

// redirect sends every request to the stand-in, whatever its URL: the
// client Discover is given carries the transport, as a caller's would.
type redirect struct{ to *url.URL }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.to.Scheme, r.to.Host
	return http.DefaultTransport.RoundTrip(req)
}

func TestDiscoverOpenRouter(t *testing.T) {
	list := fixture(t, "openrouter/models.json")
	cases := []struct {
		name, model string
		handler     http.HandlerFunc
		want        want
		tokenizer   string
	}{
		{"context and output", "openai/gpt-4o", body(200, list), want{server: "openrouter", window: 128000, output: 16384}, "o200k_base"},
		{"Claude: no public tokenizer", "anthropic/claude-sonnet-4.5", body(200, list), want{server: "openrouter", window: 1000000, output: 64000}, ""},
		{"by canonical slug", "qwen/qwen3-coder-480b-a35b-07-25", body(200, list), want{server: "openrouter", window: 262144, output: 66536}, ""},
		{"router without provider limits", "openrouter/auto", body(200, list), want{server: "openrouter", window: 2000000}, ""},
		{"the smaller of the two windows", "openai/gpt-4o", body(200, edit(t, list, `"context_length": 128000,
        "max_completion_tokens"`, `"context_length": 64000,
        "max_completion_tokens"`)), want{server: "openrouter", window: 64000, output: 16384}, "o200k_base"},
		{"not listed", "openai/gpt-9", body(200, list), want{server: "openrouter", err: ErrModelNotFound}, ""},
		{"rate limited", "openai/gpt-4o", body(429, []byte(`{"error":{"message":"Rate limit exceeded","code":429}}`)), want{server: "openrouter", err: ErrNoWindow}, ""},
		{"not JSON", "openai/gpt-4o", body(200, []byte("<!doctype html>")), want{server: "openrouter", err: ErrNoWindow}, ""},
		{"data of the wrong type", "openai/gpt-4o", body(200, []byte(`{"data":{"id":"openai/gpt-4o"}}`)), want{server: "openrouter", err: ErrNoWindow}, ""},
		{"no context_length", "openai/gpt-4o", body(200, []byte(`{"data":[{"id":"openai/gpt-4o","top_provider":{}}]}`)), want{server: "openrouter", err: ErrNoWindow}, ""},
		{"larger than Discover reads", "openai/gpt-4o", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"data":[`))
			pad := bytes.Repeat([]byte(`{"id":"x","context_length":1},`), 1<<15)
			for i := 0; i < 10; i++ {
				if _, err := w.Write(pad); err != nil {
					return
				}
			}
		}, want{server: "openrouter", err: ErrNoWindow}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, routes{"GET /api/v1/models": tc.handler})
			to, _ := url.Parse(s.URL)
			client := &http.Client{Transport: redirect{to}}
			for _, base := range []string{"https://openrouter.ai/api/v1", "https://openrouter.ai"} {
				m, err := Discover(context.Background(), client, base, tc.model)
				check(t, "https://openrouter.ai", m, err, tc.want)
				if err == nil && (m.Tokenizer != tc.tokenizer || m.Source != "https://openrouter.ai/api/v1/models" || m.Name != tc.model) {
					t.Errorf("got %+v, want tokenizer %q, the list as source", m, tc.tokenizer)
				}
			}
		})
	}
}

// TestDiscoverOrder checks the fixed probing order: a server answering
// every kind's endpoint is taken for the first kind, and a vLLM server is
// reached after one request to each kind before it.
func TestDiscoverOrder(t *testing.T) {
	all := routes{
		"GET /api/version":   body(200, fixture(t, "ollama/version.json")),
		"POST /api/show":     body(200, fixture(t, "ollama/show.json")),
		"GET /api/ps":        body(200, fixture(t, "ollama/ps_context.json")),
		"GET /api/v0/models": body(200, fixture(t, "lmstudio/models.json")),
		"GET /props":         body(200, fixture(t, "llamacpp/props.json")),
		"GET /v1/models":     body(200, fixture(t, "vllm/models.json")),
	}
	order := []string{"GET /api/version", "GET /api/v0/models", "GET /props", "GET /v1/models"}
	kinds := []string{"ollama", "lmstudio", "llamacpp", "vllm"}
	for i, kind := range kinds {
		rs := routes{}
		for k, h := range all {
			rs[k] = h
		}
		for _, gone := range order[:i] {
			delete(rs, gone)
		}
		s := serve(t, rs)
		model := map[string]string{"ollama": "llava", "lmstudio": "meta-llama-3.1-8b-instruct", "llamacpp": "", "vllm": "Qwen/Qwen3-8B"}[kind]
		m, err := discover(t, s.URL, model)
		if err != nil || m.Provider != kind {
			t.Fatalf("with the endpoints of %v gone: got %q, %v; want %s", order[:i], m.Provider, err, kind)
		}
		if got := s.requests(); len(got) < i+1 || strings.Join(got[:i+1], ",") != strings.Join(order[:i+1], ",") {
			t.Errorf("%s: requests %v, want them to start with %v", kind, got, order[:i+1])
		}
	}
}

func TestDiscoverNoServer(t *testing.T) {
	html := func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html><body>hello</body></html>")) }
	cases := []struct {
		name string
		rs   routes
	}{
		{"404 everywhere", routes{}},
		{"an OpenAI-compatible server without windows", routes{"GET /v1/models": body(200, []byte(`{"object":"list","data":[{"id":"m","object":"model","owned_by":"someone"}]}`))}},
		{"llama.cpp's /v1/models without /props", routes{"GET /v1/models": body(200, fixture(t, "llamacpp/models.json"))}},
		{"HTML for every path", routes{"GET /api/version": html, "GET /api/v0/models": html, "GET /props": html, "GET /v1/models": html}},
		{"JSON of the wrong shapes", routes{
			"GET /api/version":   body(200, []byte(`{"version": 5}`)),
			"GET /api/v0/models": body(200, []byte(`{"data": "none"}`)),
			"GET /props":         body(200, []byte(`[1,2,3]`)),
			"GET /v1/models":     body(200, []byte(`{"data": [[[[[[]]]]]]}`)),
		}},
		{"deeply nested JSON", routes{"GET /props": body(200, []byte(strings.Repeat("[", 100000)+strings.Repeat("]", 100000)))}},
		{"endless bodies", routes{
			"GET /api/version": endless, "GET /api/v0/models": endless, "GET /props": endless, "GET /v1/models": endless,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, tc.rs)
			_, err := discover(t, s.URL, "m")
			if !errors.Is(err, ErrNoServer) {
				t.Fatalf("error %v, want ErrNoServer", err)
			}
		})
	}
}

// endless writes JSON-looking bytes until the client stops reading.
func endless(w http.ResponseWriter, r *http.Request) {
	w.Write([]byte(`{"version":"`))
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for {
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if r.Context().Err() != nil {
			return
		}
	}
}

func TestDiscoverBadBaseURL(t *testing.T) {
	for _, base := range []string{"", "localhost:11434", "ftp://localhost/", "http://", "://x", "http://[::1"} {
		_, err := Discover(context.Background(), nil, base, "m")
		if !errors.Is(err, ErrNoServer) {
			t.Errorf("Discover(%q): %v, want ErrNoServer", base, err)
		}
	}
}

func TestDiscoverUnreachable(t *testing.T) {
	s := httptest.NewServer(http.NotFoundHandler())
	base := s.URL
	s.Close() // nothing listens there now
	_, err := discover(t, base, "m")
	var de *DiscoverError
	if err == nil || errors.Is(err, ErrNoServer) || !errors.As(err, &de) || de.Server != "" {
		t.Fatalf("error %v: want the transport error, no server named", err)
	}
}

// TestDiscoverHonoursContext checks that Discover returns when the
// caller's context ends, even from a server that never answers.
func TestDiscoverHonoursContext(t *testing.T) {
	arrived := make(chan struct{}, 1)
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}
	s := serve(t, routes{"GET /api/version": hang})

	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }() // cancel once the request is waiting
	if _, err := Discover(ctx, nil, s.URL, "m"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v, want context.Canceled", err)
	}

	past, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()
	if _, err := Discover(past, nil, s.URL, "m"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline passed: %v, want context.DeadlineExceeded", err)
	}
}

// TestDiscoverConcurrent runs Discover from many goroutines against the
// same servers (go test -race checks the sharing).
func TestDiscoverConcurrent(t *testing.T) {
	o := ollama(t, body(200, fixture(t, "ollama/show.json")), body(200, fixture(t, "ollama/ps_context.json")))
	v := serve(t, routes{"GET /v1/models": body(200, fixture(t, "vllm/models.json"))})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 16; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if m, err := Discover(context.Background(), nil, o.URL, "llava"); err != nil || m.Window != 8192 {
				errs <- fmt.Errorf("ollama: %+v %v", m, err)
			}
		}()
		go func() {
			defer wg.Done()
			if m, err := Discover(context.Background(), nil, v.URL, "sql-lora"); err != nil || m.Window != 32768 {
				errs <- fmt.Errorf("vllm: %+v %v", m, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestFetchBounds checks the reader directly: at most limit bytes, and a
// longer body is an error that does not stop probing.
func TestFetchBounds(t *testing.T) {
	s := serve(t, routes{"GET /big": endless})
	a, err := fetch(context.Background(), http.DefaultClient, http.MethodGet, s.URL+"/big", nil, 1000)
	if !errors.Is(err, errTooLarge) || transportFailure(err) || len(a.body) != 1001 {
		t.Fatalf("fetch: %d bytes, %v", len(a.body), err)
	}
	if _, err := io.Copy(io.Discard, bytes.NewReader(a.body)); err != nil {
		t.Fatal(err)
	}
}
