// Package storekit is what the state backends under stores/ (Redis,
// Postgres) share, so that each keeps only its own queries: the versions a
// compare-and-swap hands out, the recall Store over a backend's get and put
// (scoped keys, a bounded wait, and a write-behind buffer for results the
// backend could not take), the Calibration shared by replicas (load,
// observe, compare-and-swap save, retry), and the checks of the options
// they have in common.
package storekit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/histrim/history"
)

// Defaults of the backends' options; docs/replicas.md gives the sources.
const (
	// DefaultRetention is the longest prompt-cache retention a provider
	// offers (OpenAI's extended retention, up to 24 hours), as
	// history.WithColdAfter's default.
	DefaultRetention = 24 * time.Hour
	// StateMargin is how much longer than the cache a Trimmer's state is
	// kept by default: a request that comes after the cache expired still
	// finds the time of the last one (a cold resume, pruned) and the
	// summary, which is expensive to write again.
	StateMargin = 24 * time.Hour
	// DefaultCalibrationTTL is how long a model's Calibration is kept after
	// its last observation: it describes the provider's tokenizer and the
	// runtime's tools, not a conversation.
	DefaultCalibrationTTL = 30 * 24 * time.Hour
	// DefaultTimeout bounds every call to the backend: state only makes a
	// trim cache-stable, so a store slower than this is treated as down.
	DefaultTimeout = time.Second
	// PendingLimit is the most bytes of elided results a recall Store keeps
	// in memory while the backend refuses them.
	PendingLimit = 32 << 20
)

// TTLs are the resolved lifetimes and wait of a backend.
type TTLs struct {
	Retention, State, Recall, Calibration, Timeout time.Duration
}

// Resolve fills the zero fields of t with the defaults and checks the
// rest: no negative duration, and a state that outlives the cache. name
// prefixes the error ("redisstore").
func Resolve(name string, t TTLs) (TTLs, error) {
	for _, d := range []time.Duration{t.Retention, t.State, t.Recall, t.Calibration, t.Timeout} {
		if d < 0 {
			return t, fmt.Errorf("%s: a negative duration (%v) in the options", name, d)
		}
	}
	if t.Retention == 0 {
		t.Retention = DefaultRetention
	}
	if t.State == 0 {
		t.State = t.Retention + StateMargin
	}
	if t.State < t.Retention {
		return t, fmt.Errorf("%s: StateTTL %v is shorter than the cache retention %v: a cold resume would not be recognised", name, t.State, t.Retention)
	}
	if t.Recall == 0 {
		t.Recall = t.State
	}
	if t.Calibration == 0 {
		t.Calibration = DefaultCalibrationTTL
	}
	if t.Timeout == 0 {
		t.Timeout = DefaultTimeout
	}
	return t, nil
}

// FirstVersion returns the version of a key's first save: random and never
// 0, so that a replica that remembers a version of a key that expired and
// was saved again from scratch cannot mistake the new state for its own
// (each later save adds 1).
func FirstVersion() int64 { return rand.Int64N(1<<62) + 1 }

// NextVersion returns the version that follows version in a save.
func NextVersion(version int64) int64 {
	if version == 0 {
		return FirstVersion()
	}
	return version + 1
}

// Bound returns ctx bounded by timeout, and its cancel function.
func Bound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, timeout)
}

// KV is a backend's store of elided results: Put keeps value under key (a
// key put twice is overwritten) for the recall TTL; Get returns it and
// renews that TTL, or false and a nil error when there is none.
type KV interface {
	Put(ctx context.Context, key string, value []byte) error
	Get(ctx context.Context, key string) ([]byte, bool, error)
}

// Recall is a history.Store over a KV, shared by every scope of one
// backend value. A Put the backend refuses is kept in memory (up to
// PendingLimit bytes) and written at the next Put or Get that reaches the
// backend, so that a trim goes on while the backend is down and nothing it
// elided is lost: this replica answers recalls of such results from
// memory, the others once the backend is back.
type Recall struct {
	kv      KV
	name    string
	timeout time.Duration
	limit   int

	mu      sync.Mutex
	pending map[string]pendingPut
	bytes   int
	gen     uint64
	busy    bool // a flush is under way
}

type pendingPut struct {
	data []byte
	gen  uint64
}

// NewRecall returns a Recall over kv whose errors start with name + ":",
// and whose calls wait at most timeout.
func NewRecall(kv KV, name string, timeout time.Duration) *Recall {
	return &Recall{kv: kv, name: name, timeout: timeout, limit: PendingLimit, pending: map[string]pendingPut{}}
}

// SetLimit sets the most bytes kept pending (tests).
func (r *Recall) SetLimit(n int) { r.limit = n }

// Pending returns the number of results waiting for the backend.
func (r *Recall) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// Put keeps m under key in the backend, or, when the backend fails, in
// memory until it is back; it fails only when the memory kept for that is
// full.
func (r *Recall) Put(key string, m history.Message) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("%s: encoding an elided result: %w", r.name, err)
	}
	ctx, cancel := Bound(context.Background(), r.timeout)
	defer cancel()
	if err := r.kv.Put(ctx, key, data); err != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		old := len(r.pending[key].data)
		if r.bytes-old+len(data) > r.limit {
			return fmt.Errorf("%s: keeping an elided result failed, and %d bytes already wait for the store: %w", r.name, r.bytes, err)
		}
		r.gen++
		r.pending[key] = pendingPut{data, r.gen}
		r.bytes += len(data) - old
		return nil
	}
	r.flush(ctx)
	return nil
}

