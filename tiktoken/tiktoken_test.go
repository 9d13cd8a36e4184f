package tiktoken

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/histrim/history"
)

// networkUses counts requests made through http.DefaultTransport while the
// tests run. TestMain installs a transport that refuses and records every
// request before any test (and so before any encoding is built), and fails
// the run if anything tried the network.
var networkUses atomic.Int64

type noNetwork struct{}

func (noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	networkUses.Add(1)
	return nil, fmt.Errorf("network access in a test: %s", r.URL)
}

func TestMain(m *testing.M) {
	http.DefaultTransport = noNetwork{}
	// tiktoken-go's own (unused) loader would cache downloads here; point
	// it at a directory that does not exist so that no cache can help.
	os.Setenv("TIKTOKEN_CACHE_DIR", "/nonexistent/histrim-tiktoken-cache")
	code := m.Run()
	if n := networkUses.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d network requests during the tests\n", n)
		code = 1
	}
	os.Exit(code)
}

func mustNew(tb testing.TB, enc string) *Counter {
	tb.Helper()
	c, err := New(enc)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestOffline builds every encoding from fresh once-functions (so the build
// runs inside this test even if other tests ran first) and checks that the
// network was never used.
func TestOffline(t *testing.T) {
	before := networkUses.Load()
	for name := range specs {
		c, err := build(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := c.CountText("hello world"); got != 2 {
			t.Errorf("%s: CountText(hello world) = %d, want 2", name, got)
		}
	}
	if n := networkUses.Load() - before; n != 0 {
		t.Fatalf("building the encodings made %d network requests", n)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		encoding string
		text     string
		want     int
		reason   string
	}{
		{O200kBase, "hello world", 2, "common words are one token each"},
		{Cl100kBase, "hello world", 2, "common words are one token each"},
		{P50kBase, "hello world", 2, "p50k is supported"},
		{R50kBase, "hello world", 2, "r50k is supported"},
		{O200kBase, strings.Repeat("漢字", 500), 1000, "o200k: one token per CJK character here"},
		{Cl100kBase, strings.Repeat("漢字", 500), 1500, "cl100k splits these characters more"},
		{O200kBase, "", 0, "empty text is free"},
		{Cl100kBase, "<|endoftext|>", 7, "special tokens count as text"},
	}
	for _, tt := range tests {
		c := mustNew(t, tt.encoding)
		if got := c.CountText(tt.text); got != tt.want {
			t.Errorf("%s CountText(%.20q) = %d, want %d: %s", tt.encoding, tt.text, got, tt.want, tt.reason)
		}
		if c.Encoding() != tt.encoding {
			t.Errorf("Encoding() = %q, want %q", c.Encoding(), tt.encoding)
		}
		if again := mustNew(t, tt.encoding); again != c {
			t.Errorf("%s: New returned a different *Counter on the second call; want the shared one", tt.encoding)
		}
	}
	for _, bad := range []string{"", "gpt2", "o200k", "O200K_BASE", "p50k_edit"} {
		c, err := New(bad)
		if !errors.Is(err, ErrUnknownEncoding) || c != nil {
			t.Errorf("New(%q) = %v, %v; want nil, ErrUnknownEncoding", bad, c, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "history/tiktoken: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
}

func TestForModel(t *testing.T) {
	tests := []struct {
		model, want, reason string
	}{
		{"gpt-4o", O200kBase, "exact name"},
		{"gpt-4o-2024-08-06", O200kBase, "dated snapshot"},
		{"gpt-4o-mini", O200kBase, "gpt-4o- prefix"},
		{"chatgpt-4o-latest", O200kBase, "ChatGPT alias"},
		{"gpt-4.1", O200kBase, "exact name"},
		{"gpt-4.1-nano-2025-04-14", O200kBase, "gpt-4.1- prefix"},
		{"gpt-4.5-preview", O200kBase, "gpt-4.5- prefix"},
		{"gpt-5", O200kBase, "exact name"},
		{"gpt-5-mini", O200kBase, "gpt-5- prefix"},
		{"gpt-5.1", O200kBase, "gpt-5.x family"},
		{"o1", O200kBase, "reasoning model"},
		{"o1-preview", O200kBase, "o1- prefix"},
		{"o3", O200kBase, "reasoning model"},
		{"o3-mini-2025-01-31", O200kBase, "o3- prefix"},
		{"o4-mini", O200kBase, "reasoning model"},
		{"o4-mini-2025-04-16", O200kBase, "o4-mini- prefix"},
		{"gpt-oss-120b", O200kBase, "harmony is o200k for ordinary text"},
		{"gpt-4", Cl100kBase, "exact name"},
		{"gpt-4-0613", Cl100kBase, "gpt-4- prefix"},
		{"gpt-4-turbo", Cl100kBase, "gpt-4- prefix, not gpt-4o"},
		{"gpt-4-32k", Cl100kBase, "gpt-4- prefix"},
		{"gpt-3.5-turbo", Cl100kBase, "exact name"},
		{"gpt-3.5-turbo-0125", Cl100kBase, "dated snapshot"},
		{"gpt-35-turbo-16k", Cl100kBase, "Azure deployment name"},
		{"text-embedding-3-small", Cl100kBase, "embeddings"},
		{"ft:gpt-4o-mini-2024-07-18:org::abc123", O200kBase, "fine-tune: the longer ft:gpt-4o prefix wins over ft:gpt-4"},
		{"ft:gpt-4-0613:org::abc", Cl100kBase, "fine-tune of gpt-4"},
		{"ft:gpt-3.5-turbo-0125:org::x", Cl100kBase, "fine-tune of gpt-3.5"},
		{"GPT-4o", O200kBase, "case-insensitive"},
		{"openai/gpt-4.1-mini", O200kBase, "provider prefix"},
		{"text-davinci-003", P50kBase, "legacy completions"},
		{"davinci", R50kBase, "GPT-3"},
	}
	for _, tt := range tests {
		c, err := ForModel(tt.model)
		if err != nil {
			t.Errorf("ForModel(%q): %v (%s)", tt.model, err, tt.reason)
			continue
		}
		if c.Encoding() != tt.want {
			t.Errorf("ForModel(%q) = %s, want %s: %s", tt.model, c.Encoding(), tt.want, tt.reason)
		}
	}
	for _, bad := range []string{"", "claude-3-5-sonnet", "gemini-2.5-pro", "llama-3", "gpt", "o2"} {
		c, err := ForModel(bad)
		if !errors.Is(err, ErrUnknownModel) || c != nil {
			t.Errorf("ForModel(%q) = %v, %v; want nil, ErrUnknownModel", bad, c, err)
		}
	}
}

// TestRoleTokens checks the framing's role cost: every role is one token in
// both chat encodings.
func TestRoleTokens(t *testing.T) {
	for _, enc := range []string{Cl100kBase, O200kBase} {
		c := mustNew(t, enc)
		for _, r := range []history.Role{history.RoleSystem, history.RoleUser, history.RoleAssistant, history.RoleTool} {
			if got := c.CountText(string(r)); got != 1 {
				t.Errorf("%s: role %q is %d tokens, want 1", enc, r, got)
			}
		}
	}
}

func TestCountMessage(t *testing.T) {
	c := mustNew(t, O200kBase)
	text := c.CountText
	tests := []struct {
		name   string
		msg    history.Message
		want   int
		reason string
	}{
		{"empty", history.Message{Role: history.RoleUser}, 4, "3 framing + 1 role"},
		{"text", history.Message{Role: history.RoleUser, Content: "hello world"}, 4 + 2, "framing + content"},
		{"name", history.Message{Role: history.RoleUser, Content: "hi", Name: "alice"},
			4 + text("hi") + 1 + text("alice"), "a name costs 1 + its tokens"},
		{"tool call", history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{
			{ID: "call_abcdefghijklmnop", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			4 + 3 + text("get_weather") + text(`{"city":"Paris"}`), "call: 3 + name + arguments; the ID is not counted"},
		{"parallel calls", history.Message{Role: history.RoleAssistant, Content: "ok", ToolCalls: []history.ToolCall{
			{ID: "a", Name: "f", Arguments: "{}"}, {ID: "b", Name: "g", Arguments: `{"x":1}`}}},
			4 + text("ok") + 3 + text("f") + text("{}") + 3 + text("g") + text(`{"x":1}`), "each call framed"},
		{"tool result", history.Message{Role: history.RoleTool, ToolCallID: "call_abcdefghijklmnop", Content: "sunny"},
			4 + text("sunny"), "ToolCallID is not counted"},
		{"kind", history.Message{Role: history.RoleUser, Kind: history.KindBreadcrumb, Content: "x"},
			4 + text("x"), "Kind is not sent"},
		{"unknown role", history.Message{Role: "developer", Content: "x"},
			3 + text("developer") + text("x"), "unknown roles are encoded"},
		{"text part", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartText, Text: "hello world"}}},
			4 + 2, "text parts count their text exactly"},
		{"reasoning part", history.Message{Role: history.RoleAssistant, Parts: []history.Part{{Type: history.PartReasoning, Text: "hello world"}}},
			4 + 2, "reasoning counts as text"},
		{"known tokens", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartImage, Tokens: 1234, Width: 4000, Height: 4000}}},
			4 + 1234, "a known Tokens value is used as given"},
		{"image low", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartImage, Width: 4000, Height: 3000, Detail: "low"}}},
			4 + 85, "low detail is flat 85"},
		{"image 1024", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartImage, Width: 1024, Height: 1024}}},
			4 + 85 + 4*170, "1024x1024 -> 768x768 -> 4 tiles"},
		{"image 2048x4096", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartImage, Width: 2048, Height: 4096, Detail: "high"}}},
			4 + 85 + 6*170, "fit 2048 -> 1024x2048 -> 768x1536 -> 2x3 tiles"},
		{"image small", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartImage, Width: 300, Height: 200}}},
			4 + 85 + 170, "one tile"},
		{"image unknown", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartImage}}},
			4 + 765, "unknown size costs a 1024x1024 image"},
		{"file text", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartFile, Size: 4001, MIMEType: "application/json"}}},
			4 + 1001, "text-like files: size/4 rounded up"},
		{"file pdf", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartFile, Size: 64000, MIMEType: "application/pdf"}}},
			4 + 2000, "binary files: size/32"},
		{"file unknown", history.Message{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartFile}}},
			4 + 1000, "unknown size: 1000"},
	}
	for _, tt := range tests {
		if got := c.CountMessage(tt.msg); got != tt.want {
			t.Errorf("%s: CountMessage = %d, want %d: %s", tt.name, got, tt.want, tt.reason)
		}
		// The Heuristic applies the same non-text Part rules.
		if len(tt.msg.Parts) == 1 && tt.msg.Parts[0].Type != history.PartText && tt.msg.Parts[0].Type != history.PartReasoning {
			h := history.Heuristic().CountMessage(tt.msg) - history.Heuristic().CountMessage(history.Message{Role: tt.msg.Role})
			if e := c.CountMessage(tt.msg) - c.CountMessage(history.Message{Role: tt.msg.Role}); h != e {
				t.Errorf("%s: part costs %d under Heuristic, %d exact; want the same rule", tt.name, h, e)
			}
		}
	}
}

