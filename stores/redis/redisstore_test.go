package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/histrim/history/internal/storekit/storetest"
	redisstore "github.com/histrim/history/stores/redis"
	"github.com/redis/go-redis/v9"
)

// addr returns the Redis the tests run against, or skips the test.
func addr(t testing.TB) string { return storetest.Server(t, "HISTRIM_REDIS_ADDR", "Redis") }

// open is a replica's Store: its own client to addr, its keys under ns.
func open(t testing.TB, addr, ns string, ttl time.Duration) *redisstore.Store {
	return openWith(t, &redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: time.Second, PoolSize: 4}, ns, ttl)
}

// recommended are the client options docs/replicas.md gives.
func recommended(addr string) *redis.Options {
	return &redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: 1, DialerRetries: 1, DialTimeout: 500 * time.Millisecond}
}

// openWith is open with the client options o.
func openWith(t testing.TB, o *redis.Options, ns string, ttl time.Duration) *redisstore.Store {
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	s, err := redisstore.New(rdb, redisstore.Options{Prefix: "histrim-test:" + ns + ":",
		Retention: ttl, StateTTL: ttl, RecallTTL: ttl, CalibrationTTL: ttl, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore(t *testing.T) {
	a := addr(t)
	storetest.Run(t, storetest.Backend{
		Name: "redisstore",
		Addr: a,
		Open: func(t testing.TB, addr, ns string, ttl time.Duration) storetest.Stores {
			return open(t, addr, ns, ttl)
		},
		Corruptions: corruptions(a),
		RecallWrites: func(s storetest.Stores) (int, int) {
			return redisstore.RecallWrites(s.(*redisstore.Store))
		},
		CorruptCalibration: func(t *testing.T, ns, model string) {
			rdb := redis.NewClient(&redis.Options{Addr: a})
			defer rdb.Close()
			if err := rdb.HSet(context.Background(), "histrim-test:"+ns+":calibration:"+model, "d", "{not json").Err(); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// corruptions are values under a state's or calibration's key that the
// store did not write.
func corruptions(addr string) []storetest.Corruption {
	write := func(f func(ctx context.Context, rdb *redis.Client, key string) error) func(t testing.TB, ns, space, key string) {
		return func(t testing.TB, ns, space, key string) {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
			ctx := context.Background()
			k := "histrim-test:" + ns + ":" + space + ":" + key
			if err := rdb.Del(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
			if err := f(ctx, rdb, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	hash := func(fields ...any) func(t testing.TB, ns, space, key string) {
		return write(func(ctx context.Context, rdb *redis.Client, k string) error { return rdb.HSet(ctx, k, fields...).Err() })
	}
	return []storetest.Corruption{
		{Name: "a non-integer version", Write: hash("v", "x1", "d", "state")},
		{Name: "version 0", Write: hash("v", "0", "d", "state")},
		{Name: "a negative version", Write: hash("v", "-3", "d", "state")},
		{Name: "a version with a leading zero", Write: hash("v", "07", "d", "state")},
		{Name: "a version over 64 bits", Write: hash("v", "99999999999999999999", "d", "state")},
		{Name: "a version without data", Write: hash("v", "5")},
		{Name: "data without a version", Write: hash("d", "state")},
		{Name: "a hash of other fields", Write: hash("owner", "someone else")},
		{Name: "a string", Write: write(func(ctx context.Context, rdb *redis.Client, k string) error {
			return rdb.Set(ctx, k, "foreign", 0).Err()
		})},
		{Name: "a list", Write: write(func(ctx context.Context, rdb *redis.Client, k string) error {
			return rdb.RPush(ctx, k, "a", "b").Err()
		})},
		{Name: "foreign bytes under a valid version", Write: hash("v", "12", "d", "\x00\xffforeign"), Readable: true},
	}
}

// BenchmarkStalls measures a Conversations trim per request with Redis
// healthy, answering after 2 s under a 300 ms deadline, hung, and dead
// (the store's Timeout is 500 ms), with go-redis's default options and with
// the options docs/replicas.md recommends: the store bounds every wait
// either way.
//
//	HISTRIM_REDIS_ADDR=... go test -run '^$' -bench Stalls -benchtime 100x
func BenchmarkStalls(b *testing.B) {
	a := addr(b)
	clients := []struct {
		name string
		opts func(addr string) *redis.Options
	}{
		{"defaults", func(addr string) *redis.Options { return &redis.Options{Addr: addr} }},
		{"recommended", recommended},
	}
	for _, c := range clients {
		for _, st := range storetest.Stalls() {
			b.Run(c.name+"/"+st.Name, func(b *testing.B) {
				storetest.BenchStalls(b, storetest.Backend{Name: "redisstore", Addr: a,
					Open: func(t testing.TB, addr, ns string, ttl time.Duration) storetest.Stores {
						return openWith(t, c.opts(addr), ns, ttl)
					}}, st, 500*time.Millisecond)
			})
		}
	}
}

func TestNewRefuses(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for _, tc := range []struct {
		opts   redisstore.Options
		reason string
	}{
		{redisstore.Options{StateTTL: -time.Second}, "a negative TTL"},
		{redisstore.Options{Retention: time.Hour, StateTTL: time.Minute}, "a state that expires before the cache"},
		{redisstore.Options{Retention: time.Microsecond, StateTTL: 999 * time.Microsecond}, "a state TTL under the millisecond PEXPIRE keeps"},
		{redisstore.Options{RecallTTL: time.Nanosecond}, "a recall TTL of a nanosecond"},
		{redisstore.Options{CalibrationTTL: 500 * time.Microsecond}, "a calibration TTL under a millisecond"},
	} {
		if _, err := redisstore.New(rdb, tc.opts); err == nil {
			t.Errorf("%s: no error", tc.reason)
		}
	}
	if _, err := redisstore.New(nil, redisstore.Options{}); err == nil {
		t.Error("a nil client: no error")
	}
	if _, err := redisstore.New(rdb, redisstore.Options{}); err != nil {
		t.Errorf("the zero Options: %v", err)
	}
}

// quiet drops go-redis's log lines (a dial refused, in the benchmarks).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }
