// Package redisstore keeps what github.com/histrim/history remembers per
// conversation and per model in Redis, so that every replica of a runtime
// trims a conversation as one process would: a Trimmer's state
// ([history.StateStore], for [history.Conversations]), the originals of
// elided tool results (a recall [history.Store]), and each model's
// [history.Calibration], merged from the observations of every replica.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	s, err := redisstore.New(rdb, redisstore.Options{Retention: 5 * time.Minute})
//	convs := history.NewConversations(s, history.WithLowWater(0.7),
//		history.WithElision(history.ElideOptions{Store: s.Recall("")}))
//	res, err := convs.Trim(ctx, conversationID, transcript, budget)
//
// # Keys
//
// Every key starts with [Options.Prefix] ("histrim:"): prefix+"state:"+key
// is a hash holding a conversation's state ("d") and its version ("v");
// prefix+"calibration:"+model is the same for a model's Calibration (JSON);
// prefix+"recall:"+scope+"/"+handle is a string holding an elided result
// (JSON), the scope escaped as [history.ScopeStore] escapes it. A key, a
// model or a scope that is not valid UTF-8, holds a NUL, is longer than 1
// KiB or starts with "~sha256:" is named by "~sha256:" and its SHA-256 in
// hex instead, as in pgstore. Each key is a single slot, so the store
// works on Redis Cluster. A save is one Lua script (compare the version,
// write, set the TTL), which also writes the elided results waiting, in
// the same round trip (a pipeline); a recall read is GETEX, which renews
// its TTL (Redis 6.2 or later).
//
// # TTLs
//
// Every write sets the key's TTL: a conversation's state lives
// [Options.StateTTL] after its last request, an elided result
// [Options.RecallTTL] after it was elided or last recalled, a Calibration
// [Options.CalibrationTTL] after its last observation. The defaults follow
// the provider's cache retention ([Options.Retention]); see
// docs/replicas.md.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/storekit"
	"github.com/redis/go-redis/v9"
)

// Options configure a [Store]. The zero value is ready: the "histrim:"
// prefix, and TTLs for a provider whose cache lives 24 hours.
type Options struct {
	// Prefix starts every key; "" means "histrim:". Use one per runtime
	// (or per set of Trimmer options) sharing a Redis.
	Prefix string
	// Retention is the provider's prompt-cache retention, the
	// history.WithColdAfter the runtime uses: Anthropic's 5 minutes (1
	// hour with "ttl": "1h"), OpenAI's 5 minutes to 1 hour in memory or up
	// to 24 hours extended. 0 means 24 hours, the longest on offer.
	Retention time.Duration
	// StateTTL is how long a conversation's state is kept after its last
	// request. 0 means Retention plus 24 hours; it must not be shorter
	// than Retention, so that a request after the cache expired still
	// finds the last request's time (a cold resume) and the summary.
	StateTTL time.Duration
	// RecallTTL is how long an elided result is kept after it was elided
	// or last recalled. 0 means StateTTL: as long as a placeholder naming
	// it can be in a prompt.
	RecallTTL time.Duration
	// CalibrationTTL is how long a model's Calibration is kept after its
	// last observation. 0 means 30 days.
	CalibrationTTL time.Duration
	// Timeout bounds each call to Redis (within the caller's context),
	// whatever the client's own timeouts and retries: the caller stops
	// waiting when it is spent. 0 means 1 second. A trim waits for its
	// state's load at most that long, then goes on without the store (and
	// saves nothing); when the load answered, the save waits at most that
	// long too. Elided results are never waited for.
	Timeout time.Duration
}

// ErrUnanswered is wrapped by the error of a call to Redis that got no
// answer within the caller's context and [Options.Timeout], or that was not
// sent because 8 earlier calls are still unanswered (a server that hangs).
var ErrUnanswered = errors.New("redisstore: no answer from Redis in time")

// Store keeps conversations' states, elided results and calibrations in
// Redis. It is a [history.StateStore]; [Store.Recall] gives the recall
// [history.Store], and [Store.ObserveShared] and [Store.LoadCalibration]
// share a Calibration per model. It is safe for concurrent use; make one
// per process, with [New].
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    storekit.TTLs
	calls  *storekit.Calls
	recall *storekit.Recall
}

