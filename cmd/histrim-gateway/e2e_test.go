package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history/gateway"
	"github.com/histrim/history/internal/gatewaye2e"
	"github.com/histrim/history/wire"
)

// startMetered starts histrim-gateway's gateway (its registrations made)
// in front of upstream, the models' window window; it returns its URL and
// a count of the requests it trimmed, read from its /metrics (still
// answered once the test's server is closed).
func startMetered(t *testing.T, upstream string, window int) (string, func() uint64) {
	t.Helper()
	register()
	g, err := gateway.New(context.Background(), gateway.Config{Upstream: upstream, Window: window}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv.URL, func() uint64 {
		// Asked of the handler itself: the server may be closed by now.
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		var n uint64
		sc := bufio.NewScanner(rec.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "histrim_gateway_trims_total") {
				f := strings.Fields(line)
				v, _ := strconv.ParseUint(f[len(f)-1], 10, 64)
				n += v
			}
		}
		return n
	}
}

// TestResponsesTrimmed: histrim-gateway trims an OpenAI Responses request
// over the window (the responses adapter's codec is registered), where
// `histrim serve` forwards it untouched: the upstream receives fewer
// items, the latest user message last, every byte outside the input as
// sent.
func TestResponsesTrimmed(t *testing.T) {
	var got []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":10,"output_tokens":1}}`)
	}))
	defer up.Close()
	base, trims := startMetered(t, up.URL, 8_000)
	if !wire.Responses.Trims() {
		t.Fatal("register did not register the Responses codec")
	}
	var items []string
	for i := range 40 {
		items = append(items, fmt.Sprintf(`{"role":"user","content":"Task %d."}`, i),
			fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"read","arguments":"{}"}`, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":%q}`, i, strings.Repeat("line of output ", 200)))
	}
	items = append(items, `{"role":"user","content":"The latest task."}`)
	head, tail := `{"model":"gpt-4.1", "x_unknown":[1, 2],"input":[`, `], "store":false}`
	body := head + strings.Join(items, ",") + tail
	resp, err := http.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var sent struct{ Input []json.RawMessage }
	if err := json.Unmarshal(got, &sent); err != nil {
		t.Fatalf("upstream got %q: %v", got, err)
	}
	if len(sent.Input) >= len(items) || string(sent.Input[len(sent.Input)-1]) != items[len(items)-1] {
		t.Fatalf("sent %d of %d items, the last %s", len(sent.Input), len(items), sent.Input[len(sent.Input)-1])
	}
	if !strings.HasPrefix(string(got), head) || !strings.HasSuffix(string(got), tail) {
		t.Fatalf("bytes outside the input changed: %.200s", got)
	}
	if trims() != 1 {
		t.Fatalf("/metrics counts %d trims, want 1", trims())
	}
}

// TestGeminiTrimmed: histrim-gateway trims a Gemini generateContent
// request over the window (the gemini adapter's codec is registered),
// where `histrim serve` forwards it untouched: the upstream receives
// fewer contents, the latest user content last, every byte outside the
// contents as sent, the path and its query (the API key) as sent.
func TestGeminiTrimmed(t *testing.T) {
	var got []byte
	var query string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		query = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"candidates":[],"usageMetadata":{"promptTokenCount":10}}`)
	}))
	defer up.Close()
	base, trims := startMetered(t, up.URL, 8_000)
	if !wire.Gemini.Trims() {
		t.Fatal("register did not register the Gemini codec")
	}
	var contents []string
	for i := range 40 {
		contents = append(contents, fmt.Sprintf(`{"role":"user","parts":[{"text":"Task %d."}]}`, i),
			fmt.Sprintf(`{"role":"model","parts":[{"functionCall":{"id":"c%d","name":"read","args":{}},"thoughtSignature":"c2ln"}]}`, i),
			fmt.Sprintf(`{"role":"user","parts":[{"functionResponse":{"id":"c%d","name":"read","response":{"output":%q}}}]}`, i, strings.Repeat("line of output ", 200)))
	}
	contents = append(contents, `{"role":"user","parts":[{"text":"The latest task."}]}`)
	head, tail := `{"x_unknown":[1, 2],"contents":[`, `], "generationConfig":{"temperature":0}}`
	body := head + strings.Join(contents, ",") + tail
	resp, err := http.Post(base+"/v1beta/models/gemini-2.5-flash:generateContent?key=k", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var sent struct{ Contents []json.RawMessage }
	if err := json.Unmarshal(got, &sent); err != nil {
		t.Fatalf("upstream got %q: %v", got, err)
	}
	if len(sent.Contents) >= len(contents) || string(sent.Contents[len(sent.Contents)-1]) != contents[len(contents)-1] {
		t.Fatalf("sent %d of %d contents, the last %s", len(sent.Contents), len(contents), sent.Contents[len(sent.Contents)-1])
	}
	if !strings.HasPrefix(string(got), head) || !strings.HasSuffix(string(got), tail) || query != "key=k" {
		t.Fatalf("bytes outside the contents, or the query (%q), changed: %.200s", query, got)
	}
	if trims() != 1 {
		t.Fatalf("/metrics counts %d trims, want 1", trims())
	}
}

// TestNodeResponses is package gateway's TestNodeClients for the Agents
// SDK's Responses model (@openai/agents 0.20.0, gateway/e2e), which only
// this gateway trims: a 50-turn tool loop at 16k, streamed, id-dense tool
// output (all four windows and modes with HISTRIM_E2E_FULL set), through
// the gateway (0 failed turns, 0 pairing violations, 0 requests without
// the latest user message) and directly (most turns fail). Skipped when
// HISTRIM_NODE is unset.
func TestNodeResponses(t *testing.T) {
	register()
	if !wire.Responses.Trims() {
		t.Fatal("register did not register the Responses codec: this gateway would forward the Agents SDK's requests untouched")
	}
	dir, _ := filepath.Abs(filepath.Join("..", "..", "gateway", "e2e"))
	var clients []gatewaye2e.Client
	for _, c := range gatewaye2e.Clients {
		if c.Name == "agents-responses" {
			clients = append(clients, c)
		}
	}
	gatewaye2e.Run(t, dir, clients, startMetered)
}
