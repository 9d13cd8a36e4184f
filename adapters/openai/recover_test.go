package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// clientError returns the error the real openai-go client returns for an
// HTTP 400 with body.
func clientError(t *testing.T, body string) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err == nil {
		t.Fatal("the request succeeded")
	}
	return err
}

// overflowBody is OpenAI's answer to a request of used tokens in a window
// of limit.
func overflowBody(limit, used int) string {
	return `{"error":{"message":"This model's maximum context length is ` + strconv.Itoa(limit) +
		` tokens. However, your messages resulted in ` + strconv.Itoa(used) +
		` tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
}

// agentTurns returns a system prompt and n turns, each a task, one tool
// call of size words and a final answer.
func agentTurns(n, words int) []openai.ChatCompletionMessageParamUnion {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are an agent.")}
	for i := range n {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			openai.UserMessage("Task "+strconv.Itoa(i)+": look it up."),
			assistantCalls("", functionCall(id, "lookup", `{"i":`+strconv.Itoa(i)+`}`)),
			openai.ToolMessage(strings.Repeat("result line ", words), id),
			openai.AssistantMessage("Answer "+strconv.Itoa(i)+"."))
	}
	return msgs
}

func TestRecoverOverflow(t *testing.T) {
	msgs := agentTurns(6, 200)
	hist := mustHistory(t, msgs)
	total := history.Estimate(hist, nil)
	sized := errors.New(overflowBody(total, total*5/4)) // the provider counts 25% more
	tests := []struct {
		name    string
		msgs    []openai.ChatCompletionMessageParamUnion
		err     error
		attempt int
		opts    []history.Option
		// want: the error (nil, a sentinel the error wraps); kept: the
		// native indices output in order (-1 a notice), nil to skip.
		want  error
		kept  []int
		check func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error)
	}{
		{
			name: "not an overflow: input unchanged", msgs: msgs, attempt: 1,
			err:  errors.New(`{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}`),
			want: history.ErrNotOverflow,
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if len(out) != len(msgs) || &out[0] != &msgs[0] || cap(out) != len(out) {
					t.Fatalf("output is not the input clipped: len %d cap %d", len(out), cap(out))
				}
				if !adaptertest.Identity(res.Kept, len(msgs)) || res.Trimmed {
					t.Fatalf("Result %+v changed something", res.Kept)
				}
			},
		},
		{name: "nil error: not an overflow", msgs: msgs, attempt: 1, want: history.ErrNotOverflow},
		{
			// target 0.9 × total/1.25 = 72% of the library's count: two
			// of six turns go.
			name: "sizes stated, attempt 1", msgs: msgs, err: sized, attempt: 1,
			kept: []int{0, -1, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			// target 0.75 × total/1.25 = 60%: three turns go.
			name: "sizes stated, attempt 2 goes further", msgs: msgs, err: sized, attempt: 2,
			kept: []int{0, -1, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			name: "real client error, no sizes (Responses wording)", msgs: msgs, attempt: 1,
			err:  clientError(t, `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`),
			kept: []int{0, -1, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			name: "real client error, wrapped, sizes stated", msgs: msgs, attempt: 1,
			err:  clientError(t, overflowBody(total, total*5/4)),
			kept: []int{0, -1, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			name: "elision before turns go", msgs: msgs, err: sized, attempt: 1,
			opts: []history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1})},
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if res.ElidedResults == 0 || res.DroppedTurns != 0 || len(out) != len(msgs) {
					t.Fatalf("elided %d, dropped %d turns: want elision only", res.ElidedResults, res.DroppedTurns)
				}
				got := adaptertest.JSON(t, out[3])
				if !strings.Contains(got, `"tool_call_id":"call_0"`) || !strings.Contains(got, "elided tool result: lookup") {
					t.Fatalf("elided result reads %s", got)
				}
			},
		},
		{
			name: "pinned message survives", msgs: msgs, err: sized, attempt: 2,
			opts: []history.Option{history.WithPin(4)},
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				// After the system prompt and the notice.
				if res.Kept[2] != 4 || adaptertest.JSON(t, out[2]) != adaptertest.JSON(t, msgs[4]) {
					t.Fatalf("pinned answer not kept after the notice: Kept %v", res.Kept)
				}
			},
		},
		{
			name: "nothing left to drop", msgs: agentTurns(1, 2000), err: sized, attempt: 1,
			want: history.ErrCannotRecover, kept: []int{0, 1, 2, 3, 4},
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				var re *history.RecoverError
				if !errors.As(err, &re) || re.Attempt != 1 || re.Used == 0 {
					t.Fatalf("%v: want a *history.RecoverError stating the sizes", err)
				}
			},
		},
		{
			name: "unconvertible message", msgs: []openai.ChatCompletionMessageParamUnion{{}}, err: sized, attempt: 1,
			want: history.ErrInvalidMessage,
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if out != nil {
					t.Fatal("output on a conversion error")
				}
			},
		},
		{
			name: "invalid option", msgs: msgs, err: sized, attempt: 1,
			opts: []history.Option{history.WithPin(3)}, // a tool result
			want: history.ErrInvalidOption,
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if out != nil {
					t.Fatal("output on an option error")
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tc.msgs)
			out, res, err := RecoverOverflow(tc.msgs, tc.err, tc.attempt, tc.opts...)
			if adaptertest.JSON(t, tc.msgs) != before {
				t.Fatal("RecoverOverflow modified its input")
			}
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if errors.Is(err, history.ErrCannotRecover) && tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatal("the *history.RecoverError does not wrap the provider's error")
			}
			if out != nil {
				if verr := Validate(out); verr != nil {
					t.Fatalf("output fails Validate: %v", verr)
				}
				assertRebuilt(t, out, res, tc.opts)
			}
			if tc.kept != nil {
				if !slices.Equal(res.Kept, tc.kept) {
					t.Fatalf("kept %v, want %v", res.Kept, tc.kept)
				}
				for j, k := range res.Kept {
					if k >= 0 && res.Modified == nil && adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, tc.msgs[k]) {
						t.Fatalf("kept message %d is not the caller's", k)
					}
				}
			}
			if tc.check != nil {
				tc.check(t, out, res, err)
			}
		})
	}
}

// assertRebuilt fails t unless out, converted back as Trim reads it with
// opts, is res.Messages: the same messages in the same order, differing
// at most in Kind where the core marked a notice or an elided result:
// the wire format has no kinds, and a notice is recognised on the next
// trim only where trims put it (a pinned message lifted before it hides
// it; see TestPinRepeatedTrim).
func assertRebuilt(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, opts []history.Option) {
	t.Helper()
	back, err := convert(out, opts)
	if err != nil {
		t.Fatalf("output does not convert: %v", err)
	}
	if len(back) != len(res.Messages) {
		t.Fatalf("output converts to %d messages, Result has %d", len(back), len(res.Messages))
	}
	for j := range back {
		g, w := back[j], res.Messages[j]
		if (w.Kind == history.KindElided || w.Kind == history.KindBreadcrumb) && g.Kind == "" {
			g.Kind = w.Kind
		}
		if adaptertest.JSON(t, g) != adaptertest.JSON(t, w) {
			t.Fatalf("output message %d converts to %s\nResult holds %s", j, adaptertest.JSON(t, g), adaptertest.JSON(t, w))
		}
	}
}
