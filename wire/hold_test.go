//go:build go1.25

package wire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/wireapi"
)

// The time bound on the hold of a Responses stream's opening, tested in a
// synctest bubble: time is the bubble's (it moves only when every
// goroutine of the test waits), so a stall of an hour takes no time and
// each instant is exact; and synctest.Test fails when a goroutine of the
// bubble is left blocked at the end (a reader the Transport left behind).

// stall is a delay of a part of a scripted stream that never ends: the
// upstream stays silent until its body is closed.
const stall = time.Duration(-1)

// part is what a scripted upstream sends after a delay from the part
// before it (from the response's headers for the first).
type part struct {
	after time.Duration
	data  string // broken: the connection breaks (errBroken)
}

// broken is the data of a part where the upstream's connection breaks.
const broken = "\x00broken"

// scripted is an upstream answering each request with a Responses stream
// (HTTP 200, text/event-stream) whose bytes come as its script says: the
// n-th request (from 1) gets script(n). With ctx set it ends the body
// when the request's context is done, as http.Transport does.
type scripted struct {
	script func(n int) []part
	ctx    bool

	mu     sync.Mutex
	n      int
	bodies []*scriptBody
}

// scriptBody is the body of one scripted answer.
type scriptBody struct {
	*io.PipeReader
	once   sync.Once
	done   chan struct{}
	closed bool // Close was called
}

func (b *scriptBody) Close() error {
	b.once.Do(func() { b.closed = true; close(b.done) })
	return b.PipeReader.Close()
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	s.mu.Lock()
	s.n++
	parts := s.script(s.n)
	pr, pw := io.Pipe()
	body := &scriptBody{PipeReader: pr, done: make(chan struct{})}
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if s.ctx {
		context.AfterFunc(req.Context(), func() { pw.CloseWithError(req.Context().Err()) })
	}
	go func() {
		defer pw.Close()
		for _, p := range parts {
			if p.after == stall {
				<-body.done
				return
			}
			select {
			case <-time.After(p.after):
			case <-body.done:
				return
			}
			if p.data == broken {
				pw.CloseWithError(errBroken)
				return
			}
			if _, err := io.WriteString(pw, p.data); err != nil {
				return
			}
		}
	}()
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: body, Request: req}, nil
}

// requests returns the requests the upstream answered, and whether the
// body of each was closed.
func (s *scripted) requests() (int, []bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	closed := make([]bool, len(s.bodies))
	for i, b := range s.bodies {
		closed[i] = b.closed
	}
	return s.n, closed
}

// registerTestResponses makes the Transport read Responses requests for
// the test, with the chat conversion: the test's input items are
// {"role","content"} messages, which both APIs read alike (the package's
// own tests cannot import adapters/responses, which registers the real
// codec).
func registerTestResponses(t *testing.T) {
	wireapi.Register(Responses.String(), adapt.Raw(chatCodec,
		func(json.RawMessage) (struct{}, error) { return struct{}{}, nil },
		func(b json.RawMessage) json.RawMessage { return b },
		func(u *json.RawMessage) ([]byte, error) { return *u, nil }))
	t.Cleanup(func() { wireapi.Register(Responses.String(), nil) })
}

// responsesBody is a streamed Responses request of turns user and
// assistant messages of words words each.
func responsesBody(turns, words int) string {
	var b strings.Builder
	b.WriteString(`{"model":"m","stream":true,"input":[`)
	for i := range turns {
		if i > 0 {
			b.WriteString(",")
		}
		text := strings.Repeat("word ", words)
		b.WriteString(`{"role":"user","content":"` + text + `"},{"role":"assistant","content":"` + text + `"}`)
	}
	b.WriteString(`,{"role":"user","content":"now"}]}`)
	return b.String()
}

const (
	createdEvent    = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n"
	inProgressEvent = "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1}\n\n"
	outputEvent     = "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":2}\n\n"
	completedEvent  = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3}\n\n"
)

var errBroken = errors.New("connection reset by peer")

