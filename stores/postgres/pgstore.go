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
// keyed scope + "/" + handle, the scope escaped as [history.ScopeStore]
// escapes it. A key, a model or a scope that text or an index entry
// cannot hold (not valid UTF-8, a NUL, longer than 1 KiB), or that starts
// with "~sha256:", is stored as "~sha256:" and its SHA-256 in hex. A save
// of version 0 is an INSERT ... ON CONFLICT that replaces only an expired
// row; a later save is an UPDATE ... WHERE version = $n: either changes
// one row or none (a conflict), in one statement, which also writes the
// elided results waiting (a data-modifying WITH).
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
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	// Timeout bounds each statement (within the caller's context),
	// whatever the pool does (waiting for a connection, dialling): the
	// caller stops waiting when it is spent. 0 means 1 second. A trim
	// waits for its state's load at most that long, then goes on without
	// the store (and saves nothing); when the load answered, the save waits
	// at most that long too. Elided results are never waited for.
	Timeout time.Duration
}

// ErrUnanswered is wrapped by the error of a statement that got no answer
// within the caller's context and [Options.Timeout], or that was not sent
// because 8 earlier statements are still unanswered (a server that hangs).
var ErrUnanswered = errors.New("pgstore: no answer from PostgreSQL in time")

// Store keeps conversations' states, elided results and calibrations in
// PostgreSQL. It is a [history.StateStore]; [Store.Recall] gives the
// recall [history.Store], and [Store.ObserveShared] and
// [Store.LoadCalibration] share a Calibration per model. It is safe for
// concurrent use when its DB is; make one per process, with [New].
type Store struct {
	db     DB
	table  string // the prefix, as given
	ttl    storekit.TTLs
	calls  *storekit.Calls
	recall *storekit.Recall
	state  tableSQL
	cal    tableSQL
	rec    struct{ put, get, purge string }
}

// tableSQL are the statements of a table of versioned rows; withRecall
// are the saves that also write elided results (the state's table).
type tableSQL struct {
	load, purge string
	save        saveSQL
	withRecall  saveSQL
}

// saveSQL are the statements of a save: insert (version 0), update
// (a version read), repair (-1: a row that cannot be read).
type saveSQL struct{ insert, update, repair string }

// identMax is the longest identifier PostgreSQL keeps (NAMEDATALEN - 1
// bytes): it truncates longer ones.
const identMax = 63

// New returns a Store over db. It does not contact the database; call
// [Store.CreateTables] once. It fails for a negative duration in opts, a
// TTL shorter than a millisecond (TTLs are rounded up to the millisecond,
// as in redisstore), a StateTTL shorter than the Retention, an empty name
// in Table, a schema name longer than PostgreSQL keeps (63 bytes), or a
// table prefix whose tables' and indexes' names would be the same once
// PostgreSQL truncates them (a prefix longer than 50 bytes).
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
	if err := checkTable(table); err != nil {
		return nil, err
	}
	s := &Store{db: db, table: table, ttl: ttl}
	st, r := s.ident("_state"), s.ident("_recall")
	s.state, s.cal = versioned(st, r), versioned(s.ident("_calibration"), "")
	s.rec.put = recallPut(r, 1)
	s.rec.get = `UPDATE ` + r + ` SET expires_at = now() + $2::interval WHERE key = $1 AND expires_at > now() RETURNING message`
	s.rec.purge = purgeSQL(r)
	s.calls = &storekit.Calls{Timeout: ttl.Timeout, Unanswered: ErrUnanswered}
	s.recall = storekit.NewRecall(recallKV{s}, "pgstore", s.calls, ttl.Recall)
	return s, nil
}

// derived are the suffixes of the names New derives from the table
// prefix: tables, and their expiry indexes.
var derived = []string{"_state", "_calibration", "_recall", "_state_expires", "_calibration_expires", "_recall_expires"}

// checkTable refuses a Table whose names PostgreSQL would not keep apart:
// an empty part, a schema name it truncates, or a prefix whose derived
// names are the same once truncated (a model's calibration would be
// written over a conversation's state).
func checkTable(table string) error {
	parts := strings.Split(table, ".")
	for _, part := range parts {
		if part == "" {
			return fmt.Errorf("pgstore: Table %q has an empty name", table)
		}
	}
	for _, part := range parts[:len(parts)-1] {
		if len(part) > identMax {
			return fmt.Errorf("pgstore: Table %q: the schema name %q is longer than the %d bytes PostgreSQL keeps", table, part, identMax)
		}
	}
	last := parts[len(parts)-1]
	seen := map[string]string{}
	for _, suffix := range derived {
		name := truncateIdent(last + suffix)
		if prev, ok := seen[name]; ok {
			return fmt.Errorf("pgstore: Table %q: %q and %q would both be named %q once PostgreSQL truncates names to %d bytes; use a prefix of at most %d bytes",
				table, last+prev, last+suffix, name, identMax, identMax-len("_calibration_expires"))
		}
		seen[name] = suffix
	}
	return nil
}

