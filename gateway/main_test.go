package gateway

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestMainExitStatus: Main exits as the serve commands document: 0 for -h and after a
// graceful shutdown, 2 for bad flags, settings or store schemes.
func TestMainExitStatus(t *testing.T) {
	cases := []struct {
		why  string
		args []string
		env  map[string]string
		want int
		says string
	}{
		{"help", []string{"-h"}, nil, 0, "-upstream"},
		{"an unknown flag", []string{"-nope"}, nil, 2, "flag provided but not defined"},
		{"an argument", []string{"extra"}, nil, 2, "unexpected arguments"},
		{"a bad variable", nil, map[string]string{"HISTRIM_UPSTREAM_TIMEOUT": "soon"}, 2, "HISTRIM_UPSTREAM_TIMEOUT"},
		{"an unregistered store", []string{"-addr", "127.0.0.1:0", "-store", "redis://localhost:6379"}, nil, 2, "no store is registered"},
		{"a bad upstream", []string{"-addr", "127.0.0.1:0", "-upstream", "localhost:8000"}, nil, 2, "want an http or https URL"},
		{"started, then stopped", []string{"-addr", "127.0.0.1:0"}, map[string]string{"HISTRIM_UPSTREAM": "http://127.0.0.1:1"}, 0, "gateway: stopped"},
	}
	for _, c := range cases {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a started gateway shuts down at once
		var stderr bytes.Buffer
		got := Main(ctx, "histrim serve", c.args, func(k string) string { return c.env[k] }, &stderr)
		if got != c.want || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", c.why, got, c.want, stderr.String())
		}
	}
}
