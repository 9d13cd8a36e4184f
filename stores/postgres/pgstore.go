// Package pgstore keeps what github.com/histrim/history remembers per
// conversation and per model in PostgreSQL, so that every replica of a
// runtime trims a conversation as one process would: a Trimmer's state
// ([history.StateStore], for [history.Conversations]), the originals of
// elided tool results (a recall [history.Store]), and each model's
// [history.Calibration], merged from the observations of every replica.
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	s, err := pgstore.New(pool, pgstore.Options{Retention: 5 * time.Minute})
//	err = s.CreateTables(ctx) // once, at start-up; idempotent
//	convs := history.NewConversations(s, history.WithLowWater(0.7),
//		history.WithElision(history.ElideOptions{Store: s.Recall("")}))
//	res, err := convs.Trim(ctx, conversationID, transcript, budget)
//
// # Tables
//
// [Options.Table] ("histrim") names three tables: histrim_state (key,
// version, data, expires_at) holds conversations' states,
// histrim_calibration the same for models' Calibrations (JSON), and
// histrim_recall (key, message, expires_at) the elided results (JSON),
// keyed scope + "/" + handle. A save of version 0 is an INSERT ... ON
// CONFLICT that replaces only an expired row; a later save is an UPDATE
// ... WHERE version = $n: either changes one row or none (a conflict), in
// one statement.
//
// # TTLs
//
// Every write sets the row's expires_at: a conversation's state lives
// [Options.StateTTL] after its last request, an elided result
// [Options.RecallTTL] after it was elided or last recalled, a Calibration
// [Options.CalibrationTTL] after its last observation (the server's clock,
// now()). Expired rows are never read; [Store.Purge] deletes them, to run
// periodically. The defaults follow the provider's cache retention
// ([Options.Retention]); see docs/replicas.md.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/storekit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what a Store needs of a connection: a *pgxpool.Pool (safe for
// concurrent use, which a Store needs), or a pgx.Tx.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Options configure a [Store]. The zero value is ready: tables named
// histrim_*, and TTLs for a provider whose cache lives 24 hours.
type Options struct {
	// Table prefixes the tables' names ("histrim" when empty), optionally
	// schema-qualified ("agents.histrim"). Use one per runtime (or per set
	// of Trimmer options) sharing a database.
	Table string
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
	// Timeout bounds each statement (within the caller's context). 0
	// means 1 second. A trim waits for its state at most that long twice
	// (load, save), then goes on without it.
	Timeout time.Duration
}

// Store keeps conversations' states, elided results and calibrations in
// PostgreSQL. It is a [history.StateStore]; [Store.Recall] gives the
// recall [history.Store], and [Store.ObserveShared] and
// [Store.LoadCalibration] share a Calibration per model. It is safe for
// concurrent use when its DB is; make one per process, with [New].
type Store struct {
	db     DB
	table  string // the prefix, as given
	ttl    storekit.TTLs
	recall *storekit.Recall
	state  tableSQL
	cal    tableSQL
	rec    struct{ put, get, purge string }
}

// tableSQL are the statements of a table of versioned rows.
type tableSQL struct{ load, insert, update, purge string }