// truncateIdent returns name as PostgreSQL keeps it: its first identMax
// bytes, cut back to the start of a character.
func truncateIdent(name string) string {
	if len(name) <= identMax {
		return name
	}
	n := identMax
	for n > 0 && !utf8.RuneStart(name[n]) {
		n--
	}
	return name[:n]
}

// ident returns the sanitized name of the table with suffix.
func (s *Store) ident(suffix string) string {
	return pgx.Identifier(strings.Split(s.table+suffix, ".")).Sanitize()
}

// versioned returns the statements of the table t; the saves write the
// elided results waiting in the table rec too, when rec is not "".
func versioned(t, rec string) tableSQL {
	q := tableSQL{
		// data IS NULL: a NULL and an empty bytea read alike in Go.
		load:  `SELECT version, data, data IS NULL FROM ` + t + ` WHERE key = $1 AND expires_at > now()`,
		purge: purgeSQL(t),
		save: saveSQL{
			// Version 0: a new row, or one in place of an expired row.
			insert: `INSERT INTO ` + t + ` AS t (key, version, data, expires_at) VALUES ($1, $2, $3, now() + $4::interval)
ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data, expires_at = EXCLUDED.expires_at
WHERE t.expires_at <= now() RETURNING version`,
			update: `UPDATE ` + t + ` SET version = $3, data = $4, expires_at = now() + $5::interval
WHERE key = $1 AND version = $2 AND expires_at > now() RETURNING version`,
			// -1: a row whose version or data cannot be read, as load
			// reports it, and only while it still cannot.
			repair: `UPDATE ` + t + ` SET version = $2, data = $3, expires_at = now() + $4::interval
WHERE key = $1 AND expires_at > now() AND (version IS NULL OR version <= 0 OR data IS NULL) RETURNING version`,
		},
	}
	if rec != "" {
		with := func(stmt string, n int) string {
			return `WITH rec AS (` + recallPut(rec, n) + `)
` + stmt
		}
		q.withRecall = saveSQL{insert: with(q.save.insert, 5), update: with(q.save.update, 6), repair: with(q.save.repair, 5)}
	}
	return q
}

