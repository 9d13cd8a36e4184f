package pgstore_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/storekit/storetest"
	pgstore "github.com/histrim/history/stores/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dsn returns the PostgreSQL the tests run against, or skips the test.
func dsn(t testing.TB) string { return storetest.Server(t, "HISTRIM_POSTGRES_DSN", "PostgreSQL") }

// open is a replica's Store: its own pool to addr (the server's or a
// proxy's), its tables named after ns, created if missing and dropped at
// the end of the test.
func open(t testing.TB, dsn, addr, ns string, ttl time.Duration) *pgstore.Store {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.ConnectTimeout = time.Second
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	table := "histrim_test_" + ns
	s, err := pgstore.New(pool, pgstore.Options{Table: table,
		Retention: ttl, StateTTL: ttl, RecallTTL: ttl, CalibrationTTL: ttl, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTables(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer pool.Close()
		for _, suffix := range []string{"_state", "_calibration", "_recall"} {
			_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table + suffix}.Sanitize())
		}
	})
	return s
}

func TestStore(t *testing.T) {
	d := dsn(t)
	cfg, err := pgx.ParseConfig(d)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, storetest.Backend{
		Name: "pgstore",
		Addr: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		Open: func(t testing.TB, addr, ns string, ttl time.Duration) storetest.Stores {
			return open(t, d, addr, ns, ttl)
		},
		Corruptions: corruptions(d),
		RecallWrites: func(s storetest.Stores) (int, int) {
			return pgstore.RecallWrites(s.(*pgstore.Store))
		},
		CorruptCalibration: func(t *testing.T, ns, model string) {
			conn, err := pgx.Connect(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			_, err = conn.Exec(context.Background(), "UPDATE "+pgx.Identifier{"histrim_test_" + ns + "_calibration"}.Sanitize()+
				" SET data = '{not json' WHERE key = $1", model)
			if err != nil {
				t.Fatal(err)
			}
		},
	})
}

// corruptions are rows of a state's or calibration's table that the
// store did not write.
func corruptions(dsn string) []storetest.Corruption {
	row := func(setup, version, data string) func(t testing.TB, ns, space, key string) {
		return func(t testing.TB, ns, space, key string) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			table := pgx.Identifier{"histrim_test_" + ns + "_" + space}.Sanitize()
			if setup != "" {
				if _, err := conn.Exec(ctx, "ALTER TABLE "+table+" "+setup); err != nil {
					t.Fatal(err)
				}
			}
			_, err = conn.Exec(ctx, "INSERT INTO "+table+" (key, version, data, expires_at) VALUES ($1, "+version+", "+data+", now() + interval '1 hour')"+
				" ON CONFLICT (key) DO UPDATE SET version = EXCLUDED.version, data = EXCLUDED.data, expires_at = EXCLUDED.expires_at", key)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return []storetest.Corruption{
		{Name: "version 0", Write: row("", "0", "'state'")},
		{Name: "a negative version", Write: row("", "-4", "'state'")},
		{Name: "a NULL version", Write: row("ALTER COLUMN version DROP NOT NULL", "NULL", "'state'")},
		{Name: "NULL data", Write: row("ALTER COLUMN data DROP NOT NULL", "7", "NULL")},
		{Name: "foreign bytes under a valid version", Write: row("", "12", "'\\x00ff666f726569676e'::bytea"), Readable: true},
	}
}

// BenchmarkStalls measures a Conversations trim per request with
// PostgreSQL healthy, answering after 2 s under a 300 ms deadline, hung,
// and dead (the store's Timeout is 500 ms).
//
//	HISTRIM_POSTGRES_DSN=... go test -run '^$' -bench Stalls -benchtime 100x
func BenchmarkStalls(b *testing.B) {
	d := dsn(b)
	cfg, err := pgx.ParseConfig(d)
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range storetest.Stalls() {
		b.Run(st.Name, func(b *testing.B) {
			storetest.BenchStalls(b, storetest.Backend{Name: "pgstore", Addr: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
				Open: func(t testing.TB, addr, ns string, ttl time.Duration) storetest.Stores {
					return open(t, d, addr, ns, ttl)
				}}, st, 500*time.Millisecond)
		})
	}
}

// TestSaveWithoutRecall: a state's save also writes the elided results
// waiting; when the server refuses those (here their table is gone), the
// state is saved all the same, and the results wait in memory.
func TestSaveWithoutRecall(t *testing.T) {
	d := dsn(t)
	cfg, _ := pgx.ParseConfig(d)
	ns := storetest.Namespace()
	s := open(t, d, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), ns, 0)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP TABLE "+pgx.Identifier{"histrim_test_" + ns + "_recall"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	convs := history.NewConversations(s, history.WithTrigger(0.6), history.WithLowWater(0.36),
		history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: 64, Store: s.Recall("")}), history.WithStepTrim())
	var states []string
	convs.OnState = func(_, state string) { states = append(states, state) }
	for _, req := range storetest.Requests(storetest.Session(12, 4)) {
		if _, err := convs.Trim(ctx, "conv", req, 3000); err != nil {
			var be *history.BudgetError
			if !errors.As(err, &be) {
				t.Fatal(err)
			}
		}
	}
	for i, st := range states[1:] {
		if st != history.StateLocal {
			t.Fatalf("request %d: state %q (states %v): the results' table kept the state from being saved", i+1, st, states)
		}
	}
	if err := s.Flush(ctx); err == nil {
		t.Fatal("the results were written to a table that is gone")
	}
}

