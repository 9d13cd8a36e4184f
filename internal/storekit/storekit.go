// Package storekit is what the state backends under stores/ (Redis,
// Postgres) share, so that each keeps only its own queries: the versions a
// compare-and-swap hands out, calls bounded by the caller's context and the
// backend's Timeout whatever the client does (Calls), the names of keys
// (Key, and recallkey.EscapeScope), the recall Store over a backend's batched writes and
// reads (scoped keys, a write-behind queue that a trim never waits for),
// the Calibration shared by replicas (load, observe, compare-and-swap save,
// retry), and the checks of the options they have in common.
package storekit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
	// MinTTL is the shortest TTL a backend keeps: Redis expires keys to the
	// millisecond (PEXPIRE), so a shorter one would delete a state as it is
	// saved. TTLs are kept to the millisecond, rounded up, on every backend.
	MinTTL = time.Millisecond
)

// TTLs are the resolved lifetimes and wait of a backend.
type TTLs struct {
	Retention, State, Recall, Calibration, Timeout time.Duration
}

// Resolve fills the zero fields of t with the defaults and checks the
// rest: no negative duration, no TTL (State, Recall, Calibration) shorter
// than MinTTL, and a state that outlives the cache; the TTLs are rounded
// up to the millisecond. name prefixes the error ("redisstore").
func Resolve(name string, t TTLs) (TTLs, error) {
	for _, d := range []time.Duration{t.Retention, t.State, t.Recall, t.Calibration, t.Timeout} {
		if d < 0 {
			return t, fmt.Errorf("%s: a negative duration (%v) in the options", name, d)
		}
	}
	for _, ttl := range []struct {
		name string
		d    *time.Duration
	}{{"StateTTL", &t.State}, {"RecallTTL", &t.Recall}, {"CalibrationTTL", &t.Calibration}} {
		if *ttl.d != 0 && *ttl.d < MinTTL {
			return t, fmt.Errorf("%s: %s %v is shorter than %v, the shortest TTL the server keeps: it would expire as it is written", name, ttl.name, *ttl.d, MinTTL)
		}
		if r := *ttl.d % MinTTL; r != 0 {
			*ttl.d += MinTTL - r
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

// NextVersion returns the version that follows version in a save: a
// first version for 0 (none saved) and for a negative one (-1: what was
// saved could not be read), and for the largest int64; else version + 1.
// It is always positive.
func NextVersion(version int64) int64 {
	if version <= 0 || version == math.MaxInt64 {
		return FirstVersion()
	}
	return version + 1
}

// Unreadable returns the error of a Load that found under key a value it
// cannot read as a state and a version (why says what it holds): it wraps
// history.ErrInvalidState, and the Load returns it with version -1.
func Unreadable(name, key, why string) error {
	return fmt.Errorf("%s: %q holds %s, not a state and a version: %w", name, key, why, history.ErrInvalidState)
}

// maxObserveAttempts bounds the compare-and-swap loop of a shared
// Calibration: each attempt that loses the race means another replica
// saved an observation meanwhile.
const maxObserveAttempts = 8

// Update loads the Calibration saved under key in st (a fresh one when
// none is, or when what is saved cannot be read, as a Calibration or as a
// version: it is replaced), applies
// change, and saves it with compare-and-swap, loading and applying again
// when another replica saved first; change returns whether it changed the
// Calibration (nothing is saved otherwise). It fails when the store does,
// or when every attempt lost the race.
func Update(ctx context.Context, st history.StateStore, name, key string, change func(*history.Calibration) bool) error {
	return Swap(ctx, st, fmt.Sprintf("%s: calibration %q", name, key), key, func(data []byte) ([]byte, bool, error) {
		var cal history.Calibration
		if data != nil {
			_ = cal.UnmarshalJSON(data) // unreadable: start again from nothing, and replace it
		}
		if !change(&cal) {
			return nil, false, nil
		}
		out, err := cal.MarshalJSON()
		if err != nil {
			return nil, false, fmt.Errorf("%s: encoding a calibration: %w", name, err)
		}
		return out, true, nil
	})
}

// Swap changes the value saved under key in st with compare-and-swap:
// change gets what is saved (nil when nothing is, or when what is saved
// cannot be read as a value and a version: it is replaced) and returns
// the value to save and whether to save it; when another replica saved
// first, Swap loads and calls change again, at most 8 times in all. It
// fails when the store or change does, or when every attempt lost the
// race (what, the value's name, starts that error).
func Swap(ctx context.Context, st history.StateStore, what, key string, change func(data []byte) ([]byte, bool, error)) error {
	var last error
	for attempt := range maxObserveAttempts {
		data, version, err := st.Load(ctx, key)
		if err != nil && !errors.Is(err, history.ErrInvalidState) {
			return err
		}
		if version <= 0 {
			data = nil
		}
		out, save, err := change(data)
		if err != nil || !save {
			return err
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
	return fmt.Errorf("%s: %d saves lost the race: %w", what, maxObserveAttempts, last)
}

// LoadCalibration installs the Calibration saved under key in st into
// cal; cal is left unchanged when none is saved or it cannot be read (the
// error then wraps history.ErrInvalidCalibration).
func LoadCalibration(ctx context.Context, st history.StateStore, name, key string, cal *history.Calibration) error {
	data, version, err := st.Load(ctx, key)
	if errors.Is(err, history.ErrInvalidState) {
		return fmt.Errorf("%s: calibration %q: %w (%w)", name, key, history.ErrInvalidCalibration, err)
	}
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
