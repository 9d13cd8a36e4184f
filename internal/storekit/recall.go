package storekit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/recallkey"
)

// Limits of a recall Store's writes.
const (
	// PendingLimit is the most bytes of elided results a recall Store
	// keeps in memory while they wait for the backend.
	PendingLimit = 32 << 20
	// BatchLimit is the most bytes of results one call writes (at least
	// one result): after an outage, what waited goes in several calls
	// rather than one that cannot finish within the Timeout.
	BatchLimit = 1 << 20
	// FlushDelay is how long a result put waits before a flush in the
	// background writes it, when no state's save has taken it first (a
	// Conversations trim saves its state right after it elides).
	FlushDelay = 100 * time.Millisecond
	// writtenLimit is how many keys written lately a recall Store
	// remembers per generation (two generations), so as not to write them
	// again.
	writtenLimit = 1 << 14
)

// Entry is an elided result for a backend to write: its key (scoped,
// before Key) and its encoded message.
type Entry struct {
	Key   string
	Value []byte
}

// KV is a backend's store of elided results. Put writes every entry (a
// key written again is overwritten) with the recall TTL, in one round trip
// when it can; Get returns the value under key and renews its TTL, or false
// and a nil error when there is none. Their errors are the client's: the
// Recall prefixes them.
type KV interface {
	Put(ctx context.Context, entries []Entry) error
	Get(ctx context.Context, key string) ([]byte, bool, error)
}

// Recall is a history.Store over a KV, shared by every scope of one
// backend value. Put never reaches the backend, so that a trim never
// waits for it: it encodes the result, and queues it unless the same
// result was written under that key lately (less than half the recall TTL
// ago: a later put renews it). The queue is written in batches: by the
// backend's save of a conversation's state, in the same round trip (Take,
// Done), so that the state naming a result is saved with it, and
// otherwise by one flush in the background, FlushDelay after the put.
// While the backend does not take them, results stay queued (up to
// PendingLimit bytes: past it Put fails) and this replica answers recalls
// of them from memory; nothing elided is lost. A flush that fails stops;
// the next put, answered read, or save writes what waits.
type Recall struct {
	kv    KV
	name  string
	calls *Calls
	renew time.Duration
	limit int
	seed  maphash.Seed

	mu       sync.Mutex
	pending  map[string]pendingPut
	bytes    int
	gen      uint64
	recent   map[string]writtenAt // keys written lately; old is the generation before
	old      map[string]writtenAt
	flushing bool // a background flush is scheduled or running
	lastErr  error
	entries  int // results written
	batches  int // calls that wrote results
}

type pendingPut struct {
	data     []byte
	sum      uint64
	gen      uint64
	at       time.Time // when it was put
	inflight int       // batches carrying it, not done yet
}

type writtenAt struct {
	sum uint64
	at  time.Time
}

// NewRecall returns a Recall over kv whose errors start with name + ":",
// whose calls calls bounds, and whose results live ttl in the backend.
func NewRecall(kv KV, name string, calls *Calls, ttl time.Duration) *Recall {
	return &Recall{kv: kv, name: name, calls: calls, renew: ttl / 2, limit: PendingLimit, seed: maphash.MakeSeed(),
		pending: map[string]pendingPut{}, recent: map[string]writtenAt{}, old: map[string]writtenAt{}}
}

// SetLimit sets the most bytes kept pending (tests).
func (r *Recall) SetLimit(n int) {
	r.mu.Lock()
	r.limit = n
	r.mu.Unlock()
}

// Pending returns the number of results waiting for the backend.
func (r *Recall) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// Writes returns how many results were written to the backend, and in how
// many calls.
func (r *Recall) Writes() (entries, calls int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries, r.batches
}