// Get returns the message kept under key: from the results waiting for
// the backend, else from the backend.
func (r *Recall) Get(ctx context.Context, key string) (history.Message, bool, error) {
	r.mu.Lock()
	p, ok := r.pending[key]
	r.mu.Unlock()
	if ok {
		return decode(r.name, p.data)
	}
	ctx, cancel := Bound(ctx, r.timeout)
	defer cancel()
	data, ok, err := r.kv.Get(ctx, key)
	if err != nil {
		return history.Message{}, false, fmt.Errorf("%s: reading an elided result: %w", r.name, err)
	}
	r.flush(ctx)
	if !ok {
		return history.Message{}, false, nil
	}
	return decode(r.name, data)
}

func decode(name string, data []byte) (history.Message, bool, error) {
	var m history.Message
	if err := json.Unmarshal(data, &m); err != nil {
		return m, false, fmt.Errorf("%s: an elided result that is not a message: %w", name, err)
	}
	return m, true, nil
}

// flush writes the results waiting for the backend, now that it answered;
// one flush at a time, stopping at the first failure.
func (r *Recall) flush(ctx context.Context) {
	r.mu.Lock()
	if r.busy || len(r.pending) == 0 {
		r.mu.Unlock()
		return
	}
	r.busy = true
	batch := make(map[string]pendingPut, len(r.pending))
	for k, p := range r.pending {
		batch[k] = p
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.busy = false
		r.mu.Unlock()
	}()
	for k, p := range batch {
		if err := r.kv.Put(ctx, k, p.data); err != nil {
			return
		}
		r.mu.Lock()
		if cur, ok := r.pending[k]; ok && cur.gen == p.gen {
			delete(r.pending, k)
			r.bytes -= len(p.data)
		}
		r.mu.Unlock()
	}
}

// Scope returns the history.Store of one conversation over r: its keys
// are prefix + scope + "/" + handle (prefix + handle for the scope "").
func (r *Recall) Scope(prefix, scope string) history.Store {
	if scope != "" {
		prefix += scope + "/"
	}
	return scoped{r, prefix}
}

type scoped struct {
	r      *Recall
	prefix string
}

func (s scoped) Put(handle string, m history.Message) error { return s.r.Put(s.prefix+handle, m) }

func (s scoped) Get(ctx context.Context, handle string) (history.Message, bool, error) {
	return s.r.Get(ctx, s.prefix+handle)
}

// maxObserveAttempts bounds the compare-and-swap loop of a shared
// Calibration: each attempt that loses the race means another replica
// saved an observation meanwhile.
const maxObserveAttempts = 8

// Update loads the Calibration saved under key in st (a fresh one when
// none is, or when what is saved cannot be read: it is replaced), applies
// change, and saves it with compare-and-swap, loading and applying again
// when another replica saved first; change returns whether it changed the
// Calibration (nothing is saved otherwise). It fails when the store does,
// or when every attempt lost the race.
func Update(ctx context.Context, st history.StateStore, name, key string, change func(*history.Calibration) bool) error {
	var last error
	for attempt := range maxObserveAttempts {
		data, version, err := st.Load(ctx, key)
		if err != nil {
			return err
		}
		var cal history.Calibration
		if version != 0 {
			_ = cal.UnmarshalJSON(data) // unreadable: start again from nothing, and replace it
		}
		if !change(&cal) {
			return nil
		}
		out, err := cal.MarshalJSON()
		if err != nil {
			return fmt.Errorf("%s: encoding a calibration: %w", name, err)
		}
		if _, err = st.Save(ctx, key, out, version); err == nil || !errors.Is(err, history.ErrStateConflict) {
			return err
		}
		last = err
		// Another replica saved meanwhile: wait a little, jittered, so
		// that racing replicas do not collide again.
		d := time.Duration(rand.Int64N(int64(time.Millisecond) << attempt))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	return fmt.Errorf("%s: calibration %q: %d saves lost the race: %w", name, key, maxObserveAttempts, last)
}

// LoadCalibration installs the Calibration saved under key in st into
// cal; cal is left unchanged when none is saved or it cannot be read (the
// error then wraps history.ErrInvalidCalibration).
func LoadCalibration(ctx context.Context, st history.StateStore, name, key string, cal *history.Calibration) error {
	data, version, err := st.Load(ctx, key)
	if err != nil || version == 0 {
		return err
	}
	if err := cal.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("%s: calibration %q: %w", name, key, err)
	}
	return nil
}

// ObserveShared records an observation in the Calibration saved under key
// in st, as history.Calibration.Observe does, with Update; it returns
// Observe's verdict, and saves nothing for history.VerdictInvalid.
func ObserveShared(ctx context.Context, st history.StateStore, name, key string, sent, reported int) (history.Verdict, error) {
	var verdict history.Verdict
	err := Update(ctx, st, name, key, func(c *history.Calibration) bool {
		verdict = c.Observe(sent, reported)
		return verdict != history.VerdictInvalid
	})
	return verdict, err
}

// ObserveOverflowShared records a rejection for length in the
// Calibration saved under key in st, as
// history.Calibration.ObserveOverflow does, with Update.
func ObserveOverflowShared(ctx context.Context, st history.StateStore, name, key string, sent, limit int) error {
	return Update(ctx, st, name, key, func(c *history.Calibration) bool {
		c.ObserveOverflow(sent, limit)
		return true
	})
}
