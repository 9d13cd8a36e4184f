package history

import (
	"errors"
	"strings"
	"testing"
)

// nilDeref is an error whose Error dereferences its receiver.
type nilDeref struct{ msg *string }

func (e *nilDeref) Error() string { return *e.msg }

// TestRecoverErrorReadsNoPanickingError: a RecoverError around a provider
// error whose Error panics (a typed nil, alone or joined to an overflow)
// still reads, without that error's message, and still wraps it.
func TestRecoverErrorReadsNoPanickingError(t *testing.T) {
	var typedNil *nilDeref
	for _, perr := range []error{typedNil, errors.Join(typedNil, errors.New("prompt is too long: 300 tokens > 200 maximum"))} {
		err := &RecoverError{Tokens: 5, Budget: 4, Attempt: 1, Err: perr}
		var msg string
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Error panics: %v", r)
				}
			}()
			msg = err.Error()
		}()
		if !strings.HasPrefix(msg, "history: cannot recover") || !errors.Is(err, ErrCannotRecover) {
			t.Errorf("%q", msg)
		}
	}
}
