package langchaingo

// The overflow classifiers (the core's history.ParseOverflow and this
// package's ParseOverflow) driven by LangChainGo's real OpenAI and Anthropic
// models, each pointed at an httptest server that answers with the
// provider's real status, headers and error body. The Google AI model needs
// modules this adapter does not require; its cases are in the nested module
// ./sdktest.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"
)

// sdkCase is one answer of a provider and what must be made of it.
type sdkCase struct {
	name   string
	status int
	header map[string]string // Content-Type defaults to application/json
	body   string
	want   bool
	ov     history.Overflow
	// source names where the body was found (owner/repo#N or a URL), or
	// says "constructed".
	source string
	// coreMisses, when set, says why the core alone (history.ParseOverflow
	// on the client's error) gets this case wrong: its verdict is then the
	// opposite of want. Empty: the core gets it right unaided.
	coreMisses string
	// mappedCoreMisses is the same for the client's error after
	// LangChainGo's own mapping (the provider's MapError, an *llms.Error).
	mappedCoreMisses string
}

// serve answers every request with tc's status, headers and body.
func serve(t *testing.T, tc sdkCase) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range tc.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(tc.status)
		_, _ = w.Write([]byte(tc.body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

var hello = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hello")}

// checkOverflow runs the assertions every provider shares on the error err
// that a LangChainGo model returned for tc, and on mapped, the same error
// after the provider's MapError.
func checkOverflow(t *testing.T, tc sdkCase, err, mapped error) {
	t.Helper()
	if err == nil {
		t.Fatal("the request succeeded")
	}
	// LangChainGo v0.1.14 returns the HTTP error as text, not as *llms.Error:
	// its models do not call their own MapError.
	var le *llms.Error
	if errors.As(err, &le) {
		t.Fatalf("the model returned an *llms.Error (%v); LangChainGo now maps its errors, revisit ParseOverflow", err)
	}
	if want := fmt.Sprintf("%s%d", statusPrefix, tc.status); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not carry %q", err, want)
	}

	wrapped := fmt.Errorf("agent turn 3: %w", err)
	if ov, ok := ParseOverflow(wrapped); ok != tc.want || ov != tc.ov {
		t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, err)
	}
	if IsContextOverflow(wrapped) != tc.want {
		t.Fatal("IsContextOverflow disagrees with ParseOverflow")
	}
	coreOv, coreOK := history.ParseOverflow(wrapped)
	if tc.coreMisses == "" && (coreOK != tc.want || coreOv != tc.ov) {
		t.Fatalf("history.ParseOverflow = %+v, %v; want %+v, %v unaided\nerror: %v", coreOv, coreOK, tc.ov, tc.want, err)
	}
	if tc.coreMisses != "" && coreOK == tc.want {
		t.Fatalf("history.ParseOverflow now gets it right (%+v, %v); drop coreMisses %q", coreOv, coreOK, tc.coreMisses)
	}

	// After LangChainGo's own mapping: an *llms.Error whose text is only
	// LangChainGo's label, wrapping the client's error.
	if !errors.As(mapped, &le) || le.Cause != err {
		t.Fatalf("MapError returned %T (%v), not an *llms.Error wrapping the client's error", mapped, mapped)
	}
	wrappedMapped := fmt.Errorf("agent turn 3: %w", mapped)
	if ov, ok := ParseOverflow(wrappedMapped); ok != tc.want || ov != tc.ov {
		t.Fatalf("after MapError (%q): ParseOverflow = %+v, %v; want %+v, %v", mapped, ov, ok, tc.ov, tc.want)
	}
	mOv, mOK := history.ParseOverflow(wrappedMapped)
	if tc.mappedCoreMisses == "" && (mOK != tc.want || mOv != tc.ov) {
		t.Fatalf("after MapError (%q): history.ParseOverflow = %+v, %v; want %+v, %v unaided", mapped, mOv, mOK, tc.ov, tc.want)
	}
	if tc.mappedCoreMisses != "" && mOK == tc.want {
		t.Fatalf("after MapError: history.ParseOverflow now gets it right (%+v, %v); drop mappedCoreMisses %q", mOv, mOK, tc.mappedCoreMisses)
	}
}

// Answers that are not JSON error bodies, the same from any provider.
var badBodies = []sdkCase{
	{
		name: "HTML 502 page from a proxy", status: http.StatusBadGateway,
		header: map[string]string{"Content-Type": "text/html"},
		body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
		source: "constructed (nginx's default 502 page)",
	},
	{
		name: "empty 400 body", status: http.StatusBadRequest,
		source: "constructed",
	},
}

