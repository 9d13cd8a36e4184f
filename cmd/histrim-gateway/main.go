// Command histrim-gateway is histrim's gateway (`histrim serve`, package
// gateway of github.com/histrim/history) with the state stores that
// replicas share: besides memory:, a Redis (redis://[user:password@]host:port[/db],
// rediss:// for TLS; go-redis's URL options) or a PostgreSQL
// (postgres://user:password@host:port/db?sslmode=..., pgx's pool options)
// named by -store or HISTRIM_STORE; the query parameter prefix (Redis) or
// table (PostgreSQL) names the store's keys or tables, for several
// gateways with different settings on one server. Every replica behind a load balancer
// given the same store trims each conversation as one gateway would.
//
// Besides the APIs `histrim serve` trims (Chat Completions and the
// compatible servers, Anthropic Messages), it trims OpenAI Responses
// requests (/v1/responses) with the rules of the responses adapter
// (github.com/histrim/history/adapters/responses, which needs openai-go)
// and Gemini requests (.../models/{model}:generateContent and
// :streamGenerateContent) with the rules of the gemini adapter
// (github.com/histrim/history/adapters/gemini, which needs
// google.golang.org/genai); neither is in the core module, and
// `histrim serve` forwards those requests untouched.
//
// Usage:
//
//	histrim-gateway [-addr ADDR] [-upstream URL] [-store URL] [...]
//
// The flags and variables are the gateway's (histrim-gateway -h, and
// docs/gateway.md). The PostgreSQL tables are created when missing.
package main

import (
	"context"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/histrim/history"
	hgemini "github.com/histrim/history/adapters/gemini"
	hresponses "github.com/histrim/history/adapters/responses"
	"github.com/histrim/history/gateway"
	pgstore "github.com/histrim/history/stores/postgres"
	redisstore "github.com/histrim/history/stores/redis"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

func main() {
	register()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(gateway.Main(ctx, "histrim-gateway", os.Args[1:], os.Getenv, os.Stderr))
}

// register registers the redis://, rediss://, postgres:// and postgresql://
// stores with the gateway, and the responses and gemini adapters' codecs
// with the trimming transport.
func register() {
	hresponses.RegisterWire()
	hgemini.RegisterWire()
	gateway.RegisterStore("redis", openRedis)
	gateway.RegisterStore("rediss", openRedis)
	gateway.RegisterStore("postgres", openPostgres)
	gateway.RegisterStore("postgresql", openPostgres)
}

// redisStore is a Redis store and its client, which Close closes. The
// store's own methods (the shared Calibration's among them) are its.
type redisStore struct {
	*redisstore.Store
	rdb *redis.Client
}

// Close closes the client's connections.
func (s redisStore) Close() error { return s.rdb.Close() }

// pgStore is a PostgreSQL store and its pool, which Close closes.
type pgStore struct {
	*pgstore.Store
	pool *pgxpool.Pool
}

// Close closes the pool's connections.
func (s pgStore) Close() error { s.pool.Close(); return nil }

// histrimParam removes the query parameter name from u and returns its
// value: the store's own setting, which the driver would not accept.
func histrimParam(u *url.URL, name string) (*url.URL, string) {
	c := *u
	q := c.Query()
	v := q.Get(name)
	q.Del(name)
	c.RawQuery = q.Encode()
	return &c, v
}

// openRedis opens a redis:// or rediss:// store; its query parameter
// prefix sets redisstore's key prefix (default "histrim:").
func openRedis(ctx context.Context, u *url.URL) (history.StateStore, error) {
	u, prefix := histrimParam(u, "prefix")
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, err
	}
	s, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
	if err != nil {
		rdb.Close()
		return nil, err
	}
	return redisStore{s, rdb}, nil
}

// openPostgres opens a postgres:// or postgresql:// store, creating its
// tables when missing; its query parameter table sets pgstore's table
// prefix (default "histrim").
func openPostgres(ctx context.Context, u *url.URL) (history.StateStore, error) {
	u, table := histrimParam(u, "table")
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		return nil, err
	}
	s, err := pgstore.New(pool, pgstore.Options{Table: table})
	if err == nil {
		err = s.CreateTables(ctx)
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return pgStore{s, pool}, nil
}
