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
// (JSON). Each key is a single slot, so the store works on Redis Cluster.
// A save is one Lua script (compare the version, write, set the TTL); a
// recall read is GETEX, which renews its TTL (Redis 6.2 or later).
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
	// Timeout bounds each call to Redis (within the caller's context). 0
	// means 1 second. A trim waits for its state at most that long twice
	// (load, save), then goes on without it.
	Timeout time.Duration
}

// Store keeps conversations' states, elided results and calibrations in
// Redis. It is a [history.StateStore]; [Store.Recall] gives the recall
// [history.Store], and [Store.ObserveShared] and [Store.LoadCalibration]
// share a Calibration per model. It is safe for concurrent use; make one
// per process, with [New].
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    storekit.TTLs
	recall *storekit.Recall
}

// New returns a Store over rdb (a *redis.Client, *redis.ClusterClient or
// *redis.Ring). It does not contact Redis. It fails for a negative
// duration in opts, or a StateTTL shorter than the Retention.
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
	s.recall = storekit.NewRecall(recallKV{s}, "redisstore", ttl.Timeout)
	return s, nil
}

// Load returns the state saved for the conversation key and its version
// (nil and 0 when none is saved, or it expired).
func (s *Store) Load(ctx context.Context, key string) ([]byte, int64, error) {
	return s.load(ctx, s.prefix+"state:"+key)
}

// Save saves the conversation key's state if the version saved is still
// version, and renews its TTL. It returns an error wrapping
// [history.ErrStateConflict] when another replica saved first.
func (s *Store) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	return s.save(ctx, s.prefix+"state:"+key, state, version, s.ttl.State)
}

func (s *Store) load(ctx context.Context, key string) ([]byte, int64, error) {
	ctx, cancel := storekit.Bound(ctx, s.ttl.Timeout)
	defer cancel()
	vals, err := s.rdb.HMGet(ctx, key, "v", "d").Result()
	if err != nil {
		return nil, 0, fmt.Errorf("redisstore: loading %q: %w", key, err)
	}
	vs, ok1 := vals[0].(string)
	d, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return nil, 0, nil // none, or expired
	}
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil || v == 0 {
		return nil, 0, fmt.Errorf("redisstore: %q holds the version %q", key, vs)
	}
	return []byte(d), v, nil
}

// saveScript writes a state if its version is still the one the writer
// loaded ("0": no state yet), and sets its TTL in milliseconds; it returns
// 1, or 0 when another writer saved meanwhile.
var saveScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur then cur = '0' end
if cur ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

func (s *Store) save(ctx context.Context, key string, data []byte, version int64, ttl time.Duration) (int64, error) {
	ctx, cancel := storekit.Bound(ctx, s.ttl.Timeout)
	defer cancel()
	next := storekit.NextVersion(version)
	ok, err := saveScript.Run(ctx, s.rdb, []string{key},
		strconv.FormatInt(version, 10), strconv.FormatInt(next, 10), data, ttl.Milliseconds()).Int()
	switch {
	case err != nil:
		return 0, fmt.Errorf("redisstore: saving %q: %w", key, err)
	case ok == 0:
		return 0, fmt.Errorf("redisstore: saving %q at version %d: %w", key, version, history.ErrStateConflict)
	}
	return next, nil
}

// Recall returns the recall [history.Store] of one conversation (scope,
// its key): the originals of the results its trims elide, which the
// recall tool of any replica reads back ([history.RecallContext]). Every
// scope shares one Redis keyspace and one memory for results Redis could
// not take: a Put while Redis is down is kept in this process (up to 32
// MiB) and written when Redis answers again, so that the trim goes on and
// nothing it elided is lost. Scope "" shares the results of every
// conversation, which [history.Conversations] needs, as its options are
// the same for all of them (handles are 96-bit hashes of the result, so
// two results never share one).
func (s *Store) Recall(scope string) history.Store {
	return s.recall.Scope(s.prefix+"recall:", scope)
}

// recallKV is the Store's keyspace of elided results.
type recallKV struct{ s *Store }

func (kv recallKV) Put(ctx context.Context, key string, value []byte) error {
	if err := kv.s.rdb.Set(ctx, key, value, kv.s.ttl.Recall).Err(); err != nil {
		return fmt.Errorf("redisstore: keeping %q: %w", key, err)
	}
	return nil
}

func (kv recallKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := kv.s.rdb.GetEx(ctx, key, kv.s.ttl.Recall).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("redisstore: reading %q: %w", key, err)
	}
	return v, true, nil
}

// calibrations is the Store's keyspace of Calibrations, a StateStore.
type calibrations struct{ s *Store }

func (c calibrations) Load(ctx context.Context, model string) ([]byte, int64, error) {
	return c.s.load(ctx, c.s.prefix+"calibration:"+model)
}

func (c calibrations) Save(ctx context.Context, model string, state []byte, version int64) (int64, error) {
	return c.s.save(ctx, c.s.prefix+"calibration:"+model, state, version, c.s.ttl.Calibration)
}

// ObserveShared records an observation (sent and reported, as for
// [history.Calibration.Observe]) in model's Calibration shared by every
// replica: it loads it, observes, and saves it with compare-and-swap,
// again from the newer state when another replica saved first (at most 8
// times), so that no replica's observation is lost. It returns Observe's
// verdict; nothing is saved for [history.VerdictInvalid]. A Calibration
// saved that cannot be read is replaced by one that starts from this
// observation. Each call is a load and a save on one key per model:
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
