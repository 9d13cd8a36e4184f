package goopenai

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	openai "github.com/sashabaranov/go-openai"
)

// clientError returns the error the real client returns for an HTTP
// answer of status and body.
func clientError(t *testing.T, status int, body string) error {
	t.Helper()
	return adaptertest.Refusal(t, status, body, func(base string) error {
		cfg := openai.DefaultConfig("sk-test")
		cfg.BaseURL = base + "/v1"
		_, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(),
			openai.ChatCompletionRequest{Model: "gpt-test", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
		return err
	})
}

// contractConversation is ten turns of a task, a call, its result and an
// answer.
func contractConversation() []openai.ChatCompletionMessage {
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: "be brief"}}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: "task " + strconv.Itoa(i) + strings.Repeat(" words", 20)},
			openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call(id, "read", "{}")}},
			openai.ChatCompletionMessage{Role: "tool", ToolCallID: id, Content: strings.Repeat("output line\n", 40)},
			openai.ChatCompletionMessage{Role: "assistant", Content: "done " + strconv.Itoa(i)})
	}
	return msgs
}

// TestContract runs the adapter through the contract every adapter keeps,
// its overflows the errors the real client returns for the providers'
// bodies (an *openai.APIError for OpenAI's, an *openai.RequestError for
// vLLM's and a plain-text one), wrapped or not; a rate limit that names
// tokens and an authentication error are no overflow.
func TestContract(t *testing.T) {
	est := adapter.Tokens(t, contractConversation())
	var overflows, others []error
	for _, body := range []string{
		fmt.Sprintf(`{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, est*2/3, est),
		fmt.Sprintf(`{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, 500 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, est*2/3, est+500, est),
		fmt.Sprintf(`The input (%d tokens) is longer than the model's context length (%d tokens).`, est, est*2/3),
	} {
		err := clientError(t, 400, body)
		overflows = append(overflows, err, fmt.Errorf("agent step: %w", err))
	}
	others = append(others,
		clientError(t, 429, `{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 25000, Requested 9000. Please try again in 8s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`),
		clientError(t, 401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	c := &adaptertest.Contract[openai.ChatCompletionMessage]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewConversations: func(s history.StateStore, opts ...history.Option) adaptertest.Conversations[openai.ChatCompletionMessage] {
			return NewConversations(s, opts...)
		},
		NewTrimmer: func(opts ...history.Option) adaptertest.Trimmer[openai.ChatCompletionMessage] {
			return NewTrimmer(opts...)
		},
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Task: func(s string) openai.ChatCompletionMessage {
			return openai.ChatCompletionMessage{Role: "user", Content: s}
		},
		Invalid:    []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}, {Role: "robot"}},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows: overflows, NotOverflows: others,
	}
	c.Run(t)
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
