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
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, DialTimeout: time.Second, PoolSize: 4})
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
		Open: func(t *testing.T, addr, ns string, ttl time.Duration) storetest.Stores {
			return open(t, addr, ns, ttl)
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

func TestNewRefuses(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for _, tc := range []struct {
		opts   redisstore.Options
		reason string
	}{
		{redisstore.Options{StateTTL: -time.Second}, "a negative TTL"},
		{redisstore.Options{Retention: time.Hour, StateTTL: time.Minute}, "a state that expires before the cache"},
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
