package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// A Responses stream can refuse its input after it has begun: HTTP 200,
// the lifecycle events that open it, then the failure. As the API sends it
// (dyad-sh/dyad#1672, sequence_number 2; dyad-sh/dyad#2509, sequence_number
// 0), an event of type "error" whose nested error has the code
// context_length_exceeded, followed by response.failed (maximhq/bifrost#5040
// shows the pair for another failure); the ChatGPT Codex backend sends
// response.failed alone, its response.error.code context_length_exceeded
// (james-6-23/codex2api#310); openai-go's ResponseErrorEvent carries the
// code at the top of an error event. The Transport holds the opening
// lifecycle events back until the first other event (within the bounds
// below, time among them), so that it can recover from such a refusal as
// from a 400 before a byte reaches the caller.

// Bounds of what a Transport holds back of a Responses stream: the
// lifecycle events that open it, at most maxHeldEvents of them in at most
// maxHeld bytes, for at most holdBound after the response's headers. Past
// any of them, what was held goes on and the rest passes through.
//
// holdBound is two seconds because a refusal for length is decided before
// the model computes anything: it needs the input's count against the
// window, not the model's time to its first token (for a long input,
// seconds, which is what a stream's first other event waits for), and the
// reported streams send it as the next event after the opening. Two
// seconds leave that count and a slow network or a proxy between room for
// the refusal (a judgement: not measured against the API), and bound what
// the hold adds to the caller's wait for the headers when the model is
// slow to start or the upstream stalls, so that a caller's own timeout
// (http.Client.Timeout, ResponseHeaderTimeout) does not fire for the hold.
const (
	maxHeld       = 1 << 20
	maxHeldEvents = 4
	holdBound     = 2 * time.Second
)

// lifecycle reports whether an event of a Responses stream is one of
// those that open every stream, before it says anything of the input.
func lifecycle(typ string) bool {
	return typ == "response.created" || typ == "response.in_progress"
}

// hold is what holdStream saw of a stream: its failure, as an error the
// core's classifier reads (nil for none), and whether the hold ended at
// holdBound, before the stream's first event that is not a lifecycle
// event.
type hold struct {
	failure error
	expired bool
}

// holdStream reads resp's stream of server-sent events (a Responses
// stream) to the end of its first event that is not a lifecycle event,
// within maxHeld bytes, maxHeldEvents events and holdBound, and returns
// resp with a body that gives every byte of the stream once and in order,
// those read first (closing it closes resp's); and, when that first event
// is the stream's failure (an "error" or "response.failed" event), the
// failure. When ctx is done first, it closes resp's body and returns
// ctx's error.
//
// Each read of the hold runs in a goroutine of its own, which ends when
// the read returns: when the hold ends at holdBound with a read in
// flight, the body returned gives that read's bytes first, waiting for
// them, and reads resp's body itself after; closing the body ends the
// read in flight (as an http.Response's body does), and so its goroutine.
func holdStream(ctx context.Context, resp *http.Response) (*http.Response, hold, error) {
	rest := resp.Body
	var (
		buf   []byte
		sc    sseScanner
		h     hold
		tail  io.Reader = rest
		chunk           = make([]byte, 32<<10)
	)
	timer := time.NewTimer(holdBound)
	defer timer.Stop()
	for len(buf) <= maxHeld {
		pending := readAsync(rest, chunk)
		var r readResult
		select {
		case r = <-pending:
		case <-timer.C:
			h.expired = true
			tail = &pendingRead{ch: pending, rest: rest}
		case <-ctx.Done():
			_ = rest.Close()
			return nil, hold{}, ctx.Err()
		}
		if h.expired {
			break
		}
		buf = append(buf, r.b...)
		if r.err != nil {
			if ctx.Err() != nil { // the connection cut for the context (http.Transport)
				_ = rest.Close()
				return nil, hold{}, ctx.Err()
			}
			if r.err != io.EOF {
				tail = errReader{r.err}
			} else {
				tail = eofReader{}
			}
		}
		if typ, data, done := sc.scan(buf); done {
			if typ == "error" || typ == "response.failed" {
				h.failure = streamFailure(resp.StatusCode, typ, data)
			}
			break
		}
		if r.err != nil {
			break
		}
	}
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(buf), tail), rest}
	return resp, h, nil
}

// readResult is what one Read returned.
type readResult struct {
	b   []byte
	err error
}

// readAsync reads r into p in a goroutine of its own, which sends what
// the Read returned on the channel it returns (buffered: the goroutine
// ends when the Read returns, whether or not it is received) and ends.
// p is the goroutine's until then.
func readAsync(r io.Reader, p []byte) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		n, err := r.Read(p)
		ch <- readResult{p[:n], err}
	}()
	return ch
}

// pendingRead is the rest of a stream whose hold ended with a read in
// flight: that read's bytes and error (waited for), then rest.
type pendingRead struct {
	ch   <-chan readResult
	r    readResult
	rest io.Reader
}

func (p *pendingRead) Read(b []byte) (int, error) {
	if p.ch != nil {
		p.r = <-p.ch
		p.ch = nil
	}
	if len(p.r.b) > 0 {
		n := copy(b, p.r.b)
		p.r.b = p.r.b[n:]
		return n, nil
	}
	if p.r.err != nil {
		return 0, p.r.err
	}
	return p.rest.Read(b)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// sseScanner reads the events of a stream of server-sent events as its
// bytes come, line by line.
type sseScanner struct {
	off    int    // where the next line starts
	typ    string // the event's type so far (its event: field)
	data   []byte // the event's data so far
	any    bool   // the event has a field
	events int    // the lifecycle events read
}

// scan reads the complete lines of b from where it stopped and returns
// the first event that is not a lifecycle event, its type (the event:
// field, else the data's "type") and data, with done set; lifecycle
// events are counted and passed over, and done is set with no event
// past maxHeldEvents of them.
func (s *sseScanner) scan(b []byte) (typ string, data []byte, done bool) {
	for {
		i := bytes.IndexByte(b[s.off:], '\n')
		if i < 0 {
			return "", nil, false
		}
		line := bytes.TrimSuffix(b[s.off:s.off+i], []byte{'\r'})
		s.off += i + 1
		if len(line) == 0 {
			if !s.any {
				continue
			}
			typ, data = s.typ, s.data
			if typ == "" {
				var v struct {
					Type string `json:"type"`
				}
				_ = json.Unmarshal(data, &v)
				typ = v.Type
			}
			s.typ, s.data, s.any = "", nil, false
			if !lifecycle(typ) {
				return typ, data, true
			}
			if s.events++; s.events > maxHeldEvents {
				return "", nil, true
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(name) {
		case "event":
			s.typ, s.any = string(value), true
		case "data":
			if s.data != nil {
				s.data = append(s.data, '\n')
			}
			s.data, s.any = append(s.data, value...), true
		}
	}
}

// streamFailure returns a Responses stream's failure event (of type typ,
// data its data) as the core's classifier reads the API's 400 body: an
// "error" event as it came (its nested error, or the code and message at
// its top), a "response.failed" event as the body {"error": its
// response's error}; nil for a response.failed without an error.
func streamFailure(status int, typ string, data []byte) error {
	if typ == "response.failed" {
		var v struct {
			Response struct {
				Error json.RawMessage `json:"error"`
			} `json:"response"`
		}
		if json.Unmarshal(data, &v) != nil || len(v.Response.Error) == 0 || string(v.Response.Error) == "null" {
			return nil
		}
		data = append(append([]byte(`{"error":`), v.Response.Error...), '}')
	}
	return &upstreamError{StatusCode: status, Body: string(data)}
}
