package main

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/gateway"
)

// TestStoresByURL opens the stores histrim-gateway registers from their
// URLs, with the prefix or table parameter, against the real servers,
// and saves and loads a state through each.
func TestStoresByURL(t *testing.T) {
	register()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	cases := []struct {
		scheme, env string
	}{
		{"redis", "HISTRIM_REDIS_ADDR"},
		{"postgres", "HISTRIM_POSTGRES_DSN"},
	}
	for _, c := range cases {
		t.Run(c.scheme, func(t *testing.T) {
			v := os.Getenv(c.env)
			if v == "" {
				t.Skipf("%s is not set: no server (.ci/run starts one; by hand: source .ci/services && histrim_services_start)", c.env)
			}
			raw := v
			if c.scheme == "redis" {
				raw = "redis://" + v + "/0?prefix=histrim-gw-" + suffix + ":"
			} else {
				u, err := url.Parse(v)
				if err != nil {
					t.Fatal(err)
				}
				q := u.Query()
				q.Set("table", "histrim_gw_"+suffix)
				u.RawQuery = q.Encode()
				raw = u.String()
			}
			u, _ := url.Parse(raw)
			open := map[string]gateway.OpenStore{"redis": openRedis, "postgres": openPostgres}[c.scheme]
			st, err := open(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			defer st.(interface{ Close() error }).Close()
			ver, err := st.Save(context.Background(), "conv", []byte("state"), 0)
			if err != nil {
				t.Fatal(err)
			}
			got, gotVer, err := st.Load(context.Background(), "conv")
			if err != nil || string(got) != "state" || gotVer != ver {
				t.Fatalf("Load: %q %d %v, want state %d", got, gotVer, err, ver)
			}
			if _, err := st.Save(context.Background(), "conv", []byte("stale"), 0); err == nil {
				t.Error("a stale save was accepted")
			}
			var _ history.StateStore = st
		})
	}
	for _, bad := range []string{"redis://localhost:1/0?prefix=x&nosuch=1", "postgres://u@localhost:1/db?connect_timeout=1"} {
		u, _ := url.Parse(bad)
		open := openRedis
		if u.Scheme == "postgres" {
			open = openPostgres
		}
		if _, err := open(context.Background(), u); err == nil {
			t.Errorf("%s: opened", bad)
		}
	}
}
