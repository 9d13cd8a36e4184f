package sdklatest

// The core's overflow classifier driven by the latest openai-go/v3 (this
// module's go.mod) against an httptest server that answers as OpenAI does:
// the cases of adapters/openai/overflow_sdk_test.go, which runs them against
// the adapter's minimum (v3.44.0), plus bodies that are not overflows, on
// Chat Completions and on the Responses API.
//
// In recent releases (*openai.Error).Error() is only "OpenAI API error: 400
// Bad Request": the message is in Code, Message and RawJSON() (the body's
// "error" object), which the core reads.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	adapter "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// sdkCase is one answer of the server and what must be made of it.
type sdkCase struct {
	name        string
	status      int
	contentType string // application/json when empty
	body        string
	want        bool
	ov          history.Overflow
	// source names where the body was found (owner/repo#N or a URL), or
	// says "constructed".
	source string
	// raw is what RawJSON() must return: the body's "error" object, or a
	// prefix of it when the body is cut short; empty when the body has no
	// "error" member.
	raw string
	// responses: also answer a Responses API request (client.Responses.New)
	// with it.
	responses bool
	// lost, when set, says why an overflow never reaches the classifier.
	lost string
}

// serve answers every request with tc's status, headers and body.
func serve(t *testing.T, tc sdkCase) *openai.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers := []string{"X-Request-Id", "req_8f3c1e2a"}
		if tc.status == http.StatusTooManyRequests {
			headers = append(headers, "Retry-After", "5")
		}
		adaptertest.Answer(w, tc.status, tc.contentType, "application/json", tc.body, headers...)
	}))
	t.Cleanup(srv.Close)
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	return &client
}

const (
	chatOverflowError      = `{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}`
	responsesOverflowError = `{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}`
	tpmError               = `{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}`
	invalidModelError      = `{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}`
	overflowAs429Error     = `{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}`
)

var sdkCases = []sdkCase{
	// The cases of adapters/openai/overflow_sdk_test.go.
	{
		name: "context_length_exceeded with sizes", status: http.StatusBadRequest,
		body: `{"error":` + chatOverflowError + `}`, raw: chatOverflowError,
		want: true, ov: history.Overflow{Used: 4294, Limit: 4097},
		source: "chathub-dev/chathub#126",
	},
	{
		name: "Responses API, no sizes", status: http.StatusBadRequest,
		body: `{"error":` + responsesOverflowError + `}`, raw: responsesOverflowError,
		want:      true,
		source:    "anomalyco/opencode#6071",
		responses: true,
	},
	{
		name: "request larger than the TPM limit", status: http.StatusTooManyRequests,
		body: `{"error":` + tpmError + `}`, raw: tpmError,
		source: "TheR1D/shell_gpt#653",
	},
	// Bodies that are not overflows.
	{
		name: "429 for long context requests", status: http.StatusTooManyRequests,
		body:      `{"error":{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"},"request_id":"req_011CY5YJLsmBrFu4pcWKKt5b","type":"error"}`,
		raw:       `{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"}`,
		source:    "Wei-Shaw/sub2api#572",
		responses: true,
	},
	{
		// openai-go keeps the status in a field, which the core does not
		// read, but Error() names it: "429 Too Many Requests" rules the
		// overflow out.
		name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
		body: `{"error":` + overflowAs429Error + `}`, raw: overflowAs429Error,
		source:    "constructed (the status rules it out)",
		responses: true,
	},
	{
		name: "HTML 502 page from a proxy", status: http.StatusBadGateway, contentType: "text/html",
		body:      "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
		source:    "constructed (nginx's default 502 page)",
		responses: true,
	},
	{
		name: "empty 400 body", status: http.StatusBadRequest,
		source:    "constructed",
		responses: true,
	},
	{
		name: "truncated JSON body", status: http.StatusBadRequest,
		body:      `{"error":{"message":"This model's maximum con`,
		raw:       `{"message":"This model's maximum con`,
		source:    "constructed",
		responses: true,
	},
	{
		name: "unrelated 400: invalid model", status: http.StatusBadRequest,
		body: `{"error":` + invalidModelError + `}`, raw: invalidModelError,
		source:    "danielmiessler/Fabric#1299 (the message and status; OpenAI's error envelope)",
		responses: true,
	},
	{
		name: "OpenRouter body without an error member", status: http.StatusBadRequest,
		body:   `{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 264437 tokens (262437 of text input, 2000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","metadata":{"provider_name":null}}`,
		source: "tailcallhq/forgecode#1143",
		lost:   `openai-go keeps only the body's "error" member (RawJSON is empty, Error() names the status); the body is left only in Response.Body`,
	},
}

