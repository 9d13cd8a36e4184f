package history

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithPin(t *testing.T) {
	long := "an answer long enough that dropping its turn saves more than the breadcrumb costs, by a good margin"
	tests := []struct {
		name string
		in   []string
		pins []int
		opts []Option
		want []string
	}{
		{
			name: "a pinned message of a dropped turn is lifted after the breadcrumb",
			in:   []string{"S:sys", "U:remember the code word", "A:" + long, "U:q2", "A:" + long, "U:q3", "A:a3"},
			pins: []int{1},
			want: []string{"S:sys", "B", "U:remember the code word", "U:q3", "A:a3"},
		},
		{
			name: "pins keep their order and a kept pin stays in place",
			in:   []string{"S:sys", "U:one", "A:memo one", "U:two", "A:memo two", "U:three", "A:a3", "U:four", "A:a4"},
			pins: []int{4, 2, 8},
			want: []string{"S:sys", "B", "A:memo one", "A:memo two", "U:four", "A:a4"},
		},
		{
			name: "a pinned summary is lifted once, and the newest other summary too",
			in:   []string{"S:sys", "M:old", "U:q1", "M:pinned", "A:a1", "M:newest", "U:q2", "A:a2", "U:q3", "A:a3"},
			pins: []int{3},
			want: []string{"S:sys", "M:old", "M:pinned", "M:newest", "B", "U:q3", "A:a3"},
		},
		{
			name: "a pinned system message is lifted before the breadcrumb, where a later trim reads it",
			in:   []string{"S:sys", "U:q1", "S:always answer in French", "A:" + long, "U:q2", "A:a2"},
			pins: []int{2},
			want: []string{"S:sys", "S:always answer in French", "B", "U:q2", "A:a2"},
		},
		{
			name: "a turn of pinned messages alone is kept, not dropped and lifted back",
			in:   []string{"S:sys", "U:memory", "U:q2", "A:" + long, "U:q3", "A:a3"},
			pins: []int{1},
			want: []string{"S:sys", "B", "U:memory", "U:q3", "A:a3"},
		},
		{
			name: "a pin inside a dropped step stays",
			in:   []string{"S:sys", "U:task", "A:plan", "A:s1>c1", "T:c1", "A:s2>c2", "T:c2", "A:s3>c3", "T:c3"},
			pins: []int{2},
			opts: []Option{WithStepTrim()},
			want: []string{"S:sys", "A:plan", "U:task", "B:" + StepBreadcrumbText, "A:s3>c3", "T:c3"},
		},
		{
			name: "pins in the prefix change nothing",
			in:   []string{"S:sys", "U:q1", "A:" + long, "U:q2", "A:a2"},
			pins: []int{0},
			want: []string{"S:sys", "B", "U:q2", "A:a2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := parse(t, tc.in...)
			opts := append([]Option{WithPin(tc.pins...)}, tc.opts...)
			budget := Estimate(parse(t, tc.want...), nil) // exactly what is wanted
			res, err := TrimToRecentTurns(in, budget, opts...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, render(res.Messages))
			checkResult(t, in, res, true)
			assert.Equal(t, Estimate(res.Messages, nil), res.TokensAfter)
			assert.LessOrEqual(t, res.TokensAfter, budget)
			for _, p := range tc.pins {
				assert.Contains(t, res.Kept, p, "pinned message %d", p)
			}
			// Trimming the output again, with the pins carried over,
			// returns it unchanged.
			again, err := TrimToRecentTurns(res.Messages, budget, append([]Option{WithPin(res.Positions(tc.pins...)...)}, tc.opts...)...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, render(again.Messages), "idempotent")
			// The Trimmer keeps them too, on the first call and when it
			// reuses its cut for the next one.
			tr := NewTrimmer(opts...)
			first, err := tr.Trim(in, budget)
			require.NoError(t, err)
			assert.Equal(t, res.Messages, first.Messages)
			grown := append(clone(in), parse(t, "U:next")...)
			next, err := tr.Trim(grown, budget+20)
			require.NoError(t, err)
			fresh, _ := TrimToRecentTurns(grown, budget+20, opts...)
			for _, p := range tc.pins {
				assert.Contains(t, next.Kept, p)
				assert.Contains(t, fresh.Kept, p)
			}
			checkResult(t, grown, next, true)
		})
	}
}

