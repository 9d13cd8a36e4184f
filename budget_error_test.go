package history

import (
	"errors"
	"strings"
	"testing"
)

// TestBudgetErrorRemedy: the latest-turn-too-large error names what the
// caller can do, and only what can help: the cut rung when the trim did
// not have it, fewer tools or a shorter system prompt when they alone are
// too large, and always sending the Result anyway or a larger window.
func TestBudgetErrorRemedy(t *testing.T) {
	tests := []struct {
		name    string
		e       BudgetError
		want    []string
		wantNot []string
	}{
		{"the latest turn's results, no cut rung", BudgetError{Need: 900, Budget: 500}, []string{"send it anyway", "WithTask", "larger window"}, nil},
		{"with the cut rung, WithTask cannot help", BudgetError{Need: 900, Budget: 500, cut: true}, []string{"send it anyway", "larger window"}, []string{"WithTask"}},
		{"the tools alone", BudgetError{Need: 900, Budget: 500, Overhead: 600}, []string{"fewer tools", "larger window"}, []string{"WithTask"}},
		{"the system prompt alone", BudgetError{Need: 900, Budget: 500, Pinned: 600}, []string{"shorten them", "larger window"}, []string{"WithTask"}},
		{"both together", BudgetError{Need: 900, Budget: 500, Pinned: 300, Overhead: 300}, []string{"shorten them", "fewer tools"}, []string{"WithTask"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.e.Error()
			if !strings.HasPrefix(msg, "history: latest turn does not fit the budget: need 900 tokens, budget 500") {
				t.Errorf("%q does not start with the sizes", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not say %q", msg, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(msg, w) {
					t.Errorf("%q says %q", msg, w)
				}
			}
		})
	}

	// A trim knows whether it had the cut rung.
	msgs := []Message{
		{Role: RoleSystem, Content: "You are a coding agent."},
		{Role: RoleUser, Content: "Run the tests."},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "t1", Name: "bash", Arguments: `{"command":"go test ./..."}`}}},
		{Role: RoleTool, ToolCallID: "t1", Content: strings.Repeat("ok   pkg/module\t0.01s\n", 300)},
	}
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"without the cut rung", nil, "WithTask"},
		{"with it, at a budget below the user's request", []Option{WithTask(1, ElideOptions{})}, "with the cut rung on"},
	} {
		budget := 300
		if tc.opts != nil {
			budget = 10
		}
		_, err := TrimToRecentTurns(msgs, budget, tc.opts...)
		var be *BudgetError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a BudgetError saying %q", tc.name, err, tc.want)
		}
	}
}
