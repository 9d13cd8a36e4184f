package history

import (
	"math"
	"testing"
)

// TestCountersSaturate checks that no sum of token counts wraps around: a
// history whose count overflows costs math.MaxInt and never fits a budget.
func TestCountersSaturate(t *testing.T) {
	huge := CounterFunc(func(Message) int { return math.MaxInt })
	negative := CounterFunc(func(Message) int { return -1000 })
	minInt := CounterFunc(func(Message) int { return math.MinInt })
	user := Message{Role: RoleUser, Content: "hi"}
	bigFile := Message{Role: RoleUser, Parts: []Part{{Type: PartFile, Size: math.MaxInt64}}}
	tests := []struct {
		name   string
		got    int
		want   int
		reason string
	}{
		{"huge counter", Estimate([]Message{user, user}, huge), math.MaxInt, "two MaxInt counts saturate"},
		{"negative counter", Estimate([]Message{user, user}, negative), 0, "a negative count is treated as zero"},
		{"MinInt counter", Estimate([]Message{user}, minInt), 0, "even the most negative count"},
		{"mixed", Estimate([]Message{user, user}, CounterFunc(func(m Message) int {
			if m.Content == "" {
				return -5
			}
			return 7
		})), 14, "negatives never cancel positives"},
		{"huge file part", Estimate([]Message{bigFile}, nil) - 4, int(min(math.MaxInt64/32+1, math.MaxInt-4)), "a MaxInt64-byte file is positive, not wrapped"},
		{"huge files", Estimate([]Message{bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile, bigFile}, nil), math.MaxInt, "33 files of 2^58 tokens saturate the sum"},
		{"huge tokens parts", Heuristic().CountMessage(Message{Role: RoleUser, Parts: []Part{{Type: PartText, Tokens: math.MaxInt}, {Type: PartText, Tokens: math.MaxInt}}}), math.MaxInt, "Part.Tokens sums saturate"},
		{"huge tokens then framing", Heuristic().CountMessage(Message{Role: RoleUser, Name: "n", Parts: []Part{{Type: PartText, Tokens: math.MaxInt}}}), math.MaxInt, "framing added to a saturated count stays saturated"},
		{"empty history", Estimate(nil, huge), 0, "no messages cost nothing"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, tc.got, tc.want, tc.reason)
		}
	}
	res, err := TrimToRecentTurns([]Message{bigFile}, 100)
	if err == nil && res.TokensAfter <= 100 {
		t.Errorf("a MaxInt64-byte file fits a budget of 100: %d tokens", res.TokensAfter)
	}
}
