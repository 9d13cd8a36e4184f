package wire

import (
	"encoding/json"
	"testing"
)

// TestParseGemini: what Parse reads of a Gemini request, each case with
// its reason; the contents are its messages, the rest of the body stays.
func TestParseGemini(t *testing.T) {
	cases := []struct {
		name, path, body string
		model            string
		stream           bool
		maxOutput        int
		system           string
		overhead         bool
		messages         int
	}{
		{"the model comes from the path, not the body", "/v1beta/models/gemini-2.5-flash:generateContent",
			`{"model":"not-this","contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "gemini-2.5-flash", false, 0, "", false, 1},
		{"streamGenerateContent streams; maxOutputTokens is the output room", "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
			`{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]}],"generationConfig":{"maxOutputTokens":512}}`,
			"gemini-2.5-pro", true, 512, "", false, 2},
		{"Vertex AI's path: the name after the last /models/", "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
			`{"contents":[],"systemInstruction":{"parts":[{"text":"Be brief."}]},"tools":[{"functionDeclarations":[{"name":"f"}]}]}`,
			"gemini-2.5-flash", false, 0, `{"parts":[{"text":"Be brief."}]}`, true, 0},
		{"the proto's field names, which the REST API takes too", "/v1beta/models/m:generateContent",
			`{"contents":[{"parts":[{"text":"a"}]}],"system_instruction":{"parts":[{"text":"s"}]},"generation_config":{"max_output_tokens":64,"responseSchema":{"type":"OBJECT"}}}`,
			"m", false, 64, `{"parts":[{"text":"s"}]}`, true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse(c.path, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.API != Gemini || r.Model != c.model || r.Stream != c.stream || r.MaxOutput != c.maxOutput || string(r.system) != c.system {
				t.Fatalf("got api %v model %q stream %v max output %d system %s", r.API, r.Model, r.Stream, r.MaxOutput, r.system)
			}
			if got := len(r.extra) > 0 && r.extra[0] != ""; got != c.overhead {
				t.Fatalf("overhead %q", r.extra)
			}
			if len(r.Messages()) != c.messages || string(r.Body(r.Messages())) != c.body {
				t.Fatalf("%d messages; body %s", len(r.Messages()), r.Body(r.Messages()))
			}
			var params map[string]json.RawMessage
			if json.Unmarshal(r.params, &params) != nil || string(params["contents"]) != "[]" {
				t.Fatalf("params %s", r.params)
			}
		})
	}
	if _, err := Parse("/v1beta/models/m:generateContent", []byte(`{"generationConfig":{}}`)); err != ErrNoMessages {
		t.Fatalf("a body without contents: %v, want ErrNoMessages", err)
	}
}