// TestCountRequest checks the request formula against the prompt_tokens the
// OpenAI API reported for this request in the OpenAI Cookbook's "How to count
// tokens with tiktoken" (section 6): 129 on gpt-3.5-turbo and gpt-4
// (cl100k_base), 124 on gpt-4o and gpt-4o-mini (o200k_base).
func TestCountRequest(t *testing.T) {
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
		{Role: history.RoleSystem, Name: "example_user", Content: "New synergies will help drive top-line growth."},
		{Role: history.RoleSystem, Name: "example_assistant", Content: "Things working well together will increase revenue."},
		{Role: history.RoleSystem, Name: "example_user", Content: "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
		{Role: history.RoleSystem, Name: "example_assistant", Content: "Let's talk later when we're less busy about how to do better."},
		{Role: history.RoleUser, Content: "This late pivot means we don't have time to boil the ocean for the client deliverable."},
	}
	for enc, api := range map[string]int{Cl100kBase: 129, O200kBase: 124} {
		c := mustNew(t, enc)
		if got := c.CountRequest(msgs); got != api {
			t.Errorf("%s: CountRequest = %d, want %d (API prompt_tokens)", enc, got, api)
		}
		if got, want := c.CountRequest(msgs), history.Estimate(msgs, c)+3; got != want {
			t.Errorf("%s: CountRequest = %d, want Estimate + 3 = %d", enc, got, want)
		}
	}
	if got := mustNew(t, O200kBase).CountRequest(nil); got != 3 {
		t.Errorf("CountRequest(nil) = %d, want 3", got)
	}
}

