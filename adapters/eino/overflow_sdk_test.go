package eino

// The core's overflow classifier driven by eino-ext's real OpenAI chat model
// (github.com/cloudwego/eino-ext/components/model/openai, over its go-openai
// fork) pointed at an httptest server that answers with OpenAI's real
// status, headers and error bodies, and with bodies that are not overflows.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	goopenai "github.com/meguminnnnnnnnn/go-openai"
)

func TestOverflowFromEinoOpenAI(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        bool
		ov          history.Overflow
		source      string
		// apiError: the body has an "error" object, so Generate returns
		// eino-ext's *openai.APIError; otherwise go-openai's *RequestError
		// (the status and the raw body), wrapped.
		apiError bool
	}{
		{
			name: "context_length_exceeded with sizes", status: http.StatusBadRequest,
			body: `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want: true, ov: history.Overflow{Used: 4294, Limit: 4097},
			source:   "chathub-dev/chathub#126",
			apiError: true,
		},
		{
			name: "context_length_exceeded with the completion reserved", status: http.StatusBadRequest,
			body: `{
  "error": {
    "message": "This model's maximum context length is 4097 tokens. However, you requested 4120 tokens (3120 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
    "type": "invalid_request_error",
    "param": "messages",
    "code": "context_length_exceeded"
  }
}
`,
			want: true, ov: history.Overflow{Used: 3120, Limit: 3097},
			source:   "mckaywrigley/chatbot-ui#102",
			apiError: true,
		},
		{
			// No "error" member: go-openai keeps the raw body in its
			// RequestError, whose text the core reads.
			name: "OpenRouter body without an error member", status: http.StatusBadRequest,
			body: `{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 264437 tokens (262437 of text input, 2000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","metadata":{"provider_name":null}}`,
			want: true, ov: history.Overflow{Used: 262437, Limit: 198000},
			source: "tailcallhq/forgecode#1143",
		},
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			body:     `{"error":{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"},"request_id":"req_011CY5YJLsmBrFu4pcWKKt5b","type":"error"}`,
			source:   "Wei-Shaw/sub2api#572",
			apiError: true,
		},
		{
			name: "429 request larger than the TPM limit", status: http.StatusTooManyRequests,
			body:     `{"error":{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			source:   "TheR1D/shell_gpt#653",
			apiError: true,
		},
		{
			// The status is a field (HTTPStatusCode), which the core does
			// not read, but the text names it: "status: 429 Too Many
			// Requests", a phrase that rules an overflow out.
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:     `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			source:   "constructed (the status rules it out)",
			apiError: true,
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
			body:   `{"error":{"message":"This model's maximum con`,
			source: "constructed",
		},
		{
			// go-openai keeps a body it cannot decode in its RequestError's
			// text, and the core reads an undecodable body as plain text: a
			// body cut after the overflow phrase still says what the server
			// said (docs/overflow.md), with the numbers it kept.
			name: "JSON body truncated after the overflow phrase", status: http.StatusBadRequest,
			body: `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tok`,
			want: true, ov: history.Overflow{Limit: 4097},
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model", status: http.StatusBadRequest,
			body:     `{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`,
			source:   "danielmiessler/Fabric#1299 (the message and status; OpenAI's error envelope)",
			apiError: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ct := tc.contentType
				if ct == "" {
					ct = "application/json"
				}
				w.Header().Set("Content-Type", ct)
				w.Header().Set("X-Request-Id", "req_8f3c1e2a")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			ctx := context.Background()
			cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{
				BaseURL: srv.URL, APIKey: "sk-test", Model: "gpt-4o-mini",
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cm.Generate(ctx, []*schema.Message{schema.UserMessage("hello")})
			if err == nil {
				t.Fatal("the request succeeded")
			}

			// The client's own error types.
			var apiErr *einoopenai.APIError
			var reqErr *goopenai.RequestError
			switch {
			case tc.apiError:
				if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tc.status {
					t.Fatalf("Generate returned %T (%v), not eino-ext's *openai.APIError with status %d", err, err, tc.status)
				}
			case !errors.As(err, &reqErr) || reqErr.HTTPStatusCode != tc.status || string(reqErr.Body) != tc.body:
				t.Fatalf("Generate returned %T (%v), not go-openai's *RequestError with status %d and the body", err, err, tc.status)
			}

			wrapped := fmt.Errorf("agent turn 3: %w", err)
			ov, ok := history.ParseOverflow(wrapped)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, err)
			}
			if history.IsContextOverflow(wrapped) != tc.want {
				t.Fatal("IsContextOverflow disagrees with ParseOverflow")
			}
		})
	}
}
