package eino

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// The helper is what a ReAct agent's MessageModifier and MessageRewriter
// take.
var _ react.MessageModifier = MessageModifier(100, nil)

type ctxKey struct{}

func TestMessageModifier(t *testing.T) {
	conv := agentTurns(6, 300)
	size := tokens(t, conv)
	huge := agentTurns(1, 4000)
	invalid := []*schema.Message{schema.UserMessage("a"), {Role: "robot"}}
	tests := []struct {
		name   string
		in     []*schema.Message
		budget int
		opts   []history.Option
		// same: the input itself comes back; smaller: fewer messages.
		same, smaller bool
		want          error // errors.Is of the error reported
	}{
		{name: "fits", in: conv, budget: size, same: true},
		{name: "trimmed", in: conv, budget: size / 2, smaller: true},
		{name: "latest turn too large", in: huge, budget: 100, same: true, want: history.ErrLatestTurnTooLarge},
		{name: "latest turn too large, earlier turns dropped", in: append(conv[:len(conv):len(conv)], huge[1:]...), budget: 100,
			smaller: true, want: history.ErrLatestTurnTooLarge},
		{name: "invalid message", in: invalid, budget: size, same: true, want: ErrInvalidMessage},
		{name: "invalid budget", in: conv, budget: 0, same: true, want: history.ErrInvalidBudget},
		{name: "invalid option", in: conv, budget: size, opts: []history.Option{history.WithPin(2)}, same: true, want: history.ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []error
			ctx := context.WithValue(context.Background(), ctxKey{}, tt.name)
			mod := MessageModifier(tt.budget, func(c context.Context, err error) {
				if c.Value(ctxKey{}) != tt.name {
					t.Error("onError did not receive the call's context")
				}
				got = append(got, err)
			}, tt.opts...)
			before := adaptertest.JSON(t, tt.in)
			out := mod(ctx, tt.in)
			if adaptertest.JSON(t, tt.in) != before {
				t.Fatal("the input was modified")
			}
			if tt.want == nil && len(got) > 0 || tt.want != nil && (len(got) != 1 || !errors.Is(got[0], tt.want)) {
				t.Fatalf("reported %v, want %v", got, tt.want)
			}
			if same := len(out) == len(tt.in) && &out[0] == &tt.in[0]; same != tt.same {
				t.Errorf("returned the input itself: %v, want %v", same, tt.same)
			}
			if tt.smaller && len(out) >= len(tt.in) {
				t.Errorf("%d messages of %d", len(out), len(tt.in))
			}
			if !errors.Is(tt.want, ErrInvalidMessage) {
				if err := Validate(out); err != nil {
					t.Error(err)
				}
			}
			if out[len(out)-1] != tt.in[len(tt.in)-1] {
				t.Error("the latest message is not the caller's")
			}
			// Without onError: the same messages, nothing reported.
			again := MessageModifier(tt.budget, nil, tt.opts...)(ctx, tt.in)
			if adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
				t.Error("without onError the output differs")
			}
		})
	}
}

// TestMessageModifierStepTrim: under history.WithStepTrim a latest turn
// too long for the budget is cut to its task and newest steps, and the
// output is returned although the error is reported.
func TestMessageModifierStepTrim(t *testing.T) {
	in := []*schema.Message{schema.SystemMessage("sys"), schema.UserMessage("task")}
	for i := range 10 {
		id := "c" + string(rune('0'+i))
		in = append(in, schema.AssistantMessage("", []schema.ToolCall{call(id, "run", "{}")}),
			schema.ToolMessage(strings.Repeat("output line\n", 100), id))
	}
	var reported error
	out := MessageModifier(600, func(_ context.Context, err error) { reported = err }, history.WithStepTrim())(context.Background(), in)
	if reported != nil || len(out) >= len(in) || out[1] != in[1] || out[len(out)-1] != in[len(in)-1] {
		t.Errorf("reported %v; %d of %d messages", reported, len(out), len(in))
	}
	if got := tokens(t, out); got > 600 {
		t.Errorf("%d tokens over 600", got)
	}
}