// New returns a Store over db. It does not contact the database; call
// [Store.CreateTables] once. It fails for a negative duration in opts, a
// StateTTL shorter than the Retention, or an empty name in Table.
func New(db DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("pgstore: a nil DB")
	}
	ttl, err := storekit.Resolve("pgstore", storekit.TTLs{Retention: opts.Retention, State: opts.StateTTL,
		Recall: opts.RecallTTL, Calibration: opts.CalibrationTTL, Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	table := opts.Table
	if table == "" {
		table = "histrim"
	}
	for _, part := range strings.Split(table, ".") {
		if part == "" {
			return nil, fmt.Errorf("pgstore: Table %q has an empty name", table)
		}
	}
	s := &Store{db: db, table: table, ttl: ttl}
	s.state, s.cal = versioned(s.ident("_state")), versioned(s.ident("_calibration"))
	r := s.ident("_recall")
	s.rec.put = `INSERT INTO ` + r + ` (key, message, expires_at) VALUES ($1, $2, now() + $3::interval)
ON CONFLICT (key) DO UPDATE SET message = EXCLUDED.message, expires_at = EXCLUDED.expires_at`
	s.rec.get = `UPDATE ` + r + ` SET expires_at = now() + $2::interval WHERE key = $1 AND expires_at > now() RETURNING message`
	s.rec.purge = purgeSQL(r)
	s.recall = storekit.NewRecall(recallKV{s}, "pgstore", ttl.Timeout)
	return s, nil
}

// ident returns the sanitized name of the table with suffix.
func (s *Store) ident(suffix string) string {
	return pgx.Identifier(strings.Split(s.table+suffix, ".")).Sanitize()
}

func versioned(t string) tableSQL {
	return tableSQL{
		load: `SELECT version, data FROM ` + t + ` WHERE key = $1 AND expires_at > now()`,
		// Version 0: a new row, or one in place of an expired row.
		insert: `INSERT INTO ` + t + ` AS t (key, version, data, expires_at) VALUES ($1, $2, $3, now() + $4::interval)
ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data, expires_at = EXCLUDED.expires_at
WHERE t.expires_at <= now() RETURNING version`,
		update: `UPDATE ` + t + ` SET version = $3, data = $4, expires_at = now() + $5::interval
WHERE key = $1 AND version = $2 AND expires_at > now() RETURNING version`,
		purge: purgeSQL(t),
	}
}

// purgeSQL deletes up to 10,000 expired rows of t.
func purgeSQL(t string) string {
	return `DELETE FROM ` + t + ` WHERE key IN (SELECT key FROM ` + t + ` WHERE expires_at <= now() LIMIT 10000)`
}

// CreateTables creates the Store's tables and indexes unless they exist.
// Replicas may call it at the same time: it takes a transaction-scoped
// advisory lock when db can begin a transaction.
func (s *Store) CreateTables(ctx context.Context) error {
	var ddl []string
	for _, suffix := range []string{"_state", "_calibration"} {
		ddl = append(ddl, `CREATE TABLE IF NOT EXISTS `+s.ident(suffix)+` (
	key text PRIMARY KEY,
	version bigint NOT NULL,
	data bytea NOT NULL,
	expires_at timestamptz NOT NULL)`)
	}
	ddl = append(ddl, `CREATE TABLE IF NOT EXISTS `+s.ident("_recall")+` (
	key text PRIMARY KEY,
	message bytea NOT NULL,
	expires_at timestamptz NOT NULL)`)
	for _, suffix := range []string{"_state", "_calibration", "_recall"} {
		name := strings.Split(s.table+suffix, ".")
		ddl = append(ddl, `CREATE INDEX IF NOT EXISTS `+pgx.Identifier{name[len(name)-1] + "_expires"}.Sanitize()+
			` ON `+s.ident(suffix)+` (expires_at)`)
	}
	run := func(db DB) error {
		// Concurrent CREATE ... IF NOT EXISTS of one name can fail on the
		// catalog's unique index: serialise them.
		if _, err := db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "histrim:"+s.table); err != nil {
			return err
		}
		for _, q := range ddl {
			if _, err := db.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if b, ok := s.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	}); ok {
		var tx pgx.Tx
		if tx, err = b.Begin(ctx); err == nil {
			if err = run(tx); err == nil {
				err = tx.Commit(ctx)
			}
			_ = tx.Rollback(ctx)
		}
	} else {
		err = run(s.db)
	}
	if err != nil {
		return fmt.Errorf("pgstore: creating the tables: %w", err)
	}
	return nil
}

