package langchaingo

import (
	"errors"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
)

func TestRecoverOverflow(t *testing.T) {
	ten := chat(10)
	total := tokens(t, ten)
	// A tool message answering two calls, one response large: the
	// recovery must keep or drop the tool message whole, and elide
	// inside it under WithElision.
	split := append(chat(4), msg(llms.ChatMessageTypeHuman, txt("last task")),
		msg(llms.ChatMessageTypeAI, call("x1", "read", "{}"), call("x2", "grep", "{}")),
		msg(llms.ChatMessageTypeTool, resp("x1", "read", strings.Repeat("line of code\n", 200)), resp("x2", "grep", "2 hits")),
		msg(llms.ChatMessageTypeAI, txt("done")))
	rateLimit := errors.New("API returned unexpected status code: 429: Rate limit reached for requests")
	tests := []struct {
		name      string
		in        []llms.MessageContent
		err       error
		attempt   int
		opts      []history.Option
		wantErr   error // nil: recovered
		maxTokens int   // the recovered history counts at most this; 0: not checked
		reason    string
	}{
		{"sizes stated", ten, overflowErr(1000, 1250), 1, nil, nil, total * 1000 / 1250 * 90 / 100,
			"E × Limit/Used × 0.9"},
		{"no sizes, attempt 1", ten, errors.New("400: context_length_exceeded"), 1, nil, nil, total * 3 / 4,
			"E × 0.75 without sizes"},
		{"no sizes, attempt 2", ten, errors.New("400: context_length_exceeded"), 2, nil, nil, total / 2,
			"E × 0.5 on the second retry"},
		{"elision inside a split tool message", split, overflowErr(1000, 1100), 1,
			[]history.Option{history.WithElision(history.ElideOptions{KeepRecent: -1}), history.WithStepTrim()}, nil, 0,
			"the ladder works through the recovery"},
		{"not an overflow", ten, rateLimit, 1, nil, history.ErrNotOverflow, 0,
			"a rate limit is not the trim's to fix"},
		{"nil error", ten, nil, 1, nil, history.ErrNotOverflow, 0,
			"no error, nothing to recover from"},
		{"nothing to drop", chat(1), overflowErr(100, 400), 1, nil, history.ErrCannotRecover, 0,
			"only the system message and the latest turn are left"},
		{"invalid message", []llms.MessageContent{msg(llms.ChatMessageTypeFunction, txt("x"))}, overflowErr(1, 2), 1, nil, ErrInvalidMessage, 0,
			"conversion errors as Trim's"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tc.in)
			out, res, err := RecoverOverflow(tc.in, tc.err, tc.attempt, tc.opts...)
			if adaptertest.JSON(t, tc.in) != before {
				t.Fatal("RecoverOverflow modified its input")
			}
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("err = %v (%s)", err, tc.reason)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("err = %v, want %v (%s)", err, tc.wantErr, tc.reason)
			}
			switch {
			case errors.Is(tc.wantErr, history.ErrNotOverflow):
				if !adaptertest.SameArray(out, tc.in) || cap(out) != len(tc.in) {
					t.Errorf("not an overflow: the input must come back as it is, clipped")
				}
				return
			case errors.Is(tc.wantErr, history.ErrCannotRecover):
				var re *history.RecoverError
				if !errors.As(err, &re) || !errors.Is(err, tc.err) || re.Attempt != tc.attempt || re.Used != 400 || re.Limit != 100 {
					t.Errorf("err = %#v, want a *RecoverError wrapping the provider's error with its sizes", err)
				}
			case tc.wantErr != nil:
				if out != nil || res.Kept != nil {
					t.Errorf("a conversion error comes with no messages")
				}
				return
			default:
				if !res.Trimmed || res.TokensAfter >= tokens(t, tc.in) {
					t.Errorf("nothing dropped or elided: %d of %d messages, %d tokens", len(out), len(tc.in), res.TokensAfter)
				}
			}
			if err := Validate(out); err != nil {
				t.Errorf("output fails Validate: %v", err)
			}
			if got := tokens(t, out); got != res.TokensAfter {
				t.Errorf("output counts %d, Result says %d", got, res.TokensAfter)
			}
			if tc.maxTokens > 0 && res.TokensAfter > tc.maxTokens {
				t.Errorf("recovered to %d tokens, want at most %d (%s)", res.TokensAfter, tc.maxTokens, tc.reason)
			}
			last, in := out[len(out)-1], tc.in[len(tc.in)-1]
			if !adaptertest.SameArray(last.Parts, in.Parts) {
				t.Error("the latest message is not the caller's")
			}
			if tc.name == "elision inside a split tool message" {
				checkSplitElided(t, out, res)
			}
		})
	}
}

// checkSplitElided: the split tool message is one message again, its
// large response elided, its small one the caller's.
func checkSplitElided(t *testing.T, out []llms.MessageContent, res history.Result) {
	t.Helper()
	tool := out[len(out)-2]
	if tool.Role != llms.ChatMessageTypeTool || len(tool.Parts) != 2 || res.ElidedResults == 0 {
		t.Fatalf("tool message %s, %d elided", adaptertest.JSON(t, tool), res.ElidedResults)
	}
	r0, r1 := tool.Parts[0].(llms.ToolCallResponse), tool.Parts[1].(llms.ToolCallResponse)
	if r0.ToolCallID != "x1" || !strings.HasPrefix(r0.Content, "[elided tool result: read") || r1 != resp("x2", "grep", "2 hits") {
		t.Errorf("responses %+v, %+v; want x1 elided, x2 as it was", r0, r1)
	}
}

// TestRecoverOverflowRetries: each attempt on the previous output goes
// further, and the last ends in ErrCannotRecover, never in an empty or
// unpaired history.
func TestRecoverOverflowRetries(t *testing.T) {
	send := chat(6)
	err := errors.New("400: context_length_exceeded")
	prev := tokens(t, send)
	for attempt := 1; ; attempt++ {
		out, res, rerr := RecoverOverflow(send, err, attempt)
		if errors.Is(rerr, history.ErrCannotRecover) {
			if attempt < 2 || len(out) == 0 || Validate(out) != nil {
				t.Fatalf("attempt %d: ErrCannotRecover with %d messages", attempt, len(out))
			}
			return
		}
		if rerr != nil || res.TokensAfter >= prev || Validate(out) != nil {
			t.Fatalf("attempt %d: %v, %d tokens after %d", attempt, rerr, res.TokensAfter, prev)
		}
		if attempt > 10 {
			t.Fatal("no end to the recoveries")
		}
		send, prev = out, res.TokensAfter
	}
}