// Put queues m to be written under key, unless it is queued or was
// written lately; it fails only when the memory for results waiting is
// full.
func (r *Recall) Put(key string, m history.Message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("%s: encoding an elided result: %w", r.name, err)
	}
	sum := maphash.Bytes(r.seed, data)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	p, queued := r.pending[key]
	if queued && p.sum == sum {
		return nil
	}
	if w, ok := r.writtenLately(key); ok && w.sum == sum && now.Sub(w.at) < r.renew {
		return nil
	}
	if r.bytes-len(p.data)+len(data) > r.limit {
		if r.lastErr != nil {
			return fmt.Errorf("%s: keeping an elided result: %d bytes already wait for the store: %w", r.name, r.bytes, r.lastErr)
		}
		return fmt.Errorf("%s: keeping an elided result: %d bytes already wait for the store", r.name, r.bytes)
	}
	r.gen++
	r.pending[key] = pendingPut{data: data, sum: sum, gen: r.gen, at: now}
	r.bytes += len(data) - len(p.data)
	r.schedule(FlushDelay)
	return nil
}

func (r *Recall) writtenLately(key string) (writtenAt, bool) {
	if w, ok := r.recent[key]; ok {
		return w, true
	}
	w, ok := r.old[key]
	return w, ok
}

// Get returns the message kept under key: from the results waiting for
// the backend, else from the backend, within ctx and the Timeout.
func (r *Recall) Get(ctx context.Context, key string) (history.Message, bool, error) {
	r.mu.Lock()
	p, ok := r.pending[key]
	r.mu.Unlock()
	if ok {
		return decode(r.name, p.data)
	}
	type got struct {
		data []byte
		ok   bool
	}
	g, err := Do(r.calls, ctx, func(ctx context.Context) (got, error) {
		data, ok, err := r.kv.Get(ctx, key)
		return got{data, ok}, err
	})
	if err != nil {
		return history.Message{}, false, fmt.Errorf("%s: reading an elided result: %w", r.name, err)
	}
	r.mu.Lock()
	r.schedule(0) // the backend answers: write what waits
	r.mu.Unlock()
	if !g.ok {
		return history.Message{}, false, nil
	}
	return decode(r.name, g.data)
}

func decode(name string, data []byte) (history.Message, bool, error) {
	var m history.Message
	if err := json.Unmarshal(data, &m); err != nil {
		return m, false, fmt.Errorf("%s: an elided result that is not a message: %w", name, err)
	}
	return m, true, nil
}

// Batch is results taken from the queue to be written (Take, Done).
type Batch struct {
	// Entries are the results to write.
	Entries []Entry
	gens    []uint64
	sums    []uint64
	once    sync.Once
}

// Take returns results waiting, the newest first, up to BatchLimit bytes
// (at least one), or nil when none waits; call Done once the call that
// writes them returned. With all, it takes any result waiting: a backend
// takes them so to write them with a state's save, which names them. The
// background flush takes only those put FlushDelay ago or more and not
// carried by another call, so that the next save writes a trim's results
// (in the round trip it makes anyway) rather than a call of their own.
func (r *Recall) Take(all bool) *Batch {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.pending))
	for k, p := range r.pending {
		if all || p.inflight == 0 && now.Sub(p.at) >= FlushDelay {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(r.pending[b].gen, r.pending[a].gen) })
	b := &Batch{}
	size := 0
	for _, k := range keys {
		p := r.pending[k]
		if size > 0 && size+len(p.data) > BatchLimit {
			break
		}
		size += len(p.data)
		p.inflight++
		r.pending[k] = p
		b.Entries = append(b.Entries, Entry{k, p.data})
		b.gens = append(b.gens, p.gen)
		b.sums = append(b.sums, p.sum)
	}
	return b
}

