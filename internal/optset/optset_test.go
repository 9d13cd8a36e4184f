package optset_test

import (
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/optset"
)

// TestResolve: the resolved option gives the trim what the options give it,
// an invalid option's error included.
func TestResolve(t *testing.T) {
	counting := history.CounterFunc(func(m history.Message) int { return 10 })
	opts := []history.Option{history.WithCounter(counting), history.WithLowWater(0.5), history.WithStepTrim()}
	one, ok := optset.Resolve(opts).(history.Option)
	if !ok {
		t.Fatal("Resolve does not return a history.Option")
	}
	msgs := []history.Message{{Role: history.RoleUser, Content: "a"}, {Role: history.RoleAssistant, Content: "b"},
		{Role: history.RoleUser, Content: "c"}, {Role: history.RoleAssistant, Content: "d"}}
	want, _ := history.TrimToRecentTurns(msgs, 30, opts...)
	got, _ := history.TrimToRecentTurns(msgs, 30, one)
	if want.TokensAfter != got.TokensAfter || len(want.Messages) != len(got.Messages) {
		t.Errorf("resolved: %d tokens, %d messages; options: %d, %d", got.TokensAfter, len(got.Messages), want.TokensAfter, len(want.Messages))
	}
	bad, _ := optset.Resolve([]history.Option{history.WithLowWater(2)}).(history.Option)
	if _, err := history.TrimToRecentTurns(msgs, 30, bad); err == nil {
		t.Error("the invalid option's error is lost")
	}
}