// Purge deletes expired rows, up to 10,000 per table, and returns how
// many; run it periodically (every few minutes) from one replica or all.
func (s *Store) Purge(ctx context.Context) (int64, error) {
	var n int64
	for _, q := range []string{s.state.purge, s.cal.purge, s.rec.purge} {
		tag, err := s.db.Exec(ctx, q)
		if err != nil {
			return n, fmt.Errorf("pgstore: purging: %w", err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

// Load returns the state saved for the conversation key and its version
// (nil and 0 when none is saved, or it expired).
func (s *Store) Load(ctx context.Context, key string) ([]byte, int64, error) {
	return s.load(ctx, &s.state, key)
}

// Save saves the conversation key's state if the version saved is still
// version, and renews its TTL. It returns an error wrapping
// [history.ErrStateConflict] when another replica saved first.
func (s *Store) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	return s.save(ctx, &s.state, key, state, version, s.ttl.State)
}

func (s *Store) load(ctx context.Context, q *tableSQL, key string) ([]byte, int64, error) {
	ctx, cancel := storekit.Bound(ctx, s.ttl.Timeout)
	defer cancel()
	var v int64
	var data []byte
	err := s.db.QueryRow(ctx, q.load, key).Scan(&v, &data)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("pgstore: loading %q: %w", key, err)
	case v == 0:
		return nil, 0, fmt.Errorf("pgstore: %q holds the version 0", key)
	}
	return data, v, nil
}

func (s *Store) save(ctx context.Context, q *tableSQL, key string, data []byte, version int64, ttl time.Duration) (int64, error) {
	ctx, cancel := storekit.Bound(ctx, s.ttl.Timeout)
	defer cancel()
	if data == nil {
		data = []byte{} // bytea NOT NULL
	}
	next := storekit.NextVersion(version)
	var got int64
	var err error
	if version == 0 {
		err = s.db.QueryRow(ctx, q.insert, key, next, data, ttl).Scan(&got)
	} else {
		err = s.db.QueryRow(ctx, q.update, key, version, next, data, ttl).Scan(&got)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("pgstore: saving %q at version %d: %w", key, version, history.ErrStateConflict)
	case err != nil:
		return 0, fmt.Errorf("pgstore: saving %q: %w", key, err)
	}
	return got, nil
}

// Recall returns the recall [history.Store] of one conversation (scope,
// its key): the originals of the results its trims elide, which the
// recall tool of any replica reads back ([history.RecallContext]). Every
// scope shares one table and one memory for results the database could
// not take: a Put while it is down is kept in this process (up to 32 MiB)
// and written when it answers again, so that the trim goes on and nothing
// it elided is lost. Scope "" shares the results of every conversation,
// which [history.Conversations] needs, as its options are the same for
// all of them (handles are 96-bit hashes of the result, so two results
// never share one).
func (s *Store) Recall(scope string) history.Store { return s.recall.Scope("", scope) }

// recallKV is the Store's table of elided results.
type recallKV struct{ s *Store }

func (kv recallKV) Put(ctx context.Context, key string, value []byte) error {
	if _, err := kv.s.db.Exec(ctx, kv.s.rec.put, key, value, kv.s.ttl.Recall); err != nil {
		return fmt.Errorf("pgstore: keeping %q: %w", key, err)
	}
	return nil
}

func (kv recallKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := kv.s.db.QueryRow(ctx, kv.s.rec.get, key, kv.s.ttl.Recall).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("pgstore: reading %q: %w", key, err)
	}
	return v, true, nil
}

// calibrations is the Store's table of Calibrations, a StateStore.
type calibrations struct{ s *Store }

func (c calibrations) Load(ctx context.Context, model string) ([]byte, int64, error) {
	return c.s.load(ctx, &c.s.cal, model)
}

func (c calibrations) Save(ctx context.Context, model string, state []byte, version int64) (int64, error) {
	return c.s.save(ctx, &c.s.cal, model, state, version, c.s.ttl.Calibration)
}

// ObserveShared records an observation (sent and reported, as for
// [history.Calibration.Observe]) in model's Calibration shared by every
// replica: it loads it, observes, and saves it with compare-and-swap,
// again from the newer state when another replica saved first (at most 8
// times), so that no replica's observation is lost. It returns Observe's
// verdict; nothing is saved for [history.VerdictInvalid]. A Calibration
// saved that cannot be read is replaced by one that starts from this
// observation. Each call is a read and a write of one row per model:
// observe a sample of the responses when many replicas serve one model
// at a high rate (a Calibration needs a few observations, not all).
func (s *Store) ObserveShared(ctx context.Context, model string, sent, reported int) (history.Verdict, error) {
	return storekit.ObserveShared(ctx, calibrations{s}, "pgstore", model, sent, reported)
}

// ObserveOverflowShared records a rejection for length (as
// [history.Calibration.ObserveOverflow]) in model's shared Calibration,
// as ObserveShared does.
func (s *Store) ObserveOverflowShared(ctx context.Context, model string, sent, limit int) error {
	return storekit.ObserveOverflowShared(ctx, calibrations{s}, "pgstore", model, sent, limit)
}

// LoadCalibration installs model's shared Calibration into cal (the one
// passed to history.WithCalibration), so that this replica's trims aim
// with what every replica observed. cal is unchanged when none is saved;
// a Calibration saved that cannot be read leaves it unchanged too, with an
// error wrapping [history.ErrInvalidCalibration].
func (s *Store) LoadCalibration(ctx context.Context, model string, cal *history.Calibration) error {
	return storekit.LoadCalibration(ctx, calibrations{s}, "pgstore", model, cal)
}
