package gemini

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histrim/history"
	"google.golang.org/genai"
)

// overheadConfig returns a config with a tool set, a response schema and a
// JSON response schema, each when asked for.
func overheadConfig(tools, schema, jsonSchema bool) *genai.GenerateContentConfig {
	c := &genai.GenerateContentConfig{SystemInstruction: text("", "You are a weather bot. "+strings.Repeat("Be precise. ", 20))}
	if tools {
		c.Tools = []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{
			Name: "weather", Description: "Returns the weather of a city.",
			Parameters: &genai.Schema{Type: genai.TypeObject, Required: []string{"city"},
				Properties: map[string]*genai.Schema{"city": {Type: genai.TypeString, Description: "The city's name."}}},
		}}}, {GoogleSearch: &genai.GoogleSearch{}}}
	}
	if schema {
		c.ResponseMIMEType = "application/json"
		c.ResponseSchema = &genai.Schema{Type: genai.TypeObject, Properties: map[string]*genai.Schema{"temp_c": {Type: genai.TypeNumber}}}
	}
	if jsonSchema {
		c.ResponseMIMEType = "application/json"
		c.ResponseJsonSchema = map[string]any{"type": "object", "properties": map[string]any{"summary": map[string]any{"type": "string"}}}
	}
	return c
}

// TestOverhead: Overhead counts, as one system message, the JSON of the
// tools and response schemas the request sends, exactly as the client sends
// them, and nothing else (not the system instruction, which Trim counts).
func TestOverhead(t *testing.T) {
	unencodable := overheadConfig(true, false, false)
	unencodable.ResponseJsonSchema = map[string]any{"bad": make(chan int)}
	cases := []struct {
		name   string
		config *genai.GenerateContentConfig
		keys   []string // the members of the counted object; none: Overhead is 0
	}{
		{name: "nil config"},
		{name: "system instruction only", config: overheadConfig(false, false, false)},
		{name: "tools", config: overheadConfig(true, false, false), keys: []string{"tools"}},
		{name: "response schema", config: overheadConfig(false, true, false), keys: []string{"responseSchema"}},
		{name: "JSON response schema", config: overheadConfig(false, false, true), keys: []string{"responseJsonSchema"}},
		{name: "tools and both schemas", config: overheadConfig(true, true, true), keys: []string{"tools", "responseSchema", "responseJsonSchema"}},
		{name: "a schema that does not encode", config: unencodable, keys: []string{"tools"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var seen []history.Message
			spy := history.CounterFunc(func(m history.Message) int { seen = append(seen, m); return 1000 + len(m.Content) })
			got := Overhead(tc.config, spy)
			if len(tc.keys) == 0 {
				if got != 0 || len(seen) != 0 {
					t.Fatalf("Overhead = %d after counting %d messages, want 0 and none", got, len(seen))
				}
				return
			}
			if len(seen) != 1 || seen[0].Role != history.RoleSystem || got != 1000+len(seen[0].Content) {
				t.Fatalf("Overhead = %d from %d messages %+v; want the count of one system message", got, len(seen), seen)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(seen[0].Content), &obj); err != nil {
				t.Fatalf("counted %q, not a JSON object: %v", seen[0].Content, err)
			}
			if len(obj) != len(tc.keys) {
				t.Fatalf("counted the members %s, want %v", seen[0].Content, tc.keys)
			}
			sent := sentRequest(t, tc.config)
			for _, k := range tc.keys {
				if !sameJSON(t, obj[k], sent[k]) {
					t.Errorf("counted %s as %s, the client sends %s", k, obj[k], sent[k])
				}
			}
			if h := Overhead(tc.config, nil); h != history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: seen[0].Content}) {
				t.Errorf("Overhead with a nil Counter = %d, not Heuristic's count", h)
			}
		})
	}
	neg := history.CounterFunc(func(history.Message) int { return -5 })
	if got := Overhead(overheadConfig(true, false, false), neg); got != 0 {
		t.Errorf("a negative count gives %d, want 0", got)
	}
}

// sentRequest returns what the real client sends for config on the Gemini
// API: the request's tools and the generation config's response schemas,
// as JSON, by the names Overhead counts them under.
func sentRequest(t *testing.T, config *genai.GenerateContentConfig) map[string]json.RawMessage {
	t.Helper()
	var body struct {
		Tools            json.RawMessage            `json:"tools"`
		GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Error(err)
		}
		w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]}}]}`))
	}))
	defer srv.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if config.ResponseJsonSchema != nil {
		if _, err := json.Marshal(config.ResponseJsonSchema); err != nil {
			c := *config
			c.ResponseJsonSchema = nil // the client could not send it either
			config = &c
		}
	}
	if _, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", []*genai.Content{text("user", "hi")}, config); err != nil {
		t.Fatal(err)
	}
	return map[string]json.RawMessage{"tools": body.Tools,
		"responseSchema": body.GenerationConfig["responseSchema"], "responseJsonSchema": body.GenerationConfig["responseJsonSchema"]}
}

// sameJSON reports whether a and b decode to the same value.
func sameJSON(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

// TestTrimWithOverhead: with WithOverhead(Overhead(config, nil)) the
// contents fit the budget together with the tools, and TokensAfter counts
// the whole request.
func TestTrimWithOverhead(t *testing.T) {
	config := overheadConfig(true, true, false)
	overhead := Overhead(config, nil)
	contents := recoverConv()
	all, _, _, _ := convertRequest(config.SystemInstruction, contents, nil)
	budget := history.Estimate(all, nil) + 10 // fits without the overhead
	out, res, err := Trim(config.SystemInstruction, contents, budget)
	if err != nil || res.Trimmed || len(out) != len(contents) {
		t.Fatalf("without overhead: %d of %d contents, trimmed %v, %v", len(out), len(contents), res.Trimmed, err)
	}
	out, res, err = Trim(config.SystemInstruction, contents, budget, history.WithOverhead(overhead))
	if err != nil || !res.Trimmed {
		t.Fatalf("with an overhead of %d: trimmed %v, %v; want the contents trimmed to make room", overhead, res.Trimmed, err)
	}
	sent, _, _, _ := convertRequest(config.SystemInstruction, out, nil)
	if got := history.Estimate(sent, nil) + overhead; got != res.TokensAfter || got > budget {
		t.Fatalf("request counts %d with its overhead, TokensAfter %d, budget %d", got, res.TokensAfter, budget)
	}
}