// New returns a Store over rdb (a *redis.Client, *redis.ClusterClient or
// *redis.Ring). It does not contact Redis. It fails for a negative
// duration in opts, a TTL shorter than a millisecond (what PEXPIRE keeps;
// TTLs are rounded up to the millisecond), or a StateTTL shorter than the
// Retention.
func New(rdb redis.UniversalClient, opts Options) (*Store, error) {
	if rdb == nil {
		return nil, errors.New("redisstore: a nil client")
	}
	ttl, err := storekit.Resolve("redisstore", storekit.TTLs{Retention: opts.Retention, State: opts.StateTTL,
		Recall: opts.RecallTTL, Calibration: opts.CalibrationTTL, Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	s := &Store{rdb: rdb, prefix: opts.Prefix, ttl: ttl}
	if s.prefix == "" {
		s.prefix = "histrim:"
	}
	s.calls = &storekit.Calls{Timeout: ttl.Timeout, Unanswered: ErrUnanswered}
	s.recall = storekit.NewRecall(recallKV{s}, "redisstore", s.calls, ttl.Recall)
	return s, nil
}

// Load returns the state saved for the conversation key and its version
// (nil and 0 when none is saved, or it expired). When the key holds
// something else than a state and a version (a version that is not a
// positive integer, no data, a key of another type), it returns nil, -1
// and an error wrapping [history.ErrInvalidState]; a Save at version -1
// replaces it.
func (s *Store) Load(ctx context.Context, key string) ([]byte, int64, error) {
	return s.load(ctx, s.stateKey(key))
}

// Save saves the conversation key's state if the version saved is still
// version (0: none; -1: what is saved cannot be read), and renews its TTL;
// the elided results waiting are written in the same round trip. It
// returns an error wrapping [history.ErrStateConflict] when another
// replica saved first.
func (s *Store) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	return s.save(ctx, s.stateKey(key), state, version, s.ttl.State, true)
}

func (s *Store) stateKey(key string) string { return s.prefix + "state:" + storekit.Key(key) }

// loadScript returns {0} when the key holds nothing, {1} when it holds
// another type than a hash, else {2, v, d} (false for a field missing).
var loadScript = redis.NewScript(`
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then return {0} end
if t ~= 'hash' then return {1} end
return {2, redis.call('HGET', KEYS[1], 'v'), redis.call('HGET', KEYS[1], 'd')}
`)

func (s *Store) load(ctx context.Context, key string) ([]byte, int64, error) {
	res, err := storekit.Do(s.calls, ctx, func(ctx context.Context) ([]any, error) {
		return loadScript.Run(ctx, s.rdb, []string{key}).Slice()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("redisstore: loading %q: %w", key, err)
	}
	code := int64(-1)
	if len(res) > 0 {
		code, _ = res[0].(int64)
	}
	switch {
	case code == 0:
		return nil, 0, nil // none, or expired
	case code != 2 || len(res) < 3:
		return nil, -1, storekit.Unreadable("redisstore", key, "a key of another type than a hash")
	}
	vs, ok1 := res[1].(string)
	d, ok2 := res[2].(string)
	v, err := strconv.ParseInt(vs, 10, 64)
	switch {
	case !ok1:
		return nil, -1, storekit.Unreadable("redisstore", key, "a hash without a version")
	case err != nil || v <= 0 || strconv.FormatInt(v, 10) != vs:
		return nil, -1, storekit.Unreadable("redisstore", key, fmt.Sprintf("the version %q", vs))
	case !ok2:
		return nil, -1, storekit.Unreadable("redisstore", key, "a hash without data")
	}
	return []byte(d), v, nil
}

// saveScript writes a state if the version saved is still the one the
// writer loaded ("0": none; "-1": a value that is not a state and a
// version, which it deletes first), and sets its TTL in milliseconds; it
// returns 1, or 0 when the version saved is another (another writer saved
// meanwhile). What it takes for a version is what load takes: the digits
// of a positive int64, without a leading zero, with data beside it.
var saveScript = redis.NewScript(`
local cur = '0'
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' then
  cur = '-1'
  if t == 'hash' then
    local v = redis.call('HGET', KEYS[1], 'v')
    if v and redis.call('HEXISTS', KEYS[1], 'd') == 1 and string.match(v, '^[1-9][0-9]*$')
      and (#v < 19 or (#v == 19 and v <= '9223372036854775807')) then
      cur = v
    end
  end
end
if cur ~= ARGV[1] then return 0 end
if cur == '-1' then redis.call('DEL', KEYS[1]) end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// save runs saveScript on key; with recall, the elided results waiting
// are written in the same round trip, before it.
func (s *Store) save(ctx context.Context, key string, data []byte, version int64, ttl time.Duration, recall bool) (int64, error) {
	next := storekit.NextVersion(version)
	args := []any{strconv.FormatInt(version, 10), strconv.FormatInt(next, 10), data, ttl.Milliseconds()}
	var batch *storekit.Batch
	if recall {
		batch = s.recall.Take(true)
		defer s.recall.Done(batch, false) // unless written
	}
	ok, err := storekit.Do(s.calls, ctx, func(ctx context.Context) (int, error) {
		if batch == nil {
			return saveScript.Run(ctx, s.rdb, []string{key}, args...).Int()
		}
		pipe := s.rdb.Pipeline()
		sets := make([]*redis.StatusCmd, len(batch.Entries))
		for i, e := range batch.Entries {
			sets[i] = pipe.Set(ctx, s.recallKey(e.Key), e.Value, s.ttl.Recall)
		}
		run := saveScript.EvalSha(ctx, pipe, []string{key}, args...)
		_, _ = pipe.Exec(ctx)
		written := true
		for _, c := range sets {
			written = written && c.Err() == nil
		}
		if written {
			s.recall.Done(batch, true) // even when the caller stopped waiting
		}
		if redis.HasErrorPrefix(run.Err(), "NOSCRIPT") {
			return saveScript.Run(ctx, s.rdb, []string{key}, args...).Int()
		}
		return run.Int()
	})
	switch {
	case err != nil:
		return 0, fmt.Errorf("redisstore: saving %q: %w", key, err)
	case ok == 0:
		return 0, fmt.Errorf("redisstore: saving %q at version %d: %w", key, version, history.ErrStateConflict)
	}
	return next, nil
}

// Flush writes the elided results waiting in this process's memory (put
// since the last save, or while Redis was down), within ctx: for a
// replica that stops. Results are otherwise written by the next state
// save or in the background, without being waited for.
func (s *Store) Flush(ctx context.Context) error { return s.recall.Flush(ctx) }

// Recall returns the recall [history.Store] of one conversation (scope,
// its key): the originals of the results its trims elide, which the
// recall tool of any replica reads back ([history.RecallContext]). A put
// never waits for Redis: results wait in this process's memory (up to 32
// MiB) and are written in batches, by the next save of a state, in the
// same round trip, or in the background, so that a trim never waits for
// them, and nothing it elided is lost while Redis is down; this replica
// answers recalls of them meanwhile. A result written in the last half of
// RecallTTL is not written again. Scope "" shares the results of every
// conversation, which [history.Conversations] needs, as it scopes them by
// the conversation's key itself ([history.ScopeStore]): Recall(k) and
// history.ScopeStore(Recall(""), k) are the same results. Only handles
// [history.ElisionHandle] makes are kept or looked up.
func (s *Store) Recall(scope string) history.Store { return s.recall.Scope(scope) }

func (s *Store) recallKey(key string) string { return s.prefix + "recall:" + storekit.Key(key) }

// recallKV is the Store's keyspace of elided results.
type recallKV struct{ s *Store }

func (kv recallKV) Put(ctx context.Context, entries []storekit.Entry) error {
	_, err := kv.s.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for _, e := range entries {
			pipe.Set(ctx, kv.s.recallKey(e.Key), e.Value, kv.s.ttl.Recall)
		}
		return nil
	})
	return err
}

func (kv recallKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := kv.s.rdb.GetEx(ctx, kv.s.recallKey(key), kv.s.ttl.Recall).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return v, true, nil
}

// calibrations is the Store's keyspace of Calibrations, a StateStore.
type calibrations struct{ s *Store }

func (c calibrations) Load(ctx context.Context, model string) ([]byte, int64, error) {
	return c.s.load(ctx, c.s.prefix+"calibration:"+storekit.Key(model))
}

func (c calibrations) Save(ctx context.Context, model string, state []byte, version int64) (int64, error) {
	return c.s.save(ctx, c.s.prefix+"calibration:"+storekit.Key(model), state, version, c.s.ttl.Calibration, false)
}

// ObserveShared records an observation (sent and reported, as for
// [history.Calibration.Observe]) in model's Calibration shared by every
// replica: it loads it, observes, and saves it with compare-and-swap,
// again from the newer state when another replica saved first (at most 8
// times), so that no replica's observation is lost. It returns Observe's
// verdict; nothing is saved for [history.VerdictInvalid]. A Calibration
// saved that cannot be read is replaced by one that starts from this
// observation, as is a value that is not a Calibration and a version.
// Each call is a load and a save on one key per model:
// observe a sample of the responses when many replicas serve one model
// at a high rate (a Calibration needs a few observations, not all).
func (s *Store) ObserveShared(ctx context.Context, model string, sent, reported int) (history.Verdict, error) {
	return storekit.ObserveShared(ctx, calibrations{s}, "redisstore", model, sent, reported)
}

// ObserveOverflowShared records a rejection for length (as
// [history.Calibration.ObserveOverflow]) in model's shared Calibration,
// as ObserveShared does.
func (s *Store) ObserveOverflowShared(ctx context.Context, model string, sent, limit int) error {
	return storekit.ObserveOverflowShared(ctx, calibrations{s}, "redisstore", model, sent, limit)
}

// LoadCalibration installs model's shared Calibration into cal (the one
// passed to history.WithCalibration), so that this replica's trims aim
// with what every replica observed. cal is unchanged when none is saved;
// a Calibration saved that cannot be read leaves it unchanged too, with an
// error wrapping [history.ErrInvalidCalibration].
func (s *Store) LoadCalibration(ctx context.Context, model string, cal *history.Calibration) error {
	return storekit.LoadCalibration(ctx, calibrations{s}, "redisstore", model, cal)
}