// recallPut is the statement writing elided results in the table rec, in
// one round trip: the TTL is $n, the keys $n+1 and the messages $n+2.
func recallPut(rec string, n int) string {
	return `INSERT INTO ` + rec + ` (key, message, expires_at)
SELECT k, m, now() + $` + strconv.Itoa(n) + `::interval FROM unnest($` + strconv.Itoa(n+1) + `::text[], $` + strconv.Itoa(n+2) + `::bytea[]) AS u(k, m)
ON CONFLICT (key) DO UPDATE SET message = EXCLUDED.message, expires_at = EXCLUDED.expires_at`
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
// (nil and 0 when none is saved, or it expired). When the row cannot be
// read as a state and a version (a version NULL, 0 or negative, NULL
// data), it returns nil, -1 and an error wrapping
// [history.ErrInvalidState]; a Save at version -1 replaces it.
func (s *Store) Load(ctx context.Context, key string) ([]byte, int64, error) {
	return s.load(ctx, &s.state, key)
}

// Save saves the conversation key's state if the version saved is still
// version (0: none; -1: what is saved cannot be read), and renews its
// TTL; the elided results waiting are written by the same statement. It
// returns an error wrapping [history.ErrStateConflict] when another
// replica saved first.
func (s *Store) Save(ctx context.Context, key string, state []byte, version int64) (int64, error) {
	return s.save(ctx, &s.state, key, state, version, s.ttl.State)
}

func (s *Store) load(ctx context.Context, q *tableSQL, key string) ([]byte, int64, error) {
	k := storekit.Key(key)
	type row struct {
		v      *int64
		data   []byte
		isNull bool
	}
	r, err := storekit.Do(s.calls, ctx, func(ctx context.Context) (row, error) {
		var r row
		err := s.db.QueryRow(ctx, q.load, k).Scan(&r.v, &r.data, &r.isNull)
		return r, err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("pgstore: loading %q: %w", key, err)
	case r.v == nil:
		return nil, -1, storekit.Unreadable("pgstore", key, "a NULL version")
	case *r.v <= 0:
		return nil, -1, storekit.Unreadable("pgstore", key, fmt.Sprintf("the version %d", *r.v))
	case r.isNull:
		return nil, -1, storekit.Unreadable("pgstore", key, "NULL data")
	}
	return r.data, *r.v, nil
}

func (s *Store) save(ctx context.Context, q *tableSQL, key string, data []byte, version int64, ttl time.Duration) (int64, error) {
	if data == nil {
		data = []byte{} // bytea NOT NULL
	}
	if version < -1 {
		return 0, fmt.Errorf("pgstore: saving %q at version %d, which no load returns: %w", key, version, history.ErrStateConflict)
	}
	k := storekit.Key(key)
	next := storekit.NextVersion(version)
	var batch *storekit.Batch
	stmts := q.save
	if q.withRecall.insert != "" {
		if batch = s.recall.Take(true); batch != nil {
			defer s.recall.Done(batch, false) // unless written
			stmts = q.withRecall
		}
	}
	pick := func(q saveSQL) (string, []any) {
		switch {
		case version == 0:
			return q.insert, []any{k, next, data, ttl}
		case version < 0:
			return q.repair, []any{k, next, data, ttl}
		}
		return q.update, []any{k, version, next, data, ttl}
	}
	sql, args := pick(stmts)
	if batch != nil {
		keys, values := recallArgs(batch.Entries)
		args = append(args, s.ttl.Recall, keys, values)
	}
	got, err := storekit.Do(s.calls, ctx, func(ctx context.Context) (int64, error) {
		var got int64
		err := s.db.QueryRow(ctx, sql, args...).Scan(&got)
		var pgErr *pgconn.PgError
		switch {
		case err == nil || errors.Is(err, pgx.ErrNoRows):
			s.recall.Done(batch, true) // the statement ran: its WITH wrote them
		case batch != nil && errors.As(err, &pgErr):
			// The server refused the statement: save the state alone, so
			// that the results (they wait, and tell Put why) cannot keep a
			// conversation's state from being saved.
			s.recall.Failed(err)
			plain, args := pick(q.save)
			err = s.db.QueryRow(ctx, plain, args...).Scan(&got)
		}
		return got, err
	})
	switch {
	case version < 0 && errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("pgstore: saving %q over a row that cannot be read: it can be now: %w", key, history.ErrStateConflict)
	case errors.Is(err, pgx.ErrNoRows):
		return 0, fmt.Errorf("pgstore: saving %q at version %d: %w", key, version, history.ErrStateConflict)
	case err != nil:
		return 0, fmt.Errorf("pgstore: saving %q: %w", key, err)
	}
	return got, nil
}

// recallArgs returns the keys (stored form) and the messages of entries.
func recallArgs(entries []storekit.Entry) ([]string, [][]byte) {
	keys := make([]string, len(entries))
	values := make([][]byte, len(entries))
	for i, e := range entries {
		keys[i], values[i] = storekit.Key(e.Key), e.Value
	}
	return keys, values
}

// Flush writes the elided results waiting in this process's memory (put
// since the last save, or while the database was down), within ctx: for a
// replica that stops. Results are otherwise written by the next state
// save or in the background, without being waited for.
func (s *Store) Flush(ctx context.Context) error { return s.recall.Flush(ctx) }

// Recall returns the recall [history.Store] of one conversation (scope,
// its key): the originals of the results its trims elide, which the
// recall tool of any replica reads back ([history.RecallContext]). A put
// never waits for the database: results wait in this process's memory
// (up to 32 MiB) and are written in batches, by the next save of a state,
// in the same statement, or in the background, so that a trim never waits
// for them, and nothing it elided is lost while the database is down;
// this replica answers recalls of them meanwhile. A result written in the
// last half of RecallTTL is not written again. Scope "" shares the results
// of every conversation, which [history.Conversations] needs, as it scopes
// them by the conversation's key itself ([history.ScopeStore]): Recall(k)
// and history.ScopeStore(Recall(""), k) are the same results. Only
// handles [history.ElisionHandle] makes are kept or looked up.
func (s *Store) Recall(scope string) history.Store { return s.recall.Scope(scope) }

// recallKV is the Store's table of elided results.
type recallKV struct{ s *Store }

func (kv recallKV) Put(ctx context.Context, entries []storekit.Entry) error {
	keys, values := recallArgs(entries)
	_, err := kv.s.db.Exec(ctx, kv.s.rec.put, kv.s.ttl.Recall, keys, values)
	return err
}

func (kv recallKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := kv.s.db.QueryRow(ctx, kv.s.rec.get, storekit.Key(key), kv.s.ttl.Recall).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, nil
	case err != nil:
		return nil, false, err
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
// observation, as is a row whose version or data cannot be read. Each
// call is a read and a write of one row per model:
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
