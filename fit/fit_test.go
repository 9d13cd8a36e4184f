package fit_test

import (
	"context"
	"errors"
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
