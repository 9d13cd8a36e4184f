package adapt

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/histrim/history"
)

// blockingSummarizer blocks every call until its ctx ends, and says when
// a call started, with its ctx.
type blockingSummarizer struct {
	started chan context.Context
}

func (s *blockingSummarizer) Summarize(ctx context.Context, _ []history.Message, _ *history.Message) (history.Message, error) {
	s.started <- ctx
	<-ctx.Done()
	return history.Message{}, ctx.Err()
}

// TestTrimmerCloseWaitsForReplaced: a core Trimmer the adapter's Trimmer
// replaced (here by a restored state) has its background summary
// stopped, by the time Close returns at the latest.
func TestTrimmerCloseWaitsForReplaced(t *testing.T) {
	s := &blockingSummarizer{started: make(chan context.Context, 10)}
	tr := plain.NewTrimmer(struct{}{}, []history.Option{history.WithTrigger(0.6),
		history.WithSummarizer(s, history.SummaryOptions{MaxTokens: 40, Timeout: time.Hour, Background: true})})
	var ctx context.Context
	for n := 4; n < 40 && ctx == nil; n++ {
		if _, _, err := tr.Trim(turns(n), 400); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tr.SummaryDone(): // none in flight
		default:
			ctx = <-s.started // the call blocks until its ctx ends
		}
	}
	if ctx == nil {
		t.Fatal("setup: no background summary started")
	}
	data, err := tr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Err(); err != context.Canceled {
		t.Errorf("the replaced plan's summary: ctx %v when Close returned, want it cancelled", err)
	}
}

// FuzzTrimmerState: whatever bytes it is given, an adapter Trimmer's
// UnmarshalBinary returns (a *history.StateError or nil) without
// panicking, and a Trimmer that accepted them still sends a request.
func FuzzTrimmerState(f *testing.F) {
	msgs := turns(12)
	opts := []history.Option{history.WithLowWater(0.7), history.WithPin(3)}
	tr := plain.NewTrimmer(struct{}{}, opts)
	empty, _ := tr.MarshalBinary()
	f.Add(empty)
	for n := 6; n <= len(msgs); n += 3 {
		if _, _, err := tr.Trim(msgs[:n], 300); err != nil {
			f.Fatal(err)
		}
		data, _ := tr.MarshalBinary()
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := plain.NewTrimmer(struct{}{}, opts)
		if err := tr.UnmarshalBinary(data); err != nil {
			var se *history.StateError
			if !errors.As(err, &se) {
				t.Fatalf("%v: not a *history.StateError", err)
			}
			return
		}
		// A forged share of the budget the provider accepts can leave
		// room for the latest turn alone (the core's state checks decide
		// what a state may claim): still a request, with a *BudgetError.
		out, _, err := tr.Trim(msgs, 300)
		var be *history.BudgetError
		if (err != nil && !errors.As(err, &be)) || len(out) == 0 {
			t.Fatalf("a trim after an accepted state: %d messages, %v", len(out), err)
		}
	})
}
