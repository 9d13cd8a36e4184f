package pairing

import "testing"

// step is one message of a test sequence: calls it makes, or the call it
// answers.
type step struct {
	calls  []string
	answer string
	result bool
}

func calls(ids ...string) step { return step{calls: ids} }
func answer(id string) step    { return step{answer: id, result: true} }

func TestChecker(t *testing.T) {
	tests := []struct {
		name   string
		steps  []step
		want   *Violation
		reason string
	}{
		{"empty", nil, nil, "nothing to pair"},
		{"plain", []step{calls(), calls()}, nil, "messages without calls"},
		{"any order", []step{calls(), calls("a", "b"), answer("b"), answer("a"), calls()}, nil, "results in any order"},
		{"reused id", []step{calls("a"), answer("a"), calls("a"), answer("a")}, nil, "ids are unique within an exchange only"},
		{"unanswered at end", []step{calls(), calls("a")}, &Violation{Unanswered, 1, "a"}, "the end closes the exchange"},
		{"unanswered before user", []step{calls("a", "b"), answer("a"), calls()}, &Violation{Unanswered, 0, "b"}, "the next message closes the exchange"},
		{"orphan", []step{calls(), answer("a")}, &Violation{Orphan, 1, "a"}, "no exchange is open"},
		{"orphan after close", []step{calls("a"), answer("a"), calls(), answer("a")}, &Violation{Orphan, 3, "a"}, "a message without calls closed it"},
		{"unknown", []step{calls("a"), answer("a"), answer("z")}, &Violation{Unknown, 2, "z"}, "not a call of the open exchange"},
		{"twice", []step{calls("a"), answer("a"), answer("a")}, &Violation{Twice, 2, "a"}, "one result per call"},
		{"empty id", []step{calls("")}, &Violation{BadID, 0, ""}, "ids are required"},
		{"duplicate id", []step{calls("a", "a")}, &Violation{BadID, 0, "a"}, "one id per call of a message"},
		{"shorter exchange", []step{calls("a", "b"), answer("a"), answer("b"), calls("c"), answer("c")}, nil, "state of a longer exchange does not leak"},
	}
	for _, tc := range tests {
		var c Checker
		var got *Violation
		for i, s := range tc.steps {
			if s.result {
				got = c.Answer(i, s.answer)
			} else {
				got = c.Open(i, s.calls)
			}
			if got != nil {
				break
			}
		}
		if got == nil {
			got = c.Close()
		}
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: got %+v, want %+v (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
}
