package history

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateOptions are the option sets the state tests run under: every rung,
// a summariser, a clock.
func stateOptions(clock func() time.Time) map[string][]Option {
	sum := SummarizerFunc(func(_ context.Context, dropped []Message, prev *Message) (Message, error) {
		n := len(dropped)
		if prev != nil {
			n += len(prev.Content)
		}
		return Message{Role: RoleUser, Content: "summary " + strings.Repeat("s", n%40)}, nil
	})
	return map[string][]Option{
		"low water":  {WithLowWater(0.7)},
		"trigger":    {WithTrigger(0.6), WithElision(ElideOptions{KeepRecent: 1, MinTokens: 20, ClearArguments: 16}), WithStepTrim()},
		"summaries":  {WithLowWater(0.6), WithSummarizer(sum, SummaryOptions{MaxTokens: 60})},
		"cold after": {WithLowWater(0.7), WithElision(ElideOptions{KeepRecent: 1}), WithColdAfter(time.Minute), WithClock(clock)},
	}
}

// TestTrimmerStateRoundTrip: a Trimmer restored from another's state, at
// any request of a session, sends exactly what the original sends from
// then on, and saves the same state.
func TestTrimmerStateRoundTrip(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	for name, opts := range stateOptions(clock) {
		t.Run(name, func(t *testing.T) {
			full := trSession(60, 17)
			for _, at := range []int{5, 30, 90, 150} {
				now = time.Unix(1_800_000_000, 0)
				orig := NewTrimmer(opts...)
				var restored *Trimmer
				for n := 2; n <= len(full); n++ {
					if full[n-1].Role != RoleAssistant {
						continue
					}
					now = now.Add(30 * time.Second)
					if n%37 == 0 {
						now = now.Add(time.Hour) // an idle gap: a cold resume
					}
					if n == at || (restored == nil && n > at) {
						data, err := orig.MarshalBinary()
						require.NoError(t, err)
						restored = NewTrimmer(opts...)
						require.NoError(t, restored.UnmarshalBinary(data))
						again, _ := restored.MarshalBinary()
						require.Equal(t, data, again, "the state comes back whole")
					}
					want, werr := orig.Trim(full[:n-1], 1500)
					if restored == nil {
						continue
					}
					got, gerr := restored.Trim(full[:n-1], 1500)
					require.Equal(t, werr == nil, gerr == nil, "request %d", n)
					require.True(t, reflect.DeepEqual(want.Messages, got.Messages), "request %d: the prompts differ", n)
					require.Equal(t, want.Kept, got.Kept, "request %d", n)
				}
			}
		})
	}
}

// TestTrimmerStateRefused: a state that is foreign (saved under other
// options) or not a state at all is refused with a typed error, and the
// Trimmer keeps what it had.
func TestTrimmerStateRefused(t *testing.T) {
	full := trSession(30, 3)
	src := NewTrimmer(WithLowWater(0.7))
	_, _ = src.Trim(full, 1000)
	data, err := src.MarshalBinary()
	require.NoError(t, err)

	dst := NewTrimmer(WithLowWater(0.5))
	before, _ := dst.MarshalBinary()
	err = dst.UnmarshalBinary(data)
	var se *StateError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Foreign)
	assert.ErrorIs(t, err, ErrForeignState)
	after, _ := dst.MarshalBinary()
	assert.Equal(t, before, after, "the Trimmer is unchanged")

	same := NewTrimmer(WithLowWater(0.7))
	for _, bad := range []struct {
		data   []byte
		reason string
	}{
		{nil, "empty"},
		{[]byte("{\"version\":1}"), "not a state"},
		{data[:len(data)/2], "truncated"},
		{append(append([]byte{}, data...), 0), "trailing bytes"},
		{append([]byte(stateMagic), 9), "an unknown version"},
	} {
		err := same.UnmarshalBinary(bad.data)
		assert.ErrorIs(t, err, ErrInvalidState, bad.reason)
		assert.False(t, errors.Is(err, ErrForeignState), bad.reason)
	}
}

// FuzzTrimmerState: any bytes given to UnmarshalBinary, as they are and
// sealed again with a valid checksum (so that the fuzzer reaches the
// fields behind it), are refused with a *StateError or make a state whose
// trims keep every invariant of stateInvariants (system prompt first, the
// pin and the latest request sent, order, no duplicates, pairing, budget,
// UTF-8, no text but the transcript's and the options' notices; a
// placeholder's own text aside, which a state carries), and that saves
// again to what restores it.
func FuzzTrimmerState(f *testing.F) {
	full := trSession(20, 8)
	opts := []Option{WithLowWater(0.6), WithPin(1), WithElision(ElideOptions{KeepRecent: 1, MinTokens: 10, ClearArguments: 4}), WithStepTrim()}
	tr := NewTrimmer(opts...)
	for n := 5; n < len(full); n += 7 {
		_, _ = tr.Trim(full[:n], 600)
		data, _ := tr.MarshalBinary()
		f.Add(data)
	}
	inv := invariantsFor(opts, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		inputs := [][]byte{data}
		if len(data) >= stateSumSize {
			inputs = append(inputs, sealState(slices.Clip(data[:len(data)-stateSumSize])))
		}
		for _, in := range inputs {
			tr := NewTrimmer(opts...)
			if err := tr.UnmarshalBinary(in); err != nil {
				var se *StateError
				if !errors.As(err, &se) {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			for _, n := range []int{len(full) / 2, len(full)} {
				res, err := tr.Trim(full[:n], 600)
				if verr := inv.check(full[:n], res, err, 600); verr != nil {
					t.Fatalf("n=%d: %v", n, verr)
				}
				checkResult(t, full[:n], res, true)
			}
			data2, _ := tr.MarshalBinary()
			if err := NewTrimmer(opts...).UnmarshalBinary(data2); err != nil {
				t.Fatalf("a saved state is refused: %v", err)
			}
		}
	})
}