// TestPinnedTurnIsKept: a turn whose only messages are pinned is kept, not
// dropped and lifted straight back: no breadcrumb, no dropped turn, and a
// recovery that can drop nothing else says so.
func TestPinnedTurnIsKept(t *testing.T) {
	long := "an answer long enough that dropping its turn saves more than the breadcrumb costs, by a good margin"
	in := parse(t, "S:sys", "U:memory", "U:q2", "A:"+long)
	budget := Estimate(in, nil) - 5
	res, err := TrimToRecentTurns(in, budget, WithPin(1))
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, render(in), render(res.Messages), "nothing dropped, no breadcrumb added")
	assert.False(t, res.Trimmed)
	assert.Zero(t, res.DroppedTurns)
	assert.Equal(t, 2, res.KeptTurns)

	_, err = RecoverOverflow(in, errors.New("context_length_exceeded"), 1, WithPin(1))
	assert.ErrorIs(t, err, ErrCannotRecover, "a recovery that drops nothing")

	// With a droppable turn between, one turn is dropped, and reported.
	in = parse(t, "S:sys", "U:memory", "U:q2", "A:"+long, "U:q3", "A:a3")
	res, err = TrimToRecentTurns(in, Estimate(parse(t, "S:sys", "B", "U:memory", "U:q3", "A:a3"), nil), WithPin(1))
	require.NoError(t, err)
	assert.Equal(t, 1, res.DroppedTurns)
	assert.Equal(t, 2, res.KeptTurns)
}

// TestRecoverOverflowWithPinsEnds: RecoverOverflow called on its own output
// ends in ErrCannotRecover after at most one call more than there are
// turns, and never grows the history, whatever is pinned.
func TestRecoverOverflowWithPinsEnds(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	providerErr := errors.New("context_length_exceeded")
	for h := range 2_000 {
		data := make([]byte, 10+r.IntN(60))
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		msgs := genHistory(data)
		var pins []int
		for i, m := range msgs {
			if r.IntN(4) == 0 && m.Role != RoleTool && len(m.ToolCalls) == 0 && m.Kind != KindBreadcrumb {
				pins = append(pins, i)
			}
		}
		turns := len(Turns(msgs))
		cur, prev := msgs, Estimate(msgs, nil)
		calls := 0
		for ; ; calls++ {
			require.LessOrEqual(t, calls, turns+1, "history %d: still recovering after %d calls", h, calls)
			res, err := RecoverOverflow(cur, providerErr, 1, WithPin(pins...))
			if err != nil {
				require.ErrorIs(t, err, ErrCannotRecover, "history %d", h)
				break
			}
			require.Less(t, res.TokensAfter, prev, "history %d, call %d: a recovery shrinks the history", h, calls)
			prev = res.TokensAfter
			pins = slices.DeleteFunc(res.Positions(pins...), func(i int) bool { return i < 0 })
			cur = res.Messages
		}
	}
}

func TestWithPinErrors(t *testing.T) {
	in := parse(t, "S:sys", "U:q1", "A:call>c1", "T:c1", "U:q2", "B")
	tests := []struct {
		name string
		opt  Option
	}{
		{"negative", WithPin(-1)},
		{"outside", WithPin(6)},
		{"tool result", WithPin(3)},
		{"tool calls", WithPin(2)},
		{"breadcrumb", WithPin(5)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, call := range []func() (Result, error){
				func() (Result, error) { return TrimToRecentTurns(in, 10, tc.opt) },
				func() (Result, error) { return NewTrimmer(tc.opt).Trim(in, 10) },
				func() (Result, error) {
					return RecoverOverflow(in, errors.New("context_length_exceeded"), 1, tc.opt)
				},
			} {
				res, err := call()
				var oe *OptionError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, "WithPin", oe.Option)
				assert.ErrorIs(t, err, ErrInvalidOption)
				assert.Nil(t, res.Messages)
			}
		})
	}
}

