// Package wiretest holds what the tests of wire.Transport with a
// provider's codec share (the adapters' codecs' and wire/sdktest's): a
// Transport for one model and the count of its events for the loops, the
// upstream that refuses a body over the window for the recovery, the
// rules' cases and the codecs' fuzz input (Codec). It is a package of its
// own, not part of internal/adaptertest, because package wire's own tests
// import adaptertest, which therefore cannot import wire.
package wiretest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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

// Overflow is an upstream that refuses, with the provider's 400 body, every
// request whose body is over Limit bytes, behind a Transport that believes
// the model's window is Window tokens (far larger, so that its first
// request is refused).
type Overflow struct {
	// Path is the request's path; Body its body.
	Path, Body string
	// Limit is the size, in bytes, of the largest body the upstream takes.
	Limit int
	// Refusal is the provider's 400 body for a request over its window;
	// OK the body of a 200; ContentType the responses' content type.
	Refusal, OK, ContentType string
	// Provider and Window are the model's, as the Transport's Models
	// gives it for any name.
	Provider string
	Window   int
}

// Run sends o.Body through a Transport to o's upstream and checks what the
// Transport's recovery must guarantee: the caller sees wantStatus, and,
// when that is not 200, the provider's own body; 2 to
// wire.DefaultMaxRetries+1 requests were sent, each resend smaller than
// the body refused before it and passing check (what the codec must keep
// of the body); the request's Event counts len(sent)-1 resends. It returns
// the Event and how many requests were sent.
func (o Overflow) Run(t *testing.T, wantStatus int, check func(t *testing.T, sent []byte)) (wire.Event, int) {
	t.Helper()
	var mu sync.Mutex
	var sent [][]byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent = append(sent, b)
		mu.Unlock()
		w.Header().Set("Content-Type", o.ContentType)
		if len(b) > o.Limit {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, o.Refusal)
			return
		}
		_, _ = io.WriteString(w, o.OK)
	}))
	defer up.Close()
	var ev wire.Event
	tr := &wire.Transport{Logger: slog.New(slog.DiscardHandler),
		Models: func(_ context.Context, name string) (models.Model, error) {
			return models.Model{Name: name, Provider: o.Provider, Window: o.Window}, nil
		},
		OnEvent: func(e wire.Event) { ev = e }}
	req, _ := http.NewRequest(http.MethodPost, up.URL+o.Path, strings.NewReader(o.Body))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != wantStatus {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, wantStatus, got)
	}
	if wantStatus != http.StatusOK && string(got) != o.Refusal {
		t.Fatalf("the caller got %s, want the provider's body", got)
	}
	if len(sent) < 2 || len(sent) > wire.DefaultMaxRetries+1 {
		t.Fatalf("%d requests sent, want 2 to %d", len(sent), wire.DefaultMaxRetries+1)
	}
	for i := 1; i < len(sent); i++ {
		if len(sent[i]) >= len(sent[i-1]) {
			t.Fatalf("resend %d (%d bytes) not smaller than what was refused (%d bytes)", i, len(sent[i]), len(sent[i-1]))
		}
		check(t, sent[i])
	}
	if ev.Recovered != len(sent)-1 {
		t.Fatalf("event counts %d resends for %d requests", ev.Recovered, len(sent))
	}
	return ev, len(sent)
}

// Upstream is an upstream that answers every request with OK (a small
// JSON response), behind a Transport that knows the model Model ("": any
// name) of Provider, its window Window tokens.
type Upstream struct {
	Model, Provider string
	Window          int
	OK              string
}

// Send sends body to path through u's Transport and returns what the
// upstream received and the request's Event.
func (u Upstream) Send(t testing.TB, path, body string) ([]byte, wire.Event) {
	t.Helper()
	var got []byte
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, u.OK)
	}))
	defer up.Close()
	var ev wire.Event
	tr := &wire.Transport{Logger: slog.New(slog.DiscardHandler),
		Models: func(_ context.Context, name string) (models.Model, error) {
			if u.Model != "" && name != u.Model {
				return models.Model{}, &models.UnknownModelError{Name: name}
			}
			return models.Model{Name: name, Provider: u.Provider, Window: u.Window}, nil
		},
		OnEvent: func(e wire.Event) {
			if e.Kind == wire.EventRequest {
				ev = e
			}
		}}
	req, _ := http.NewRequest(http.MethodPost, up.URL+path, strings.NewReader(body))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return got, ev
}

// Rule checks what a body sent through a Transport became: with
// forwarded set (the Event's Err when the body must go untouched), that
// it went as it came, the Event saying so; otherwise that the Event has
// neither, and then check.
func Rule(t *testing.T, body string, sent []byte, ev wire.Event, forwarded error, check func(t *testing.T, sent []byte, ev wire.Event)) {
	t.Helper()
	if forwarded != nil {
		if string(sent) != body || !ev.Forwarded || !errors.Is(ev.Err, forwarded) {
			t.Fatalf("want the body forwarded untouched for %v; event %+v", forwarded, ev)
		}
		return
	}
	if ev.Forwarded || ev.Err != nil {
		t.Fatalf("event %+v", ev)
	}
	check(t, sent, ev)
}
