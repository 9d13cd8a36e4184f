package gemini

import (
	"testing"

	"google.golang.org/genai"
)

// TestSummaryRequest: the cache-safe form appends the instruction and sets
// maxOutputTokens alone, the caller's config untouched; it is refused for
// a call that forces a function call or a reply that is not text.
func TestSummaryRequest(t *testing.T) {
	tests := []struct {
		name   string
		config *genai.GenerateContentConfig
		ok     bool
		reason string
	}{
		{name: "no config", ok: true, reason: "a config is made for the cap"},
		{name: "tools, auto", config: &genai.GenerateContentConfig{Temperature: genai.Ptr[float32](0.1),
			ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto}}},
			ok: true, reason: "the model may answer in text"},
		{name: "text MIME type", config: &genai.GenerateContentConfig{ResponseMIMEType: "text/plain"}, ok: true, reason: "text is text"},
		{name: "ANY", config: &genai.GenerateContentConfig{
			ToolConfig: &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}}},
			reason: "a forced function call leaves no text"},
		{name: "JSON", config: &genai.GenerateContentConfig{ResponseMIMEType: "application/json"}, reason: "a JSON reply"},
		{name: "schema", config: &genai.GenerateContentConfig{ResponseJsonSchema: map[string]any{"type": "object"}}, reason: "a structured reply"},
		{name: "image", config: &genai.GenerateContentConfig{ResponseModalities: []string{"TEXT", "IMAGE"}}, reason: "an image reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := Request{Model: "gemini-2.5-flash", Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}, Config: tt.config}
			r, ok := summaryRequest(last, "summarise", 300)
			if ok != tt.ok || (ok && (len(r.Contents) != 2 || len(last.Contents) != 1 || r.Config.MaxOutputTokens != 300 || r.Model != last.Model)) {
				t.Fatalf("summaryRequest = %v, %+v (%s)", ok, r, tt.reason)
			}
			if ok && tt.config != nil && (tt.config.MaxOutputTokens != 0 || r.Config.Temperature != tt.config.Temperature) {
				t.Errorf("the config: caller's changed (%d) or not copied (%s)", tt.config.MaxOutputTokens, tt.reason)
			}
		})
	}
}
