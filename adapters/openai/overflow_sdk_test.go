package openai

// The core's overflow classifier driven by the real openai-go client against
// an httptest server that answers as OpenAI does when the messages do not fit.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// callWithStatus sends one chat request through openai-go to a server that
// answers status with body (of contentType, application/json when empty),
// and returns the client's error.
func callWithStatus(t *testing.T, status int, contentType, body string) error {
	t.Helper()
	if contentType == "" {
		contentType = "application/json"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	if err == nil {
		t.Fatal("the request succeeded")
	}
	return err
}

func TestOverflowFromOpenAIClient(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
		ov     history.Overflow
		source string
		// contentType is application/json when empty.
		contentType string
		// noBody: the body has no "error" member, so RawJSON is empty.
		noBody bool
	}{
		{
			name: "context_length_exceeded with sizes", status: http.StatusBadRequest,
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want:   true,
			ov:     history.Overflow{Used: 4294, Limit: 4097},
			source: "chathub-dev/chathub#126",
		},
		{
			name: "Responses API, no sizes", status: http.StatusBadRequest,
			body:   `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`,
			want:   true,
			source: "anomalyco/opencode#6071",
		},
		{
			name: "request larger than the TPM limit", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			source: "TheR1D/shell_gpt#653",
		},
		// Bodies that are not overflows.
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"},"request_id":"req_011CY5YJLsmBrFu4pcWKKt5b","type":"error"}`,
			source: "Wei-Shaw/sub2api#572",
		},
		{
			// The status is a field, which the core does not read, but
			// Error() names it: "429 Too Many Requests" rules it out.
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			source: "constructed (the status rules it out)",
		},
		{
			name: "HTML 502 page from a proxy", status: http.StatusBadGateway, contentType: "text/html",
			body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
			source: "constructed (nginx's default 502 page)", noBody: true,
		},
		{
			name: "empty 400 body", status: http.StatusBadRequest,
			source: "constructed", noBody: true,
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"error":{"message":"This model's maximum con`,
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model", status: http.StatusBadRequest,
			body:   `{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`,
			source: "danielmiessler/Fabric#1299 (the message and status; OpenAI's error envelope)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := callWithStatus(t, tc.status, tc.contentType, tc.body)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("openai-go returned %T, not *openai.Error: %v", err, err)
			}
			if (apiErr.RawJSON() == "") != tc.noBody {
				t.Fatalf("RawJSON() = %q; want it empty only for a body without an error member", apiErr.RawJSON())
			}
			wrapped := fmt.Errorf("agent turn 3: %w", err)
			ov, ok := history.ParseOverflow(wrapped)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, err)
			}
			if history.IsContextOverflow(wrapped) != tc.want {
				t.Fatal("IsContextOverflow disagrees with ParseOverflow")
			}
			// Recent openai-go v3 releases print only the status in Error();
			// the body the SDK kept (the "error" object) must suffice.
			bodyOnly := statusOnly{status: tc.status, raw: apiErr.RawJSON()}
			if ov2, ok2 := history.ParseOverflow(bodyOnly); ok2 != tc.want || ov2 != tc.ov {
				t.Fatalf("from RawJSON alone: ParseOverflow = %+v, %v; want %+v, %v\nbody: %s", ov2, ok2, tc.ov, tc.want, apiErr.RawJSON())
			}
		})
	}
}

// statusOnly carries the body the real client kept, with the Error() text
// of recent openai-go v3 releases, which names only the HTTP status.
type statusOnly struct {
	status int
	raw    string
}

func (e statusOnly) Error() string {
	return fmt.Sprintf("OpenAI API error: %d %s", e.status, http.StatusText(e.status))
}
func (e statusOnly) RawJSON() string { return e.raw }