func TestWithPinTooLarge(t *testing.T) {
	in := parse(t, "S:sys", "U:a very long memory that does not fit at all", "A:a1", "U:q2", "A:a2")
	res, err := TrimToRecentTurns(in, Estimate(in[3:], nil)+Estimate(in[:1], nil)+3, WithPin(1))
	var be *BudgetError
	require.ErrorAs(t, err, &be)
	assert.Contains(t, res.Kept, 1)
	assert.Equal(t, res.TokensAfter, be.Need)
	pinned := Estimate(in[:1], nil) + Estimate(in[1:2], nil) + Estimate([]Message{Breadcrumb()}, nil)
	assert.Equal(t, pinned, be.Pinned)
}

func TestWithOverhead(t *testing.T) {
	in := parse(t, "S:sys", "U:q1", "A:a1", "U:q2", "A:a2", "U:q3", "A:a3")
	all := Estimate(in, nil)
	t.Run("fits", func(t *testing.T) {
		res, err := TrimToRecentTurns(in, all+7, WithOverhead(7))
		require.NoError(t, err)
		assert.False(t, res.Trimmed)
		assert.Equal(t, all+7, res.TokensAfter)
		assert.Equal(t, all+7, res.TokensBefore)
	})
	t.Run("one token more trims", func(t *testing.T) {
		var ev Event
		res, err := TrimToRecentTurns(in, all+7, WithOverhead(8), WithOnTrim(func(e Event) { ev = e }))
		require.NoError(t, err)
		assert.True(t, res.Trimmed)
		assert.Equal(t, Estimate(res.Messages, nil)+8, res.TokensAfter)
		assert.LessOrEqual(t, res.TokensAfter, all+7)
		assert.Equal(t, res.TokensAfter, ev.TokensAfter)
	})
	t.Run("the overhead alone is too large", func(t *testing.T) {
		res, err := TrimToRecentTurns(in, 100, WithOverhead(1000))
		var be *BudgetError
		require.ErrorAs(t, err, &be)
		assert.Equal(t, 1, res.KeptTurns)
		assert.Equal(t, 1000, be.Overhead)
		assert.Less(t, be.Pinned, 100, "the overhead is not blamed on the pinned messages")
		assert.Contains(t, err.Error(), "the request's overhead alone needs 1000")
		assert.NotContains(t, err.Error(), "pinned")
	})
	t.Run("an overhead larger than a huge budget is never reported to fit", func(t *testing.T) {
		// Counts are capped at MaxInt/(n+5) so that no sum wraps; an
		// overhead past that cap stands for more than any budget.
		budget := math.MaxInt / 7
		res, err := TrimToRecentTurns(in, budget, WithOverhead(budget+1))
		var be *BudgetError
		require.ErrorAs(t, err, &be, "TokensAfter %d", res.TokensAfter)
		assert.NotEmpty(t, res.Messages)
		_, err = NewTrimmer(WithOverhead(budget+1)).Trim(in, budget)
		require.ErrorAs(t, err, &be)
	})
	t.Run("MaxInt does not wrap", func(t *testing.T) {
		res, err := TrimToRecentTurns(in, 1<<40, WithOverhead(int(^uint(0)>>1)))
		require.ErrorIs(t, err, ErrLatestTurnTooLarge)
		assert.Positive(t, res.TokensAfter)
	})
	t.Run("negative", func(t *testing.T) {
		_, err := TrimToRecentTurns(in, 100, WithOverhead(-1))
		var oe *OptionError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "WithOverhead", oe.Option)
	})
	t.Run("recover derives its target from the whole request", func(t *testing.T) {
		// The provider counted what we counted, overhead included.
		long := parse(t, "S:sys")
		for range 8 {
			long = append(long, parse(t, "U:a question of some length here", "A:an answer of about the same length")...)
		}
		est := Estimate(long, nil) + 10
		ov := errors.New("This model's maximum context length is " + itoa(est*3/4) + " tokens. However, your messages resulted in " + itoa(est) + " tokens.")
		res, err := RecoverOverflow(long, ov, 1, WithOverhead(10))
		require.NoError(t, err)
		assert.Equal(t, est, res.TokensBefore)
		assert.Equal(t, Estimate(res.Messages, nil)+10, res.TokensAfter)
		assert.LessOrEqual(t, res.TokensAfter, res.Budget)
		assert.Less(t, res.Budget, est*3/4)
	})
}

