package fit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	"github.com/histrim/history/models"
	"github.com/histrim/history/tiktoken"
)

func TestNew(t *testing.T) {
	if _, err := fit.New("gpt-4o-turbo-ultra"); !errors.Is(err, models.ErrUnknownModel) {
		t.Fatalf("an unknown name: %v, want ErrUnknownModel", err)
	}
	tr, err := fit.New("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []history.Message{{Role: history.RoleSystem, Content: "be brief"}, {Role: history.RoleUser, Content: "héllo, wörld: 漢字"}}
	res, err := tr.Fit(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := models.Lookup("gpt-4o")
	if want := m.Window - m.Output - int(float64(m.Window)*history.MarginShare); res.Budget != want {
		t.Errorf("budget %d, want the window less the output room and the margin, %d", res.Budget, want)
	}
	exact, _ := tiktoken.New("o200k_base")
	if want := history.Estimate(msgs, exact); res.TokensAfter != want {
		t.Errorf("counted %d, want the exact count %d (the model's tokenizer is public)", res.TokensAfter, want)
	}
	if v := tr.Observe(res.TokensAfter); v != history.VerdictUsed {
		t.Errorf("Observe = %v: the Trimmer owns a Calibration", v)
	}
	if res, _ := tr.Fit(context.Background(), msgs); res.Budget <= m.Window-m.Output-int(float64(m.Window)*history.MarginShare) {
		t.Errorf("warm, budget %d: the margin is gone (the provider counts as the library does)", res.Budget)
	}

	// The caller's options come after: a later WithModel sets the room the
	// request asks for.
	m.Output = 1000
	tr, _ = fit.New("gpt-4o", history.WithModel(m))
	if res, _ := tr.Fit(context.Background(), msgs); res.Budget != m.Window-1000-int(float64(m.Window)*history.MarginShare) {
		t.Errorf("budget %d with an output room of 1000", res.Budget)
	}
}

func TestCounter(t *testing.T) {
	msgs := []history.Message{{Role: history.RoleUser, Content: "a b c d e f g"}}
	for _, tc := range []struct {
		m      models.Model
		reason string
	}{
		{models.Model{Name: "x", Window: 1000}, "no tokenizer: the heuristic"},
		{models.Model{Name: "x", Window: 1000, Tokenizer: "no-such-encoding"}, "an unknown tokenizer: the heuristic"},
	} {
		if got, want := history.Estimate(msgs, fit.Counter(tc.m)), history.Estimate(msgs, history.Heuristic()); got != want {
			t.Errorf("%s: %d, want %d", tc.reason, got, want)
		}
	}
}

// TestPolicies checks the three policy points on one growing tool loop:
// where a maintenance point trims down to, and whether the trigger acts
// below the budget.
func TestPolicies(t *testing.T) {
	m := models.Model{Name: "test", Window: 20_000, Output: 4_000}
	loop := func(n int) []history.Message {
		msgs := []history.Message{{Role: history.RoleSystem, Content: "You are a coding agent."}, {Role: history.RoleUser, Content: "Fix the parser."}}
		for i := range n {
			id := fmt.Sprint("c", i)
			msgs = append(msgs,
				history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "read", Arguments: fmt.Sprintf(`{"path":"/repo/f%d.go"}`, i)}}},
				history.Message{Role: history.RoleTool, ToolCallID: id, Content: strings.Repeat(fmt.Sprintf("func f%d() { return }\n", i), 60)},
			)
		}
		return msgs
	}
	for _, tc := range []struct {
		name     string
		opts     []history.Option
		low, hi  float64 // the first trim's size, as shares of the budget: in (low, hi]
		trimFrom float64 // the share of the budget from which the first trim comes
		reason   string
	}{
		{"default", nil, 0.3, 0.5, 1, "trims past the budget, down to half of it"},
		{"Cheaper", []history.Option{fit.Cheaper()}, 0.2, 0.32, 0.65, "trims past 0.65 of the budget, down to 0.32"},
		{"KeepMore", []history.Option{fit.KeepMore()}, 0.5, 0.9, 1, "trims past the budget, down to 0.9 of it"},
	} {
		tr := fit.For(m, tc.opts...)
		for n := 1; ; n++ {
			msgs := loop(n)
			res, err := tr.Fit(context.Background(), msgs)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !res.Trimmed {
				if before := history.Estimate(msgs, fit.Counter(m)); before > res.Budget {
					t.Fatalf("%s: %d tokens over the budget %d sent whole", tc.name, before, res.Budget)
				}
				continue
			}
			before := float64(history.Estimate(msgs, fit.Counter(m)))
			b := float64(res.Budget)
			if got := float64(res.TokensAfter) / b; got <= tc.low || got > tc.hi || before/b <= tc.trimFrom || before/b > tc.trimFrom+0.1 {
				t.Errorf("%s (%s): the first trim went from %.2f to %.2f of the budget", tc.name, tc.reason, before/b, got)
			}
			break
		}
	}
}
