package adapt

import (
	"errors"
	"testing"

	"github.com/histrim/history"
)

func TestValidateOrder(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	row := func(at int, err error) Rule[int] {
		return Rule[int]{Check: func([]int) (int, error) { return at, err }}
	}
	for _, tc := range []struct {
		rules  []Rule[int]
		want   error
		reason string
	}{
		{nil, nil, "no rule, no violation"},
		{[]Rule[int]{row(-1, nil), row(-1, nil)}, nil, "every rule kept"},
		{[]Rule[int]{row(5, errA), row(2, errB)}, errB, "the violation first in message order wins"},
		{[]Rule[int]{row(3, errA), row(3, errB)}, errA, "on one message, the row above wins"},
		{[]Rule[int]{row(-1, nil), row(0, errB)}, errB, "a violation at index 0 is one"},
	} {
		if got := Validate(tc.rules, []int{1, 2, 3}); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.reason, got, tc.want)
		}
	}
}

func TestPairingRule(t *testing.T) {
	sentinel := errors.New("unpaired")
	msgs := []history.Message{
		{Role: history.RoleUser, Content: "go"},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "a"}, {ID: "b"}}},
		{Role: history.RoleTool, ToolCallID: "a"},
		{Role: history.RoleUser, Content: "next"},
	}
	read := func(msgs []history.Message, i int) (bool, []string, error) {
		results, ids := Calls(&msgs[i])
		return results, ids, nil
	}
	r := PairingRule("test", "message", sentinel, read)
	at, err := r.Check(msgs)
	var pe *PairingError
	if at != 1 || !errors.As(err, &pe) || pe.ID != "b" || !errors.Is(err, sentinel) {
		t.Errorf("an unanswered call: at %d, %v", at, err)
	}
	if at, err := r.Check(msgs[:1]); at != -1 || err != nil {
		t.Errorf("no call: at %d, %v", at, err)
	}
}

func TestWrapperSteps(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{0, 2}, {-1, 0}, {5, 5}} {
		if got := Retries(tc.n, 2); got != tc.want {
			t.Errorf("Retries(%d, 2) = %d, want %d", tc.n, got, tc.want)
		}
	}
	if got := CallOptions(nil, nil, nil, 0); len(got) != 0 {
		t.Errorf("nothing set adds %d options", len(got))
	}
	var cal history.Calibration
	if got := CallOptions(nil, history.Heuristic(), &cal, 10); len(got) != 3 {
		t.Errorf("counter, calibration and overhead add %d options", len(got))
	}
	calls := 0
	Observe(nil, 100, 120, func(int, int, history.Verdict) { calls++ })
	Observe(&cal, 100, 0, func(int, int, history.Verdict) { calls++ })
	if calls != 0 {
		t.Error("observed without a calibration or a count")
	}
	Observe(&cal, 100, 120, func(int, int, history.Verdict) { calls++ })
	if calls != 1 {
		t.Errorf("on called %d times", calls)
	}
}

func TestKeepCallsAndByRole(t *testing.T) {
	type call struct{ id, args string }
	in := []call{{"a", "{}"}, {"b", "{}"}}
	m := &history.Message{ToolCalls: []history.ToolCall{{ID: "b", Arguments: `{"x":1}`}}}
	got := KeepCalls(in, m, func(c *call) string { return c.id }, func(c *call, a string) { c.args = a })
	if len(got) != 1 || got[0] != (call{"b", `{"x":1}`}) || in[1].args != "{}" {
		t.Errorf("KeepCalls = %v (input %v)", got, in)
	}
	if KeepCalls(in, &history.Message{}, func(c *call) string { return c.id }, func(*call, string) {}) != nil {
		t.Error("no call kept is not nil")
	}
	if ByRole(history.RoleSystem, "s", "u", "a") != "s" || ByRole(history.RoleAssistant, "s", "u", "a") != "a" || ByRole(history.RoleTool, "s", "u", "a") != "u" {
		t.Error("ByRole")
	}
}
