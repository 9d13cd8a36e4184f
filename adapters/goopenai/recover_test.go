package goopenai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	openai "github.com/sashabaranov/go-openai"
)

// clientError returns the error the real client returns for an HTTP
// answer of status and body.
func clientError(t *testing.T, status int, body string) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL + "/v1"
	_, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(),
		openai.ChatCompletionRequest{Model: "gpt-test", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	if err == nil {
		t.Fatal("no error")
	}
	return err
}

// TestRecoverOverflowClientErrors: the errors the real client returns for
// the providers' overflow bodies (an *openai.APIError for OpenAI's, an
// *openai.RequestError for a body it cannot read as OpenAI's) lead to a
// smaller history; a rate limit and an authentication error do not.
func TestRecoverOverflowClientErrors(t *testing.T) {
	msgs := conversation(8, 200)
	h, _ := ToHistory(msgs)
	est := history.Estimate(h, nil)
	for _, tc := range []struct {
		status   int
		body     string
		overflow bool
		reason   string
	}{
		{400, fmt.Sprintf(`{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, est*2/3, est),
			true, "OpenAI's body: an *openai.APIError"},
		{400, fmt.Sprintf(`{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, 500 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, est*2/3, est+500, est),
			true, "vLLM's body: an *openai.RequestError"},
		{400, fmt.Sprintf(`The input (%d tokens) is longer than the model's context length (%d tokens).`, est, est*2/3),
			true, "a plain-text body: an *openai.RequestError"},
		{429, `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 25000, Requested 9000. Please try again in 8s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			false, "a rate limit that names tokens"},
		{401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, false, "authentication"},
	} {
		err := clientError(t, tc.status, tc.body)
		var api *openai.APIError
		var req *openai.RequestError
		if !errors.As(err, &api) && !errors.As(err, &req) {
			t.Fatalf("%s: client error %T", tc.reason, err)
		}
		for _, e := range []error{err, fmt.Errorf("agent step: %w", err)} {
			out, res, rerr := RecoverOverflow(msgs, e, 1)
			switch {
			case tc.overflow && (rerr != nil || res.DroppedTurns == 0 || len(out) >= len(msgs)):
				t.Errorf("%s (%T): %v, %d turns dropped", tc.reason, err, rerr, res.DroppedTurns)
			case !tc.overflow && (!errors.Is(rerr, history.ErrNotOverflow) || len(out) != len(msgs)):
				t.Errorf("%s: %v, %d messages", tc.reason, rerr, len(out))
			}
			if tc.overflow && Validate(out) != nil {
				t.Errorf("%s: %v", tc.reason, Validate(out))
			}
		}
	}
}

// TestRecoverOverflowCannot: with only the latest turn left, a
// *history.RecoverError with what is left.
func TestRecoverOverflowCannot(t *testing.T) {
	msgs := conversation(1, 300)
	err := clientError(t, 400, `{"error":{"message":"This model's maximum context length is 10 tokens. However, your messages resulted in 900 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
	out, _, rerr := RecoverOverflow(msgs, err, 1)
	var re *history.RecoverError
	if !errors.As(rerr, &re) || !errors.Is(rerr, history.ErrCannotRecover) || len(out) == 0 {
		t.Errorf("%v, %d messages", rerr, len(out))
	}
}