// TestPurge: expired rows are never read, and Purge deletes them.
func TestPurge(t *testing.T) {
	d := dsn(t)
	cfg, _ := pgx.ParseConfig(d)
	// A TTL of a second: the live row must outlive the purge that follows
	// its save (at 200 ms it did not, under load).
	s := open(t, d, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), storetest.Namespace(), time.Second)
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		if _, err := s.Save(ctx, k, []byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ObserveShared(ctx, "m", 100, 120); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := s.Save(ctx, "c", []byte("c"), 0); err != nil {
		t.Fatal(err)
	}
	n, err := s.Purge(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Purge: %d rows, %v; want the 3 expired", n, err)
	}
	if _, v, err := s.Load(ctx, "c"); err != nil || v == 0 {
		t.Fatalf("a live row was purged: %d %v", v, err)
	}
}

func TestNewRefuses(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://127.0.0.1:1/x")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for _, tc := range []struct {
		opts   pgstore.Options
		reason string
	}{
		{pgstore.Options{RecallTTL: -time.Second}, "a negative TTL"},
		{pgstore.Options{Retention: time.Hour, StateTTL: time.Minute}, "a state that expires before the cache"},
		{pgstore.Options{Table: "a..b"}, "an empty name"},
		{pgstore.Options{StateTTL: 999 * time.Microsecond, Retention: time.Microsecond}, "a state TTL under a millisecond"},
		{pgstore.Options{RecallTTL: time.Nanosecond}, "a recall TTL of a nanosecond"},
		{pgstore.Options{Table: strings.Repeat("t", 62)}, "62 bytes: histrim_state and histrim_recall both truncate to the prefix and '_'"},
		{pgstore.Options{Table: strings.Repeat("t", 51)}, "51 bytes: the index histrim_calibration_expires truncates to the table histrim_calibration"},
		{pgstore.Options{Table: "agents." + strings.Repeat("t", 60)}, "a schema-qualified prefix whose table part collides"},
		{pgstore.Options{Table: strings.Repeat("s", 64) + ".histrim"}, "a schema name PostgreSQL would truncate"},
		{pgstore.Options{Table: strings.Repeat("é", 26)}, "52 bytes of two-byte runes, truncated on a rune"},
	} {
		if _, err := pgstore.New(pool, tc.opts); err == nil {
			t.Errorf("%s: no error", tc.reason)
		}
	}
	for _, tc := range []struct {
		opts   pgstore.Options
		reason string
	}{
		{pgstore.Options{Table: strings.Repeat("t", 50)}, "50 bytes: every name is truncated apart"},
		{pgstore.Options{Table: "agents." + strings.Repeat("t", 50)}, "the same, schema-qualified"},
		{pgstore.Options{Table: strings.Repeat("é", 25)}, "50 bytes of two-byte runes"},
		{pgstore.Options{StateTTL: time.Millisecond, Retention: time.Millisecond, RecallTTL: time.Millisecond, CalibrationTTL: time.Millisecond}, "TTLs of a millisecond"},
	} {
		if _, err := pgstore.New(pool, tc.opts); err != nil {
			t.Errorf("%s: %v", tc.reason, err)
		}
	}
	if _, err := pgstore.New(nil, pgstore.Options{}); err == nil {
		t.Error("a nil DB: no error")
	}
	if _, err := pgstore.New(pool, pgstore.Options{}); err != nil {
		t.Errorf("the zero Options: %v", err)
	}
}