func TestApplyFunc(t *testing.T) {
	in := parse(t, "S:sys", "U:q1", "A:a1>c1,c2", "T:c1", "U:q2", "A:call>c3", "T:c3", "A:a2>c4", "T:c4", "A:done")
	type native struct {
		text  string
		built bool
	}
	nat := make([]native, len(in))
	for i, m := range in {
		nat[i] = native{text: m.Content}
	}
	sawModified := false
	for budget := Estimate(in, nil); budget > 0; budget-- {
		res, err := TrimToRecentTurns(in, budget, WithStepTrim(), WithElision(ElideOptions{KeepRecent: 0, MinTokens: -1}))
		if err != nil && !isTooLarge(err) {
			t.Fatal(err)
		}
		out := ApplyFunc(nat, res, func(m Message) native { return native{text: m.Content, built: true} })
		require.Len(t, out, len(res.Messages))
		mod := map[int]bool{}
		for _, j := range res.Modified {
			mod[j] = true
			sawModified = true
		}
		for j, k := range res.Kept {
			if k < 0 || mod[j] {
				assert.Equal(t, native{text: res.Messages[j].Content, built: true}, out[j], "budget %d position %d", budget, j)
			} else {
				assert.Equal(t, nat[k], out[j], "budget %d position %d", budget, j)
			}
		}
	}
	assert.True(t, sawModified, "no budget elided or stripped anything")
	assert.Equal(t, Apply(nat, Result{}, nil), ApplyFunc(nat, Result{}, nil))
}

// FuzzPinsAndOverhead: with random pins and overhead, pinned messages are
// always sent, the overhead is always counted, the Trimmer agrees with a
// fresh trim on what it keeps, and every structural invariant holds.
func FuzzPinsAndOverhead(f *testing.F) {
	f.Add([]byte{0, 9, 1, 3, 4, 2, 11, 0, 3, 5, 1, 7, 3, 1, 1, 2, 3, 4}, uint16(60), uint8(5), uint64(0b1010))
	f.Add([]byte{9, 1, 1, 1, 5, 0, 7, 0, 4, 1, 1, 2, 6, 5, 11, 1, 3, 9, 1, 1}, uint16(30), uint8(0), uint64(0xff))
	f.Fuzz(func(t *testing.T, data []byte, budget16 uint16, overhead uint8, pinBits uint64) {
		msgs := genHistory(data)
		if len(msgs) > 50 {
			msgs = msgs[:50]
		}
		budget := int(budget16%500) + 1
		var pins []int
		for i, m := range msgs {
			if i < 64 && pinBits&(1<<i) != 0 && m.Role != RoleTool && len(m.ToolCalls) == 0 && m.Kind != KindBreadcrumb {
				pins = append(pins, i)
			}
		}
		opts := []Option{WithPin(pins...), WithOverhead(int(overhead)), WithStepTrim(),
			WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1})}
		res, err := TrimToRecentTurns(msgs, budget, opts...)
		if err != nil && !isTooLarge(err) {
			t.Fatalf("unexpected error %v", err)
		}
		checkResult(t, msgs, res, true)
		for _, p := range pins {
			if !slicesContainsInt(res.Kept, p) {
				t.Fatalf("pinned message %d was not sent: kept %v", p, res.Kept)
			}
		}
		if got := Estimate(res.Messages, nil) + int(overhead); got != res.TokensAfter {
			t.Fatalf("TokensAfter %d, messages and overhead count %d", res.TokensAfter, got)
		}
		if err == nil && res.TokensAfter > budget {
			t.Fatalf("over budget without an error: %d > %d", res.TokensAfter, budget)
		}
		tr := NewTrimmer(opts...)
		for n := 1; n <= len(msgs); n++ {
			in := msgs[:n]
			var inPins []int
			for _, p := range pins {
				if p < n {
					inPins = append(inPins, p)
				}
			}
			if len(inPins) != len(pins) {
				continue // the Trimmer's pins name messages not yet there
			}
			r, err := tr.Trim(in, budget)
			if err != nil && !isTooLarge(err) {
				t.Fatalf("n=%d: Trimmer: %v", n, err)
			}
			checkResult(t, in, r, true)
			for _, p := range pins {
				if !slicesContainsInt(r.Kept, p) {
					t.Fatalf("n=%d: the Trimmer did not send pinned message %d", n, p)
				}
			}
			if err == nil && r.TokensAfter > budget {
				t.Fatalf("n=%d: Trimmer over budget without an error", n)
			}
		}
		again, _ := TrimToRecentTurns(msgs, budget, opts...)
		if !reflect.DeepEqual(again, res) {
			t.Fatal("not deterministic")
		}
	})
}

func slicesContainsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestResultPositions(t *testing.T) {
	long := "an answer long enough that dropping its turn saves more than the breadcrumb costs, by a good margin"
	in := parse(t, "S:sys", "U:memory", "A:"+long, "U:q2", "A:"+long, "U:q3", "A:a3")
	res, err := TrimToRecentTurns(in, Estimate(parse(t, "S:sys", "B", "U:memory", "U:q3", "A:a3"), nil), WithPin(1))
	require.NoError(t, err)
	require.Equal(t, []string{"S:sys", "B", "U:memory", "U:q3", "A:a3"}, render(res.Messages))
	assert.Equal(t, []int{2, 0, -1, 3, -1, -1}, res.Positions(1, 0, 2, 5, -1, 99))
	assert.Empty(t, res.Positions())
	// Carrying the pin over: trimming the output again keeps the memory.
	again, err := TrimToRecentTurns(append(res.Messages, parse(t, "U:q4", "A:"+long)...), 60, WithPin(res.Positions(1)...))
	if err != nil {
		require.ErrorIs(t, err, ErrLatestTurnTooLarge)
	}
	assert.Contains(t, render(again.Messages), "U:memory")
}

// TestDroppedInstructions: a system message given mid-conversation goes
// with its turn; the Result and the Event say so, and a pin keeps it.
func TestDroppedInstructions(t *testing.T) {
	long := "an answer long enough that dropping its turn saves more than the breadcrumb costs, by a good margin"
	in := parse(t, "S:sys", "U:q1", "S:always answer in French", "A:"+long, "U:q2", "A:a2")
	budget := Estimate(parse(t, "S:sys", "B", "U:q2", "A:a2"), nil)
	var ev Event
	res, err := TrimToRecentTurns(in, budget, WithOnTrim(func(e Event) { ev = e }))
	require.NoError(t, err)
	assert.Equal(t, 1, res.DroppedInstructions, "the instruction went with its turn")
	assert.Equal(t, 1, ev.DroppedInstructions)

	res, err = TrimToRecentTurns(in, budget+Estimate(in[2:3], nil), WithPin(2))
	require.NoError(t, err)
	assert.Zero(t, res.DroppedInstructions)
	assert.Equal(t, []string{"S:sys", "S:always answer in French", "B", "U:q2", "A:a2"}, render(res.Messages), "pinned, it stays in the prefix")
}
