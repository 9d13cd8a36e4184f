// This file owns what a Conversations keeps on a replica: the Trimmers of
// the conversations it served lately, in order of use, within
// MaxConversations and IdleAfter, and their retirement.

package history

import (
	"time"

	"github.com/histrim/history/internal/conv"
)

// limits returns the settings of the lifecycle and OnState: the exported
// fields, or an adapter's.
func (c *Conversations) limits() conv.Settings {
	if c.settings != nil {
		return c.settings()
	}
	return conv.Settings{OnState: c.OnState, MaxConversations: c.MaxConversations, IdleAfter: c.IdleAfter}
}

// acquire returns this replica's entry for key, made on first use, marked
// in use until release; it drops the entries beyond the limits first.
func (c *Conversations) acquire(key string) *conversation {
	s := c.limits()
	limit := s.MaxConversations
	if limit == 0 {
		limit = DefaultMaxConversations
	}
	var now time.Time
	if s.IdleAfter > 0 {
		now = time.Now()
		if c.clock != nil {
			now = c.clock()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cv := c.local[key]
	if cv == nil {
		cv = &conversation{key: key}
		c.local[key] = cv
		cv.elem = c.lru.PushFront(cv)
	} else {
		c.lru.MoveToFront(cv.elem)
	}
	cv.refs++
	cv.used = now
	// The list is in order of use: walk it from the least recently used
	// while there are too many entries or they are idle.
	for e := c.lru.Back(); e != nil; {
		old := e.Value.(*conversation)
		prev := e.Prev()
		over := limit > 0 && len(c.local) > limit
		idle := s.IdleAfter > 0 && now.Sub(old.used) >= s.IdleAfter
		if !over && !idle {
			break
		}
		if old.refs == 0 {
			c.drop(old)
		}
		e = prev
	}
	return cv
}

// release marks cv no longer in use by a call; the caller holds cv.mu.
// An entry Forget dropped while it was in use has its Trimmer dropped
// with the last call.
func (c *Conversations) release(cv *conversation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cv.refs--
	if cv.gone && cv.refs == 0 {
		c.retire(cv.t)
		cv.t = nil
	}
}

// drop removes cv from the map, and drops its Trimmer unless a call is
// using it (release will). The caller holds c.mu.
func (c *Conversations) drop(cv *conversation) {
	delete(c.local, cv.key)
	c.lru.Remove(cv.elem)
	cv.gone = true
	if cv.refs == 0 {
		c.retire(cv.t)
		cv.t = nil
	}
}

// retire forgets k, a Trimmer no longer kept, and stops its background
// summary if one is in flight (Close waits for it). The caller holds c.mu.
func (c *Conversations) retire(k keeper) {
	if k == nil || c.closed {
		return // Close stops those it finds
	}
	delete(c.live, k)
	select {
	case <-k.SummaryDone():
		return // none in flight, and none will start: nobody trims with k
	default:
	}
	c.closing.Add(1)
	go func() {
		defer c.closing.Done()
		k.Close()
	}()
}

// keep makes t the Trimmer of cv, with the version of the state it holds
// in the store (0: unknown, load again), and drops the one it replaces.
// The caller holds cv.mu.
func (c *Conversations) keep(cv *conversation, t keeper, version int64) {
	if old := cv.t; old != t {
		cv.t = t
		c.mu.Lock()
		c.retire(old)
		c.mu.Unlock()
	}
	cv.version = version
}

// discard drops t, a Trimmer made for a call whose result was not kept,
// unless it is cv's own. The caller holds cv.mu.
func (c *Conversations) discard(cv *conversation, t keeper) {
	if t != cv.t {
		c.mu.Lock()
		c.retire(t)
		c.mu.Unlock()
	}
}
