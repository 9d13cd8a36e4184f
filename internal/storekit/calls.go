package storekit

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// MaxStragglers is how many calls a backend may have that outlived their
// caller (the caller's wait was spent, the client has not returned yet)
// before new calls fail at once: a server that hangs, behind a client that
// does not honour contexts, then holds at most this many goroutines of the
// Store, and requests stop waiting for it.
const MaxStragglers = 8

// Calls runs a backend's calls so that each returns to its caller within
// the caller's context and the backend's Timeout, whichever ends first,
// even when the client does not honour contexts (go-redis without
// ContextTimeoutEnabled waits for its own ReadTimeout, retries included):
// the call runs in a goroutine, and the caller stops waiting for it when
// the bound is spent. Its error then wraps the backend's sentinel
// (Unanswered) and the context's error. It is safe for concurrent use.
type Calls struct {
	// Timeout bounds every call.
	Timeout time.Duration
	// Unanswered is the backend's sentinel for a call that got no answer
	// in time, wrapped by the errors Do returns then.
	Unanswered error

	stragglers atomic.Int32
}

// Stragglers returns the number of calls still running after their caller
// stopped waiting.
func (c *Calls) Stragglers() int { return int(c.stragglers.Load()) }

// Do runs f with ctx bounded by c.Timeout, and returns what it returns, or,
// when ctx or the Timeout ends first, an error wrapping c.Unanswered and
// the context's error without waiting for f. It fails at once, without
// calling f, when ctx is already done or MaxStragglers calls are still
// running after their callers stopped waiting.
func Do[T any](c *Calls, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("%w: %w", c.Unanswered, err)
	}
	if n := c.stragglers.Load(); n >= MaxStragglers {
		return zero, fmt.Errorf("%w: %d earlier calls are still unanswered", c.Unanswered, n)
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	var (
		v    T
		err  error
		done = make(chan struct{})
		// claimed is set by whichever of the caller (giving up) and the
		// call (returning) comes first.
		claimed atomic.Bool
	)
	start := time.Now()
	go func() {
		defer cancel()
		v, err = f(ctx)
		if !claimed.CompareAndSwap(false, true) {
			c.stragglers.Add(-1) // the caller gave up on this one
		}
		close(done)
	}()
	select {
	case <-done:
		return v, err
	case <-ctx.Done():
		c.stragglers.Add(1)
		if !claimed.CompareAndSwap(false, true) {
			c.stragglers.Add(-1) // it returned meanwhile
			<-done
			return v, err
		}
		return zero, fmt.Errorf("%w after %v: %w", c.Unanswered, time.Since(start).Round(time.Millisecond), ctx.Err())
	}
}
