package adaptertest

import "testing"

// Sent is what a wrapper model's event says of one request it sent.
type Sent struct {
	Messages, Tokens, Budget int
	Trimmed                  bool
}

// SameAsAlone checks that a stateful wrapper whose calls alternate the
// models names[0] and names[1] trims each model's calls as a wrapper
// serving that model alone does. run sends call i to the model pick(i)
// names, for the calls pick accepts, through a new stateful wrapper, and
// returns what it sent: run with every call alternating (call i to
// names[i%2]) and with each model's calls alone must send the same
// messages, tokens and budget, trimmed alike, and some request must be
// trimmed (else the models' windows are not put to the test).
func SameAsAlone(t *testing.T, names [2]string, run func(pick func(i int) (string, bool)) []Sent) {
	t.Helper()
	both := run(func(i int) (string, bool) { return names[i%2], true })
	trimmed := false
	for k, name := range names {
		alone := run(func(i int) (string, bool) { return name, i%2 == k })
		var mixed []Sent
		for i := k; i < len(both); i += 2 {
			mixed = append(mixed, both[i])
		}
		if len(alone) != len(mixed) {
			t.Fatalf("%s: %d requests alone, %d alternating", name, len(alone), len(mixed))
		}
		for j, a := range alone {
			trimmed = trimmed || a.Trimmed
			if b := mixed[j]; a != b {
				t.Errorf("%s, request %d: alternating sent %d messages, %d tokens, budget %d (trimmed %v); alone %d, %d, %d (%v)",
					name, j, b.Messages, b.Tokens, b.Budget, b.Trimmed, a.Messages, a.Tokens, a.Budget, a.Trimmed)
			}
		}
	}
	if !trimmed {
		t.Error("no request was trimmed: the windows are not put to the test")
	}
}
