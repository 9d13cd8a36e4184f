package pgstore_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

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
		Open: func(t *testing.T, addr, ns string, ttl time.Duration) storetest.Stores {
			return open(t, d, addr, ns, ttl)
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

// TestPurge: expired rows are never read, and Purge deletes them.
func TestPurge(t *testing.T) {
	d := dsn(t)
	cfg, _ := pgx.ParseConfig(d)
	s := open(t, d, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), storetest.Namespace(), 200*time.Millisecond)
	ctx := context.Background()
	for _, k := range []string{"a", "b"} {
		if _, err := s.Save(ctx, k, []byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ObserveShared(ctx, "m", 100, 120); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
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
	} {
		if _, err := pgstore.New(pool, tc.opts); err == nil {
			t.Errorf("%s: no error", tc.reason)
		}
	}
	if _, err := pgstore.New(nil, pgstore.Options{}); err == nil {
		t.Error("a nil DB: no error")
	}
	if _, err := pgstore.New(pool, pgstore.Options{}); err != nil {
		t.Errorf("the zero Options: %v", err)
	}
}
