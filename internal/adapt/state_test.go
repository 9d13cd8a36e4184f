package adapt

import (
	"context"
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
		case ctx = <-s.started:
		default:
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
