// Package wiretest holds what the loop tests of wire.Transport share (the
// adapters' codecs' loops and wire/sdktest's): a Transport for one model
// and the count of its events. It is a package of its own, not part of
// internal/adaptertest, because package wire's own tests import
// adaptertest, which therefore cannot import wire.
package wiretest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/histrim/history/models"
	"github.com/histrim/history/wire"
)

// Events counts a wire.Transport's request events (Kind EventRequest);
// On is the Transport's OnEvent. On is safe for concurrent use; read the
// fields once the requests are done.
type Events struct {
	mu sync.Mutex
	// Requests counts the request events; Trimmed and Forwarded those
	// that trimmed the body and that forwarded it untouched.
	Requests, Trimmed, Forwarded int
	// Overflows and Recovered sum the events' refusals for length and
	// the resends that followed them.
	Overflows, Recovered int
	// Errs are the events' errors, in order.
	Errs []error
}

// On counts ev if it is a request event.
func (e *Events) On(ev wire.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Kind != wire.EventRequest {
		return
	}
	e.Requests++
	if ev.Trimmed {
		e.Trimmed++
	}
	if ev.Forwarded {
		e.Forwarded++
	}
	if ev.Err != nil {
		e.Errs = append(e.Errs, ev.Err)
	}
	e.Overflows += ev.Overflows
	e.Recovered += ev.Recovered
}

// String is the counts as a line of a loop test's log.
func (e *Events) String() string {
	return fmt.Sprintf("transport: %d requests, %d trimmed, %d refused for length, %d resent",
		e.Requests, e.Trimmed, e.Overflows, e.Recovered)
}

// Check fails t unless the loop exercised the trim and recovered every
// refusal inside the Transport: no request forwarded untrimmed, at least
// minTrimmed trimmed, every refusal for length resent, and refused (the
// server's count of the requests it refused for length) equal to the
// refusals the Transport saw.
func (e *Events) Check(t testing.TB, minTrimmed, refused int) {
	t.Helper()
	if e.Forwarded > 0 || e.Trimmed < minTrimmed {
		t.Errorf("%d requests forwarded untrimmed, %d trimmed: the loop does not exercise the trim (errors %v)", e.Forwarded, e.Trimmed, e.Errs)
	}
	if e.Overflows != e.Recovered || refused != e.Overflows {
		t.Errorf("%d refusals for length, %d resent, the server refused %d", e.Overflows, e.Recovered, refused)
	}
}

// Transport is a wire.Transport whose events go to ev, with a silent
// logger, that knows one model: name, served by provider, its window
// window tokens (as models.Discover would learn it). Any other model is
// models.UnknownModelError.
func Transport(ev *Events, name, provider string, window int) *wire.Transport {
	return &wire.Transport{
		Models: func(_ context.Context, n string) (models.Model, error) {
			if n != name {
				return models.Model{}, &models.UnknownModelError{Name: n}
			}
			return models.Model{Name: n, Provider: provider, Window: window}, nil
		},
		OnEvent: ev.On, Logger: slog.New(slog.DiscardHandler),
	}
}