func TestOverflowFromLatestOpenAIClient(t *testing.T) {
	for _, tc := range sdkCases {
		t.Run("chat/"+tc.name, func(t *testing.T) {
			client := serve(t, tc)
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    "gpt-4o-mini",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
			})
			checkOverflow(t, tc, err)
		})
		if !tc.responses {
			continue
		}
		t.Run("responses/"+tc.name, func(t *testing.T) {
			client := serve(t, tc)
			_, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
				Model: "gpt-5",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")},
			})
			checkOverflow(t, tc, err)
		})
	}
}

func checkOverflow(t *testing.T, tc sdkCase, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the request succeeded")
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("openai-go returned %T, not *openai.Error: %v", err, err)
	}
	if apiErr.StatusCode != tc.status {
		t.Fatalf("StatusCode = %d, want %d", apiErr.StatusCode, tc.status)
	}
	if want := fmt.Sprintf("OpenAI API error: %d %s", tc.status, http.StatusText(tc.status)); err.Error() != want {
		t.Fatalf("Error() = %q, want only the status, %q", err.Error(), want)
	}
	if apiErr.RawJSON() != tc.raw {
		t.Fatalf("RawJSON() = %q, want %q", apiErr.RawJSON(), tc.raw)
	}

	if tc.lost != "" {
		// The body is still there for whoever reads the response.
		body, rerr := io.ReadAll(apiErr.Response.Body)
		if rerr != nil || string(body) != tc.body {
			t.Fatalf("Response.Body = %q, %v; want the body", body, rerr)
		}
	}

	wrapped := fmt.Errorf("agent turn 3: %w", err)
	ov, ok := history.ParseOverflow(wrapped)
	if ok != tc.want || ov != tc.ov {
		t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s; %s)\nRawJSON: %s", ov, ok, tc.ov, tc.want, tc.source, tc.lost, apiErr.RawJSON())
	}
	if history.IsContextOverflow(wrapped) != tc.want {
		t.Fatal("IsContextOverflow disagrees with ParseOverflow")
	}
}

// TestRecoverWithLatestOpenAIClient feeds the real client's errors to
// history.RecoverOverflow, on a history converted by the adapter built
// against the latest openai-go.
func TestRecoverWithLatestOpenAIClient(t *testing.T) {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse.")}
	for i := range 6 {
		msgs = append(msgs,
			openai.UserMessage(fmt.Sprintf("question %d: %0400d", i, i)),
			openai.AssistantMessage(fmt.Sprintf("answer %d: %0400d", i, i)))
	}
	hist, err := adapter.ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range sdkCases[:3] {
		t.Run(tc.name, func(t *testing.T) {
			client := serve(t, tc)
			_, provErr := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: msgs})
			res, err := history.RecoverOverflow(hist, provErr, 1)
			if !tc.want {
				if !errors.Is(err, history.ErrNotOverflow) {
					t.Fatalf("RecoverOverflow = %v, want ErrNotOverflow", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("RecoverOverflow: %v", err)
			}
			if !res.Trimmed || len(res.Messages) >= len(hist) {
				t.Fatalf("RecoverOverflow dropped nothing: Trimmed %v, %d of %d messages", res.Trimmed, len(res.Messages), len(hist))
			}
		})
	}
}