func TestOverflowFromLangChainGoOpenAI(t *testing.T) {
	tests := []sdkCase{
		{
			name: "context_length_exceeded with sizes", status: http.StatusBadRequest,
			header: map[string]string{"X-Request-Id": "req_8f3c1e2a"},
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want:   true, ov: history.Overflow{Used: 4294, Limit: 4097},
			source:           "chathub-dev/chathub#126",
			mappedCoreMisses: `MapError finds "429" in "4294 tokens" and labels it "openai: rate_limit: Rate limit exceeded", a text the core rules out`,
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
			source: "mckaywrigley/chatbot-ui#102",
		},
		{
			// LangChainGo keeps only error.message; OpenRouter (and vLLM)
			// put the message at the top level, so the client's error is
			// "API returned unexpected status code: 400: " and the overflow
			// is lost before any classifier sees it.
			name: "OpenRouter body without an error member: LangChainGo drops the message", status: http.StatusBadRequest,
			body:   `{"message":"This endpoint's maximum context length is 200000 tokens. However, you requested about 264437 tokens (262437 of text input, 2000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","metadata":{"provider_name":null}}`,
			source: "tailcallhq/forgecode#1143",
		},
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			header: map[string]string{"Retry-After": "5"},
			body:   `{"error":{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"},"request_id":"req_011CY5YJLsmBrFu4pcWKKt5b","type":"error"}`,
			source: "Wei-Shaw/sub2api#572",
		},
		{
			name: "429 request larger than the TPM limit", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			source: "TheR1D/shell_gpt#653",
		},
		{
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:       `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			source:     "constructed (the status rules it out)",
			coreMisses: `the status is only in LangChainGo's text ("status code: 429"), which the core does not read`,
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tok`,
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model", status: http.StatusBadRequest,
			body:   `{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`,
			source: "danielmiessler/Fabric#1299 (the message and status; OpenAI's error envelope)",
		},
	}
	for _, tc := range append(tests, badBodies...) {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc)
			llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("sk-test"), openai.WithModel("gpt-4o-mini"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = llm.GenerateContent(context.Background(), hello)
			checkOverflow(t, tc, err, openai.MapError(err))
		})
	}
}

func TestOverflowFromLangChainGoAnthropic(t *testing.T) {
	tests := []sdkCase{
		{
			name: "prompt is too long", status: http.StatusBadRequest,
			header: map[string]string{"Request-Id": "req_011CWdepJvA2D819tdYYq4h7"},
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"},"request_id":"req_011CWdepJvA2D819tdYYq4h7"}`,
			want:   true, ov: history.Overflow{Used: 200251, Limit: 200000},
			source: "boldsoftware/exe.dev#62",
		},
		{
			name: "input length and max_tokens exceed context limit", status: http.StatusBadRequest,
			body: "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again\"},\"request_id\":\"req_011CUB2XUHWkFnQzxcKBbjpF\"}",
			want: true, ov: history.Overflow{Used: 178959, Limit: 136000},
			source: "docker/docker-agent#569",
		},
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			header: map[string]string{"Retry-After": "5"},
			body:   `{"type":"error","error":{"type":"rate_limit_error","message":"Extra usage is required for long context requests."},"request_id":"req_011CZf8TJf84hAUziB6LuRoc"}`,
			source: "anthropics/claude-code#42616",
		},
		{
			name: "429 input tokens per minute", status: http.StatusTooManyRequests,
			body:   `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 30,000 input tokens per minute. Please reduce the prompt length or the maximum tokens requested, or try again later."}}`,
			source: "stagewise-io/stagewise#927",
		},
		{
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:       `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"}}`,
			source:     "constructed (the status rules it out)",
			coreMisses: `the status is only in LangChainGo's text ("status code: 429"), which the core does not read`,
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tok`,
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model name", status: http.StatusBadRequest,
			body:   `{"type":"error","error":{"type":"invalid_request_error","message":"system: Invalid model name"}}`,
			source: "anthropics/claude-code#1607",
		},
	}
	for _, tc := range append(tests, badBodies...) {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc)
			llm, err := anthropic.New(anthropic.WithBaseURL(srv.URL), anthropic.WithToken("sk-ant-test"), anthropic.WithModel("claude-sonnet-4-5"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = llm.GenerateContent(context.Background(), hello)
			checkOverflow(t, tc, err, anthropic.MapError(err))
		})
	}
}
