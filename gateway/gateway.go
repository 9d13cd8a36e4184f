package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/models"
	"github.com/histrim/history/wire"
)

// Gateway is the reverse proxy: an http.Handler that forwards every request
// to the upstream through the trimming transport and answers /healthz and
// /metrics itself. Build it with [New]; it is safe for concurrent use.
type Gateway struct {
	s       settings
	store   history.StateStore
	rt      http.RoundTripper
	metrics *metrics
	log     *slog.Logger

	closeOnce sync.Once
	closeErr  error

	// onShutdown, when set, is called once a shutdown has begun (tests).
	onShutdown func()
}

// New returns the gateway cfg describes, its store opened; log receives one
// line per request (method, path, API, status, duration: never a header
// or a body) and the gateway's errors; nil discards them. It returns a
// *ConfigError for a setting it cannot use, and an error wrapping
// [ErrUnknownStore] for a store scheme no one registered. Close it when
// done.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Gateway, error) {
	s, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	store, err := openStore(ctx, s.store)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	base := s.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	g := &Gateway{s: s, store: store, metrics: newMetrics(), log: log}
	g.rt = g.transport(base)
	return g, nil
}

// transport returns what carries the requests: the trimming transport
// over the gateway's store, base below it, its events counted in the
// metrics and logged.
func (g *Gateway) transport(base http.RoundTripper) http.RoundTripper {
	t := &wire.Transport{
		Base:    base,
		Store:   g.store,
		OnEvent: g.metrics.event,
		OnState: func(_, state string) {
			if state == history.StateUnavailable {
				g.metrics.add(mStoreErrors, "", 1)
			}
			g.log.Debug("gateway: conversation state", "state", state)
		},
		Options: []history.Option{history.WithOnTrim(func(ev history.Event) {
			if ev.Rewritten > 0 && ev.State != history.StateNew {
				g.metrics.add(mRewrites, "", 1)
			}
		})},
		Logger: g.log,
	}
	if w := g.s.Window; w > 0 {
		t.Models = func(_ context.Context, name string) (models.Model, error) {
			m, err := models.Lookup(name)
			if err != nil {
				m = models.Model{Name: name}
			}
			// A model the operator describes, served by whatever runs
			// it: one that may cut a prompt silently (the transport
			// learns a smaller window from that), as a local server does.
			m.Window, m.Provider = w, "gateway"
			if m.Output >= w {
				m.Output = 0 // the request's own max tokens, or none
			}
			return m, nil
		}
	}
	return t
}

// Close stops the trimming transport's background work, closes its idle
// upstream connections and the store (when it has a Close method); it is
// safe to call more than once.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() {
		if c, ok := g.rt.(interface{ Close() error }); ok {
			g.closeErr = c.Close()
		}
		if c, ok := g.rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
		if c, ok := g.store.(interface{ Close() error }); ok {
			if err := c.Close(); g.closeErr == nil {
				g.closeErr = err
			}
		}
	})
	return g.closeErr
}

// ServeHTTP answers GET /healthz (200, "ok") and GET /metrics (the
// Prometheus text format) and forwards everything else.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
		return
	case "/metrics":
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		g.metrics.write(w)
		return
	}
	g.proxy(w, r)
}

// Serve serves the gateway on ln until ctx is done, then shuts down
// gracefully: it stops accepting, lets the requests in flight (streams
// included) finish for up to the ShutdownTimeout, then closes what is
// left, and returns nil. It returns the listener's error if serving
// fails before. It does not close the gateway.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: g.s.HeaderTimeout,
		IdleTimeout:       g.s.IdleTimeout,
		// No WriteTimeout: a stream lasts as long as the upstream's
		// answer, bounded by UpstreamTimeout.
		ErrorLog: slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	g.log.Info("gateway: shutting down", "wait", g.s.ShutdownTimeout.String())
	if g.onShutdown != nil {
		srv.RegisterOnShutdown(g.onShutdown)
	}
	sctx, cancel := context.WithTimeout(context.Background(), g.s.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		g.log.Warn("gateway: requests still in flight at the shutdown timeout were cut")
		err = srv.Close()
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Run opens the gateway cfg describes, listens on its Addr and serves it
// until ctx is done (see [Gateway.Serve]), then closes it.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	g, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer g.Close()
	ln, err := net.Listen("tcp", g.s.Addr)
	if err != nil {
		return err
	}
	up := "each API's public endpoint"
	if g.s.upstream != nil {
		up = g.s.upstream.Redacted()
	}
	g.log.Info("gateway: listening", "addr", ln.Addr().String(), "upstream", up, "store", g.s.store.Redacted())
	start := time.Now()
	err = g.Serve(ctx, ln)
	g.log.Info("gateway: stopped", "uptime", time.Since(start).Round(time.Second).String())
	return err
}
