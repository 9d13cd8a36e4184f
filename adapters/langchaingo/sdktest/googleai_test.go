package sdktest

// LangChainGo's Google AI model (llms/googleai, over generative-ai-go's REST
// client) pointed at an httptest server through a base-URL option
// (option.WithEndpoint), answering as the Gemini API does.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/langchaingo"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/googleai"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

func TestOverflowFromLangChainGoGoogleAI(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        bool
		ov          history.Overflow
		source      string
		// coreMisses, when set, says why history.ParseOverflow alone gets
		// the case wrong (its verdict is then the opposite of want).
		coreMisses string
	}{
		{
			name: "input token count exceeds the maximum", status: http.StatusBadRequest,
			body: `{
  "error": {
    "code": 400,
    "message": "The input token count (132478) exceeds the maximum number of tokens allowed (131072).",
    "status": "INVALID_ARGUMENT"
  }
}
`,
			want: true, ov: history.Overflow{Used: 132478, Limit: 131072},
			source: "google-gemini/gemini-cli#4118",
		},
		{
			name: "with the errors list of Google API errors", status: http.StatusBadRequest,
			body: `{"error":{"code":400,"message":"The input token count (337807) exceeds the maximum number of tokens allowed (65536).","errors":[{"message":"The input token count (337807) exceeds the maximum number of tokens allowed (65536).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`,
			want: true, ov: history.Overflow{Used: 337807, Limit: 65536},
			source: "google-gemini/gemini-cli#12069",
		},
		{
			name: "429 quota on input tokens per minute", status: http.StatusTooManyRequests,
			body:   `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_input_token_count","quotaId":"GenerateContentInputTokensPerModelPerMinute-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"250000"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Google developers documentation.","url":"https://ai.google.dev/gemini-api/docs/rate-limits."}]}]}}`,
			source: "google-gemini/gemini-cli-action#36",
		},
		{
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:   `{"error":{"code":429,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"RESOURCE_EXHAUSTED"}}`,
			source: "constructed (the status rules it out)",
		},
		{
			name: "HTML 502 page from a proxy", status: http.StatusBadGateway, contentType: "text/html",
			body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
			source: "constructed (nginx's default 502 page)",
		},
		{
			name: "empty 400 body", status: http.StatusBadRequest,
			source: "constructed",
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"error":{"code":400,"message":"The input token count (132478) exceeds the maxim`,
			source: "constructed",
		},
		{
			// googleapi's Error keeps a body it cannot decode in its text,
			// and the core reads an undecodable body as plain text: a body
			// cut after the overflow phrase still says what the server said
			// (docs/overflow.md, "truncated JSON").
			name: "JSON body truncated after the overflow phrase", status: http.StatusBadRequest,
			body: `{"error":{"code":400,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","sta`,
			want: true, ov: history.Overflow{Used: 132478, Limit: 131072},
			source: "constructed",
		},
		{
			name: "unrelated 400: model name format", status: http.StatusBadRequest,
			body:   `{"error":{"code":400,"message":"* GenerateContentRequest.model: unexpected model name format\n","status":"INVALID_ARGUMENT"}}`,
			source: "songquanpeng/one-api#938",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				adaptertest.Answer(w, tc.status, tc.contentType, "application/json; charset=UTF-8", tc.body, "Vary", "Origin, X-Origin, Referer")
			}))
			defer srv.Close()
			ctx := context.Background()
			llm, err := googleai.New(ctx, googleai.WithAPIKey("test-key"), withEndpoint(srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			defer llm.Close()
			_, err = llm.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")})
			if err == nil {
				t.Fatal("the request succeeded")
			}

			// The client's own error types: gax's APIError over googleapi's.
			var apiErr *apierror.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPCode() != tc.status {
				t.Fatalf("googleai returned %T (%v), not an *apierror.APIError with HTTP status %d", err, err, tc.status)
			}
			var gErr *googleapi.Error
			if !errors.As(err, &gErr) || gErr.Code != tc.status || gErr.Body != tc.body {
				t.Fatalf("no *googleapi.Error with the status and body under %T", err)
			}

			wrapped := fmt.Errorf("agent turn 3: %w", err)
			ov, ok := langchaingo.ParseOverflow(wrapped)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, err)
			}
			if langchaingo.IsContextOverflow(wrapped) != tc.want {
				t.Fatal("IsContextOverflow disagrees with ParseOverflow")
			}
			coreOv, coreOK := history.ParseOverflow(wrapped)
			if tc.coreMisses == "" && (coreOK != tc.want || coreOv != tc.ov) {
				t.Fatalf("history.ParseOverflow = %+v, %v; want %+v, %v unaided\nerror: %v", coreOv, coreOK, tc.ov, tc.want, err)
			}
			if tc.coreMisses != "" && coreOK == tc.want {
				t.Fatalf("history.ParseOverflow now gets it right (%+v, %v); drop coreMisses %q", coreOv, coreOK, tc.coreMisses)
			}

			// LangChainGo's own mapping keeps the provider's error as Cause.
			mapped := fmt.Errorf("agent turn 3: %w", googleai.MapError(err))
			var le *llms.Error
			if !errors.As(mapped, &le) {
				t.Fatalf("MapError returned %T, not an *llms.Error", mapped)
			}
			if ov, ok := langchaingo.ParseOverflow(mapped); ok != tc.want || ov != tc.ov {
				t.Fatalf("after MapError (%q): ParseOverflow = %+v, %v; want %+v, %v", strings.TrimSpace(mapped.Error()), ov, ok, tc.ov, tc.want)
			}
		})
	}
}

// withEndpoint points the Google AI client at url: the REST client of
// generative-ai-go takes the base URL from option.WithEndpoint.
func withEndpoint(url string) googleai.Option {
	return func(o *googleai.Options) {
		o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(url))
	}
}