// TestHoldBound: the Transport holds a Responses stream's opening
// lifecycle events for at most holdBound after the response's headers;
// past it, RoundTrip returns what it held and the stream passes through as
// it comes, exactly once and in order, a refusal included. Each case with
// its reason.
func TestHoldBound(t *testing.T) {
	answered := []part{{0, createdEvent + inProgressEvent}, {time.Second, outputEvent + completedEvent}}
	cases := []struct {
		name   string
		script func(n int) []part
		ctx    bool // the upstream ends its body when the request's context is done, as http.Transport does

		cancelAt time.Duration // cancel the request's context this long after it was sent (0: never)
		closeAt  time.Duration // the caller closes the body this long after RoundTrip returned, without reading (0: it reads to the end)

		wantAt       time.Duration // when RoundTrip returns
		wantErr      error         // RoundTrip's error
		wantRequests int
		want         string // what the caller reads
		readErr      error  // the error its last read returns (nil: EOF)
		expired      bool   // Event.HoldExpired
		recovered    int    // Event.Recovered
	}{
		{"an output event within the bound: released by it, as before the bound",
			func(int) []part {
				return []part{{0, createdEvent}, {300 * time.Millisecond, inProgressEvent + outputEvent}, {time.Minute, completedEvent}}
			},
			false, 0, 0,
			300 * time.Millisecond, nil, 1, createdEvent + inProgressEvent + outputEvent + completedEvent, nil, false, 0},
		{"a stall after response.created (a model slow to start): released at the bound with what was held, the rest as it comes",
			func(int) []part {
				return []part{{0, createdEvent}, {time.Hour, inProgressEvent + outputEvent + completedEvent}}
			},
			false, 0, 0,
			holdBound, nil, 1, createdEvent + inProgressEvent + outputEvent + completedEvent, nil, true, 0},
		{"a stall after response.in_progress, its bytes split across reads: released at the bound, each byte once, in order",
			func(int) []part {
				return []part{{0, createdEvent + inProgressEvent[:10]}, {time.Millisecond, inProgressEvent[10:]}, {time.Hour, outputEvent[:7]}, {time.Minute, outputEvent[7:] + completedEvent}}
			},
			false, 0, 0,
			holdBound, nil, 1, createdEvent + inProgressEvent + outputEvent + completedEvent, nil, true, 0},
		{"headers and no event at all: released at the bound",
			func(int) []part { return []part{{time.Hour, createdEvent + inProgressEvent + outputEvent}} },
			false, 0, 0,
			holdBound, nil, 1, createdEvent + inProgressEvent + outputEvent, nil, true, 0},
		{"the refusal before the bound: recovered, the caller reads the resend's stream",
			func(n int) []part {
				if n == 1 {
					return []part{{0, createdEvent + inProgressEvent}, {holdBound - time.Millisecond, overflowEvent}, {0, "event: response.failed\ndata: {}\n\n"}}
				}
				return answered
			},
			false, 0, 0,
			holdBound - time.Millisecond + time.Second, nil, 2, createdEvent + inProgressEvent + outputEvent + completedEvent, nil, false, 1},
		{"the refusal after the bound: passed through as the upstream sent it, no resend",
			func(int) []part {
				return []part{{0, createdEvent + inProgressEvent}, {holdBound + time.Millisecond, overflowEvent}}
			},
			false, 0, 0,
			holdBound, nil, 1, createdEvent + inProgressEvent + overflowEvent, nil, true, 0},
		{"a stall, then the connection breaks: released at the bound, the caller reads what was held, then the error",
			func(int) []part { return []part{{0, createdEvent}, {time.Hour, broken}} },
			false, 0, 0,
			holdBound, nil, 1, createdEvent, errBroken, true, 0},
		{"the body closed while the upstream is silent: the upstream's body closed, no reader left",
			func(int) []part { return []part{{0, createdEvent}, {stall, ""}} },
			false, 0, time.Minute,
			holdBound, nil, 1, "", nil, true, 0},
		{"the context cancelled while held, an upstream that ignores it: RoundTrip returns its error then, the upstream's body closed",
			func(int) []part { return []part{{0, createdEvent}, {stall, ""}} },
			false, 500 * time.Millisecond, 0,
			500 * time.Millisecond, context.Canceled, 1, "", nil, false, 0},
		{"the context cancelled while held, an upstream that ends its body for it (http.Transport): RoundTrip returns its error",
			func(int) []part { return []part{{0, createdEvent}, {stall, ""}} },
			true, 500 * time.Millisecond, 0,
			500 * time.Millisecond, context.Canceled, 1, "", nil, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			registerTestResponses(t)
			synctest.Test(t, func(t *testing.T) {
				up := &scripted{script: c.script, ctx: c.ctx}
				var evs []Event
				var mu sync.Mutex
				tr := &Transport{Base: up, Models: fixedModel(100_000), Logger: quiet(), OnEvent: func(e Event) { mu.Lock(); evs = append(evs, e); mu.Unlock() }}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if c.cancelAt > 0 {
					time.AfterFunc(c.cancelAt, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://upstream.test/v1/responses", strings.NewReader(responsesBody(12, 200)))
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				if at := time.Since(start); at != c.wantAt {
					t.Errorf("RoundTrip returned after %v, want %v", at, c.wantAt)
				}
				if !errors.Is(err, c.wantErr) || (err != nil) != (c.wantErr != nil) {
					t.Fatalf("RoundTrip: %v, want %v", err, c.wantErr)
				}
				if err == nil {
					if c.closeAt > 0 {
						time.Sleep(c.closeAt) // the caller's pace: the bubble's clock
						if err := resp.Body.Close(); err != nil {
							t.Fatal(err)
						}
					} else {
						got, err := io.ReadAll(resp.Body)
						if !errors.Is(err, c.readErr) || (err != nil) != (c.readErr != nil) || string(got) != c.want {
							t.Errorf("the caller read %q, %v; want %q, %v", got, err, c.want, c.readErr)
						}
						_ = resp.Body.Close()
					}
				}
				synctest.Wait()
				n, closed := up.requests()
				if n != c.wantRequests {
					t.Errorf("the upstream answered %d requests, want %d", n, c.wantRequests)
				}
				for i, cl := range closed {
					if !cl {
						t.Errorf("the body of answer %d was not closed", i+1)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if len(evs) != 1 {
					t.Fatalf("%d events, want 1", len(evs))
				}
				if ev := evs[0]; ev.HoldExpired != c.expired || ev.Recovered != c.recovered || ev.StreamOverflows != c.recovered {
					t.Errorf("event: hold expired %v, %d recovered, %d stream overflows; want %v, %d, %d", ev.HoldExpired, ev.Recovered, ev.StreamOverflows, c.expired, c.recovered, c.recovered)
				}
			})
		})
	}
}

// TestHoldBoundCloseDuringRead: a caller blocked reading a stream the
// hold released while the upstream is silent (the read in flight when
// the bound passed), and another goroutine closing the body: the read
// ends, and no goroutine is left.
func TestHoldBoundCloseDuringRead(t *testing.T) {
	registerTestResponses(t)
	synctest.Test(t, func(t *testing.T) {
		up := &scripted{script: func(int) []part { return []part{{0, createdEvent}, {stall, ""}} }}
		tr := &Transport{Base: up, Models: fixedModel(100_000), Logger: quiet()}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://upstream.test/v1/responses", strings.NewReader(responsesBody(2, 10)))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(createdEvent))
		if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != createdEvent {
			t.Fatalf("read %q, %v", buf, err)
		}
		readErr := make(chan error, 1)
		go func() {
			_, err := resp.Body.Read(buf)
			readErr <- err
		}()
		synctest.Wait() // the read waits on the silent upstream
		select {
		case err := <-readErr:
			t.Fatalf("the read returned %v before the upstream sent anything", err)
		default:
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-readErr; err == nil {
			t.Error("the read of a closed body returned no error")
		}
		if _, closed := up.requests(); !closed[0] {
			t.Error("the upstream's body was not closed")
		}
	})
}

// FuzzHoldBound: whatever a stream's bytes and however they come in time
// (each piece of n bytes after a delay of 0 to 1.27 s from the one
// before: some before the bound, some after), the caller of holdStream
// reads every byte of the stream once and in order, and no goroutine is
// left when it has read them.
func FuzzHoldBound(f *testing.F) {
	f.Add([]byte(createdEvent+inProgressEvent+outputEvent), 9, []byte{0, 3, 200, 1})
	f.Add([]byte(createdEvent+inProgressEvent+overflowEvent), 40, []byte{0, 127, 127})
	f.Add([]byte(openingEvents+overflowEvent), 1, []byte{1})
	f.Fuzz(func(t *testing.T, stream []byte, n int, delays []byte) {
		n = max(n%256, 1)
		var parts []part
		for i := 0; i < len(stream); i += n {
			d := time.Duration(0)
			if k := i / n; k < len(delays) {
				d = time.Duration(delays[k]&127) * 10 * time.Millisecond
			}
			parts = append(parts, part{d, string(stream[i:min(i+n, len(stream))])})
		}
		synctest.Test(t, func(t *testing.T) {
			up := &scripted{script: func(int) []part { return parts }}
			req, _ := http.NewRequest(http.MethodPost, "http://upstream.test/v1/responses", http.NoBody)
			resp, _ := up.RoundTrip(req)
			resp, _, err := holdStream(t.Context(), resp)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil || string(got) != string(stream) {
				t.Fatalf("the caller read %q, %v; want %q", got, err, stream)
			}
		})
	})
}
