package quality

import (
	"testing"

	history "github.com/histrim/history"
)

// TestLose: where lose files a reference the trimmed request did not keep,
// one case per place: its result went with a dropped step of the latest
// turn, with an older turn, or was sent with the token hidden; a request
// over the budget loses all; a reference kept is no loss. Mentioned counts
// the dropped ones whose token a later message repeats.
func TestLose(t *testing.T) {
	hist := []history.Message{
		{Role: history.RoleSystem, Content: "sys"},
		{Role: history.RoleUser, Content: "first"},
		call("a", "read", `{}`), result("a", "parse_config_v2 here"), // 2, 3: older turn
		{Role: history.RoleUser, Content: "second"},
		call("b", "read", `{}`), result("b", "load_defaults_x here"), // 5, 6: latest turn
		{Role: history.RoleAssistant, Content: "I will call load_defaults_x"},
		call("c", "read", `{}`), result("c", "kept_token_y there"), // 8, 9
	}
	refs := []Ref{{T: 10, R: 3, Tokens: []string{"parse_config_v2"}}, {T: 10, R: 6, Tokens: []string{"load_defaults_x"}}, {T: 10, R: 9, Tokens: []string{"kept_token_y"}}}
	hidden := result("c", "[elided tool result: read]")
	cases := []struct {
		name string
		res  history.Result
		over bool
		want Losses
	}{
		{"everything sent", history.Result{Messages: hist, Kept: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, false, Losses{}},
		{"the older turn dropped", history.Result{Messages: append([]history.Message{hist[0]}, hist[4:]...), Kept: []int{0, 4, 5, 6, 7, 8, 9}}, false, Losses{Turn: 1}},
		{"a step of the latest turn dropped, its token mentioned later", history.Result{Messages: []history.Message{hist[0], hist[4], hist[7], hist[8], hist[9]}, Kept: []int{0, 4, 7, 8, 9}}, false, Losses{Turn: 1, Step: 1, Mentioned: 1}},
		{"the newest result elided, its token hidden", history.Result{Messages: []history.Message{hist[0], hist[1], hist[2], hist[3], hist[4], hist[5], hist[6], hist[7], hist[8], hidden}, Kept: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, false, Losses{Hidden: 1}},
		{"over the budget", history.Result{Messages: hist, Kept: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, true, Losses{Over: 3}},
	}
	for _, tc := range cases {
		if got := lose(hist, &tc.res, refs, tc.over, nil); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
