package gemini

// The core's overflow classifier driven by the real google.golang.org/genai
// client, on both of its backends (the Gemini API and Vertex AI), against an
// httptest server that answers as Google does: its status, its headers and
// its error bodies, copied from public reports (each case names its source)
// or, for the malformed answers a proxy can give, constructed.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/auth"
	"github.com/histrim/history"
	"google.golang.org/genai"
)

// sdkCase is one answer of the API and what the classifier must make of the
// error the SDK builds from it.
type sdkCase struct {
	name   string
	status int
	// contentType defaults to Google's "application/json; charset=UTF-8".
	contentType string
	body        string
	want        bool
	ov          history.Overflow
	// source is where the body was found (owner/repo#N), or "constructed".
	source string
}

var sdkCases = []sdkCase{
	// Overflows. Google answers with the same envelope on both backends;
	// the Gemini API adds an "errors" array that genai.APIError drops.
	{
		name: "Gemini API: input token count exceeds the maximum", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","errors":[{"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1196265, Limit: 1048575},
		source: "envelope of google-gemini/gemini-cli#6678; message as quoted in public overflow tests (find_string \"input token count (1196265)\")",
	},
	{
		name: "Gemini API: as reported", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","errors":[{"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1200293, Limit: 1048576},
		source: "google-gemini/gemini-cli#6678",
	},
	{
		name: "Vertex AI: input token count exceeds the maximum", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1066750) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1066750, Limit: 1048575},
		source: "dyad-sh/dyad#403 (VertexAIException body)",
	},
	{
		name: "Vertex AI: regional 65536 limit", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (81881) exceeds the maximum number of tokens allowed (65536).","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 81881, Limit: 65536},
		source: "googleapis/python-genai#2466",
	},
	{
		name: "Vertex AI: limit only", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count exceeds the maximum number of tokens allowed 1048576.","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Limit: 1048576},
		source: "warpdotdev/warp#15662 (printed by a genai APIError: \"Error 400, Message: ..., Status: INVALID_ARGUMENT, Details: []\")",
	},
	{
		name: "Vertex AI: unable to submit request", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"Unable to submit request because the input token count is 1251952 but model only supports up to 1048576. Reduce the input token count and try again. You can also use the CountTokens API to calculate prompt token count and billable characters. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/learn/models","status":"INVALID_ARGUMENT"}}`,
		want:   true,
		ov:     history.Overflow{Used: 1251952, Limit: 1048576},
		source: "message of google-gemini/gemini-cli#19727, in the INVALID_ARGUMENT envelope of the cases above",
	},

	// Not overflows.
	{
		name: "HTML 502 from a proxy", status: http.StatusBadGateway, contentType: "text/html",
		body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n",
		source: "the Cloudflare page of anthropics/claude-code#67734, as any proxy in front of Google may answer",
	},
	{
		name: "empty body with 400", status: http.StatusBadRequest,
		source: "constructed",
	},
	{
		name: "truncated JSON", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"The input token count (1196265) exce`,
		source: "constructed: the first body above, cut by a dropped connection before the phrase",
	},
	{
		name: "429 quota on input token count", status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-2.5-pro\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro\nPlease retry in 38.863719904s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}]}}`,
		source: "continuedev/continue#10085",
	},
	{
		name: "429 resource exhausted", status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`,
		source: "googleapis/python-genai#2065",
	},
	{
		name: "429 whose message mentions the context window", status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"Too many tokens for the context window of this model this minute: the input token count exceeds the maximum number of tokens allowed (1000000) per minute.","status":"RESOURCE_EXHAUSTED"}}`,
		source: "constructed",
	},
	{
		name: "400 invalid image", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INVALID_ARGUMENT"}}`,
		source: "google-gemini/gemini-cli#5064",
	},
	{
		name: "400 image not valid", status: http.StatusBadRequest,
		body:   `{"error":{"code":400,"message":"Provided image is not valid.","errors":[{"message":"Provided image is not valid.","domain":"global","reason":"badRequest"}],"status":"INVALID_ARGUMENT"}}`,
		source: "google-gemini/gemini-cli#27244",
	},
}

// backend is one way of building the real client against a test server.
type backend struct {
	name string
	// path is the request path the client must use for model m.
	path func(m string) string
	// auth checks the credentials of a request.
	auth func(r *http.Request) bool
	new  func(ctx context.Context, baseURL string) (*genai.Client, error)
}

// fakeToken is an OAuth2 token source that needs no network: Vertex AI
// normally takes Application Default Credentials, which would look for a
// service account or the metadata server.
type fakeToken struct{}

func (fakeToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: "ya29.test-token", Type: "Bearer"}, nil
}