// Done records the end of the call that carried b (nil: none); only the
// first Done of a batch counts. When written, b's results leave the queue
// (unless put again since with another value), are not written again for
// half the recall TTL, and what still waits is flushed in the background
// (the backend answers); else they wait for the next call.
func (r *Recall) Done(b *Batch, written bool) {
	if b == nil {
		return
	}
	b.once.Do(func() {
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, e := range b.Entries {
			p, ok := r.pending[e.Key]
			if ok && p.gen == b.gens[i] {
				if written {
					delete(r.pending, e.Key)
					r.bytes -= len(p.data)
				} else {
					p.inflight--
					r.pending[e.Key] = p
				}
			}
			if written {
				if len(r.recent) >= writtenLimit {
					r.old, r.recent = r.recent, make(map[string]writtenAt, writtenLimit)
				}
				r.recent[e.Key] = writtenAt{b.sums[i], now}
			}
		}
		if written {
			r.entries += len(b.Entries)
			r.batches++
			r.lastErr = nil
			r.schedule(FlushDelay)
		}
	})
}

// Failed records why results were not written, for the error of a Put
// that finds the queue full.
func (r *Recall) Failed(err error) {
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
}

// schedule starts a background flush after delay unless one is scheduled
// or running, or nothing waits; r.mu is held.
func (r *Recall) schedule(delay time.Duration) {
	if r.flushing || len(r.pending) == 0 {
		return
	}
	r.flushing = true
	time.AfterFunc(delay, r.background)
}

// background writes what waits, a batch at a time, until nothing does or
// a write fails; results put too lately to be taken are left to the
// state's save, or to another flush FlushDelay later. No goroutine stays
// behind.
func (r *Recall) background() {
	for {
		b := r.Take(false)
		if b == nil {
			r.mu.Lock()
			r.flushing = false
			for _, p := range r.pending {
				if p.inflight == 0 { // put lately: if no save takes it, later
					r.schedule(FlushDelay)
					break
				}
			}
			r.mu.Unlock()
			return
		}
		if err := r.write(context.Background(), b); err != nil {
			r.mu.Lock()
			r.flushing = false
			r.mu.Unlock()
			return
		}
	}
}

// write writes b in one call, within ctx and the Timeout.
func (r *Recall) write(ctx context.Context, b *Batch) error {
	defer r.Done(b, false)
	_, err := Do(r.calls, ctx, func(ctx context.Context) (struct{}, error) {
		err := r.kv.Put(ctx, b.Entries)
		if err == nil {
			r.Done(b, true) // even when the caller stopped waiting
		}
		return struct{}{}, err
	})
	if err != nil {
		r.Failed(err)
		return fmt.Errorf("%s: writing %d elided results: %w", r.name, len(b.Entries), err)
	}
	return nil
}

// Flush writes every result waiting, within ctx (each call also within the
// Timeout): for a replica that stops, or a test. It returns the first
// error.
func (r *Recall) Flush(ctx context.Context) error {
	for {
		b := r.Take(true)
		if b == nil {
			return nil
		}
		if err := r.write(ctx, b); err != nil {
			return err
		}
	}
}

// Scope returns the history.Store of one conversation over r: its keys
// are recallkey.EscapeScope(scope) + "/" + handle (the handle alone for the scope
// ""), the names history.ScopeStore(r.Scope(""), scope) gives. Only
// handles of history.ElisionHandle's form (ValidHandle) are kept or
// looked up: Put refuses another, Get reports it as not found.
func (r *Recall) Scope(scope string) history.Store {
	prefix := ""
	if scope != "" {
		prefix = recallkey.EscapeScope(scope) + "/"
	}
	return scoped{r, prefix}
}

type scoped struct {
	r      *Recall
	prefix string
}

func (s scoped) Put(handle string, m history.Message) error {
	if !ValidHandle(handle) {
		return fmt.Errorf("%s: %q is not an elision handle", s.r.name, handle)
	}
	return s.r.Put(s.prefix+handle, m)
}

func (s scoped) Get(ctx context.Context, handle string) (history.Message, bool, error) {
	if !ValidHandle(handle) {
		return history.Message{}, false, nil
	}
	return s.r.Get(ctx, s.prefix+handle)
}