func TestZeroCounter(t *testing.T) {
	var zero Counter
	var nilc *Counter
	o := mustNew(t, O200kBase)
	s := strings.Repeat("漢字", 50)
	if zero.CountText(s) != o.CountText(s) || nilc.CountText(s) != o.CountText(s) {
		t.Errorf("zero/nil Counter = %d/%d, want o200k %d", zero.CountText(s), nilc.CountText(s), o.CountText(s))
	}
	if zero.Encoding() != O200kBase {
		t.Errorf("zero Counter encoding %q", zero.Encoding())
	}
}

// TestConcurrent exercises first-use construction and counting from many
// goroutines at once (run with -race).
func TestConcurrent(t *testing.T) {
	once := sync.OnceValues(func() (*Counter, error) { return build(Cl100kBase) })
	var wg sync.WaitGroup
	results := make([]int, 16)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := once()
			if err != nil {
				t.Error(err)
				return
			}
			shared, err := New([]string{O200kBase, Cl100kBase}[g%2])
			if err != nil {
				t.Error(err)
				return
			}
			m := history.Message{Role: history.RoleUser, Content: strings.Repeat("concurrent counting ", 50)}
			results[g] = c.CountMessage(m) + shared.CountMessage(m)
		}()
	}
	wg.Wait()
	for g := 2; g < len(results); g++ {
		if results[g] != results[g%2] {
			t.Errorf("goroutine %d counted %d, goroutine %d counted %d", g, results[g], g%2, results[g%2])
		}
	}
}

// TestSaturation checks that message and request sums saturate instead of
// wrapping when callers supply huge part costs.
func TestSaturation(t *testing.T) {
	c := mustNew(t, O200kBase)
	huge := history.Message{Role: history.RoleUser, Content: "x", Parts: []history.Part{
		{Type: history.PartImage, Tokens: math.MaxInt},
		{Type: history.PartImage, Tokens: math.MaxInt},
	}}
	tests := []struct {
		name   string
		got    int
		reason string
	}{
		{"one part of MaxInt", c.CountMessage(history.Message{Role: history.RoleUser, Parts: huge.Parts[:1]}), "framing + MaxInt"},
		{"two parts of MaxInt", c.CountMessage(huge), "the parts' sum"},
		{"request", c.CountRequest([]history.Message{huge, huge}), "the messages' sum"},
		{"request of MaxInt-1", c.CountRequest([]history.Message{{Role: history.RoleUser,
			Parts: []history.Part{{Type: history.PartText, Tokens: math.MaxInt - 1}}}}), "reply priming on top"},
	}
	for _, tt := range tests {
		if tt.got != math.MaxInt {
			t.Errorf("%s: %d, want math.MaxInt: %s", tt.name, tt.got, tt.reason)
		}
	}
}