var backends = []backend{
	{
		name: "GeminiAPI",
		path: func(m string) string { return "/v1beta/models/" + m + ":generateContent" },
		auth: func(r *http.Request) bool { return r.Header.Get("X-Goog-Api-Key") == "test-key" },
		new: func(ctx context.Context, baseURL string) (*genai.Client, error) {
			return genai.NewClient(ctx, &genai.ClientConfig{
				APIKey:      "test-key",
				Backend:     genai.BackendGeminiAPI,
				HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
			})
		},
	},
	{
		name: "VertexAI",
		path: func(m string) string {
			return "/v1beta1/projects/test-project/locations/us-central1/publishers/google/models/" + m + ":generateContent"
		},
		auth: func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer ya29.test-token" },
		new: func(ctx context.Context, baseURL string) (*genai.Client, error) {
			return genai.NewClient(ctx, &genai.ClientConfig{
				Backend:     genai.BackendVertexAI,
				Project:     "test-project",
				Location:    "us-central1",
				Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: fakeToken{}}),
				HTTPOptions: genai.HTTPOptions{BaseURL: baseURL},
			})
		},
	},
}

const model = "gemini-2.5-pro"

// serve starts a server that answers every request with tc, checks that the
// client sent it where and as b says, and counts the requests it gets.
func serve(t *testing.T, b backend, tc sdkCase, stream bool) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	want := b.path(model)
	if stream {
		want = strings.TrimSuffix(want, ":generateContent") + ":streamGenerateContent"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != want || !b.auth(r) {
			t.Errorf("unexpected request %s %s (want path %s and the %s credentials)", r.Method, r.URL, want, b.name)
		}
		ct := tc.contentType
		if ct == "" {
			ct = "application/json; charset=UTF-8"
		}
		// The headers Google's front end sends with an error
		// (google-gemini/gemini-cli#3859).
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Vary", "Origin, X-Origin, Referer")
		w.Header().Set("Server", "ESF")
		w.WriteHeader(tc.status)
		_, _ = w.Write([]byte(tc.body))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// checkSDKError asserts that err is the SDK's genai.APIError for tc and that
// the core classifies it, bare and wrapped, as tc says.
func checkSDKError(t *testing.T, tc sdkCase, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the request succeeded")
	}
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("genai returned %T, not genai.APIError: %v", err, err)
	}
	if apiErr.Code != tc.status {
		t.Fatalf("APIError.Code %d, want %d", apiErr.Code, tc.status)
	}
	for _, e := range []error{err, fmt.Errorf("agent turn 3: %w", err), fmt.Errorf("retry: %w", fmt.Errorf("agent turn 3: %w", err))} {
		ov, ok := history.ParseOverflow(e)
		if ok != tc.want || ov != tc.ov {
			t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, e)
		}
		if history.IsContextOverflow(e) != tc.want {
			t.Fatalf("IsContextOverflow disagrees with ParseOverflow\nerror: %v", e)
		}
	}
}

func TestOverflowFromGenAIClient(t *testing.T) {
	for _, b := range backends {
		for _, tc := range sdkCases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				srv, calls := serve(t, b, tc, false)
				client, err := b.new(ctx, srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				_, err = client.Models.GenerateContent(ctx, model, genai.Text("hello"), nil)
				checkSDKError(t, tc, err)
				if n := calls.Load(); n != 1 {
					t.Fatalf("the server got %d requests, want 1", n)
				}
			})
		}
	}
}

// An error status answered to a streaming request comes out of the
// iterator, as the same genai.APIError.
func TestOverflowFromGenAIStream(t *testing.T) {
	for _, b := range backends {
		for _, tc := range sdkCases {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				srv, _ := serve(t, b, tc, true)
				client, err := b.new(ctx, srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				var got error
				for resp, err := range client.Models.GenerateContentStream(ctx, model, genai.Text("hello"), nil) {
					if err != nil {
						got = err
						break
					}
					t.Fatalf("got a response: %+v", resp)
				}
				checkSDKError(t, tc, got)
			})
		}
	}
}

// A 429 whose only sign of a rate limit is its status, with an overflow
// phrase in its message (a gateway forwarding the provider's message under
// its own status): genai.APIError keeps the status in a field (Code), not
// behind a method, and Error() prints the bare number ("Error 429, ...").
// The core reads the status from that field and rules the overflow out.
func TestOverflowGenAIStatusField(t *testing.T) {
	tc := sdkCase{
		status: http.StatusTooManyRequests,
		body:   `{"error":{"code":429,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)."}}`,
		want:   false, // the core reads the 429 from APIError.Code
		source: "constructed",
	}
	ctx := context.Background()
	for _, b := range backends {
		srv, _ := serve(t, b, tc, false)
		client, err := b.new(ctx, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.Models.GenerateContent(ctx, model, genai.Text("hello"), nil)
		checkSDKError(t, tc, err)
	}
}
