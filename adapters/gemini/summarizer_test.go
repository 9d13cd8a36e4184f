package gemini_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/histrim/history"
	hgemini "github.com/histrim/history/adapters/gemini"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/summarize"
	"google.golang.org/genai"
)

// summaryConfig is the configuration of the tests' conversation: a system
// instruction and a tool.
var summaryConfig = &genai.GenerateContentConfig{
	SystemInstruction: genai.NewContentFromText("You are a coding agent.", genai.RoleUser),
	Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "read_file",
		ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}}}},
	Temperature: genai.Ptr[float32](0.2),
}

// TestSummarizer runs the Summarizer with genai's client against a local
// Gemini API server (adaptertest.Summary).
func TestSummarizer(t *testing.T) {
	c := &adaptertest.Summary[*genai.Content]{
		Path:   ":generateContent",
		List:   "contents",
		Caps:   []string{"generationConfig.maxOutputTokens"},
		Reply:  geminiReply,
		Errors: geminiErrors,
		New: func(url string, cfg summarize.Config) adaptertest.Summarizer {
			return hgemini.NewSummarizer(summaryClient(url), cfg)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.SummaryTrimmer[*genai.Content] {
			return hgemini.NewTrimmer(summaryConfig.SystemInstruction, opts...)
		},
		Open: func() []*genai.Content {
			return []*genai.Content{
				genai.NewContentFromText(adaptertest.SummaryTask, genai.RoleUser),
				genai.NewContentFromFunctionCall("read_file", map[string]any{"path": "main.go"}, genai.RoleModel),
				genai.NewContentFromFunctionResponse("read_file", map[string]any{"output": adaptertest.SummaryFile}, genai.RoleUser),
				genai.NewContentFromText("main.go is an empty program.", genai.RoleModel),
			}
		},
		User:      func(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleUser) },
		Assistant: func(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleModel) },
		ToHistory: hgemini.ToHistory,
		Send: func(ctx context.Context, s adaptertest.Summarizer, url string, contents []*genai.Content) (string, error) {
			s.(*hgemini.Summarizer).Sent(hgemini.Request{Model: "gemini-2.5-flash", Contents: contents, Config: summaryConfig})
			r, err := summaryClient(url).Models.GenerateContent(ctx, "gemini-2.5-flash", contents, summaryConfig)
			if err != nil {
				return "", err
			}
			return r.Candidates[0].Content.Parts[0].Text, nil
		},
	}
	c.Run(t)
}

// geminiErrors are the API's answers to a request it refuses, each from
// the source its comment names.
var geminiErrors = []adaptertest.ErrorAnswer{
	// google-gemini/gemini-cli#6678. The summariser then sends the plain
	// form, which the API refuses too.
	{Name: "400 input token count", Status: http.StatusBadRequest,
		Body: `{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","errors":[{"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`},
	// googleapis/python-genai#2065.
	{Name: "429 RESOURCE_EXHAUSTED", Status: http.StatusTooManyRequests,
		Body: `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`},
	// continuedev/continue#10085.
	{Name: "429 free tier quota", Status: http.StatusTooManyRequests,
		Body: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-2.5-pro\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro\nPlease retry in 38.863719904s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}]}}`},
	// The Cloudflare page of anthropics/claude-code#67734, as any proxy
	// in front of Google may answer.
	{Name: "502 from a proxy", Status: http.StatusBadGateway, ContentType: "text/html",
		Body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"},
}

func summaryClient(url string) *genai.Client {
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: url}})
	if err != nil {
		panic(err) // an API key and a backend: NewClient does not fail
	}
	return client
}

// geminiReply is a response whose candidate holds text; cut: it stopped
// at maxOutputTokens.
func geminiReply(text string, cut bool) string {
	finish := "STOP"
	if cut {
		finish = "MAX_TOKENS"
	}
	b, _ := json.Marshal(map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"finishReason": finish, "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 900, "cachedContentTokenCount": 768, "candidatesTokenCount": 40, "totalTokenCount": 940},
		"modelVersion":  "gemini-2.5-flash"})
	return string(b)
}
