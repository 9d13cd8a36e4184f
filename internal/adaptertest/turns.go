package adaptertest

import (
	"context"
	"testing"
)

// Runtime is an agent runtime's side of a loop over one SDK: the
// transcript it keeps (whole: the runtime never trims it) and the SDK
// call that sends it. RunTurns drives it.
type Runtime interface {
	// User appends a user message of text task.
	User(task string)
	// Step sends the transcript, appends the reply, and returns the ids
	// of the calls the reply made (none: the turn is over) and the prompt
	// tokens its usage reports.
	Step(ctx context.Context) (calls []string, prompt int, err error)
	// Result appends text as the result of call id.
	Result(id, text string)
}

// MaxSteps is how many requests RunTurns lets one user turn take: a
// turn of the loops' scripts takes 1 to 6 tool steps and a final
// answer, 7 requests; one more fails the test as a turn that does not end.
const MaxSteps = 8

// RunTurns runs l.Turns user turns through rt. Turn n (from 1) opens with
// the user message task(n), told to l (Turn); then rt steps until a reply
// makes no call: each reply is recorded with l.Accepted(true, prompt), each
// call answered with Result(id, output(id)); an error ends the turn,
// recorded with l.Error. A turn that takes more than MaxSteps requests
// fails the test.
func RunTurns(t testing.TB, l *Loop, rt Runtime, task func(turn int) string, output func(id string) string) {
	t.Helper()
	ctx := context.Background()
	for turn := 1; turn <= l.Turns; turn++ {
		text := task(turn)
		l.Turn(turn, text)
		rt.User(text)
		for step := 0; ; step++ {
			if step >= MaxSteps {
				t.Fatalf("turn %d does not end", turn)
			}
			calls, prompt, err := rt.Step(ctx)
			if err != nil {
				l.Error(err)
				break
			}
			l.Accepted(true, prompt)
			if len(calls) == 0 {
				break
			}
			for _, id := range calls {
				rt.Result(id, output(id))
			}
		}
	}
}
