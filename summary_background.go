// This file owns background summaries (SummaryOptions.Background): a
// Trimmer starts writing the summary when the prompt crosses the trigger,
// keeps sending the history meanwhile, and swaps the summary in for
// exactly the turns it was given once it is ready, so that no request ever
// waits for a Summarizer.

package history

import (
	"context"
	"sync"
)

// bgJob is a summary being written in the background: it covers the
// transcript's dropped messages up to upTo, folding in prev, the summary
// the prompt held when it started. done is closed when next and status
// are set.
type bgJob struct {
	done   chan struct{}
	prev   summaryState
	upTo   int
	next   summaryState
	status string
}

// background is a Trimmer's background summarising: the job in flight
// (or done and not yet taken), the context that Close cancels, and the
// goroutines to wait for.
type background struct {
	job    *bgJob
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
	closed bool
}

// Close stops the background summary the Trimmer is writing, if any
// ([SummaryOptions.Background]): its context is cancelled, and Close
// waits for the Summarizer's call to return (a Summarizer that ignores its
// context is left to return on its own, past its Timeout; Close does not
// wait for it). The Trimmer still trims after Close, but starts no
// background summary. Close returns nil; it is safe to call more than
// once, and concurrently with Trim.
func (t *Trimmer) Close() error {
	t.mu.Lock()
	t.bg.closed = true
	stop := t.bg.stop
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
	t.bg.wg.Wait()
	return nil
}

// SummaryDone returns a channel that is closed when the background summary
// the Trimmer is writing ([SummaryOptions.Background]) has finished:
// written (the next [Trimmer.Trim] swaps it in), failed, timed out or
// stopped by [Trimmer.Close]. When none is being written, or the last one
// has finished, the channel is already closed. A summary starts within a
// Trim call, so the channel read after Trim returns tells whether that
// call (or an earlier one) left one in flight: a runtime can wait for it
// before it persists the Trimmer's summary, and a simulation can tell
// deterministically when the next Trim will find it ready.
func (t *Trimmer) SummaryDone() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bg.job == nil {
		return closedDone
	}
	return t.bg.job.done
}

// closedDone is the channel SummaryDone returns when no summary is in
// flight: closed once, never written to.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// takeReady returns the background summary that is ready to be swapped in
// for the prompt whose summary is sum: done, written, and folded from sum
// itself. A job that is done but unusable is dropped; one still running
// is left alone (nil).
func (t *Trimmer) takeReady(sum summaryState) *bgJob {
	t.mu.Lock()
	defer t.mu.Unlock()
	job := t.bg.job
	if job == nil {
		return nil
	}
	select {
	case <-job.done:
	default:
		return nil
	}
	t.bg.job = nil
	if job.status != SummaryWritten || job.prev.msg != sum.msg || job.prev.upTo != sum.upTo {
		return nil
	}
	return job
}

// maybeStart starts a background summary when none is in flight and the
// prompt just sent (tokens) is past the trigger (trigger, a share of
// budget), or when force (a maintenance point just dropped turns behind a
// breadcrumb): of the turns a maintenance point would drop now, as a trim
// with o and the trigger finds them, folding in sum.
func (t *Trimmer) maybeStart(msgs []Message, budget int, o *options, trigger float64, sum summaryState, tokens int, force bool) {
	t.mu.Lock()
	busy := t.bg.closed || t.bg.job != nil
	t.mu.Unlock()
	if busy || (!force && tokens <= share(budget, trigger)) {
		return
	}
	oc := *o // o goes back to its pool when the call returns
	oc.trigger, oc.onTrim = trigger, nil
	if st, ok := oc.summarizer.s.(summaryStarter); ok {
		// The Summarizer learns the summary's start now, within the trim,
		// not when the goroutine runs (see SummaryOptions.Background).
		if s := st.StartSummary(); s != nil {
			sm := *oc.summarizer
			sm.s = s
			oc.summarizer = &sm
		}
	}
	var pc cutInfo
	probe, err := trimToBudget(msgs, budget, &oc, &call{reason: ReasonBudget, noArchive: true, pruneOver: true, cut: &pc})
	if (err != nil && !isBudgetError(err)) || probe.DroppedTurns == 0 || pc.start < 0 {
		return
	}
	dropped, previous, cover := coverage(msgs, probe.Kept, pc.start, &oc, sum)
	job := &bgJob{done: make(chan struct{}), prev: sum, upTo: pc.start}
	t.mu.Lock()
	if t.bg.closed || t.bg.job != nil {
		t.mu.Unlock()
		return
	}
	if t.bg.ctx == nil {
		t.bg.ctx, t.bg.stop = context.WithCancel(context.Background())
	}
	ctx := t.bg.ctx
	t.bg.job = job
	t.bg.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.bg.wg.Done()
		defer close(job.done)
		s, status := write(ctx, &oc, dropped, previous, budget, cover)
		job.status = status
		if status == SummaryWritten {
			cover.msg = &s
			job.next = cover
		}
	}()
}

// summaryStarter is a Summarizer that is told when a background summary
// starts (see SummaryOptions.Background).
type summaryStarter interface {
	StartSummary() Summarizer
}

// isBudgetError reports whether err is a *BudgetError.
func isBudgetError(err error) bool {
	_, ok := err.(*BudgetError)
	return ok
}
