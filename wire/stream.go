package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
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
// lifecycle events back until the first other event, so that it can
// recover from such a refusal as from a 400 before a byte reaches the
// caller.

// Bounds of what a Transport holds back of a Responses stream: the
// lifecycle events that open it, at most maxHeldEvents of them in at most
// maxHeld bytes. Past either, what was held goes on and the rest passes
// through.
const (
	maxHeld       = 1 << 20
	maxHeldEvents = 4
)

// lifecycle reports whether an event of a Responses stream is one of
// those that open every stream, before it says anything of the input.
func lifecycle(typ string) bool {
	return typ == "response.created" || typ == "response.in_progress"
}

// holdStream reads resp's stream of server-sent events (a Responses
// stream) to the end of its first event that is not a lifecycle event,
// within maxHeld bytes and maxHeldEvents events, and returns resp with a
// body that gives every byte of the stream, those read first; and, when
// that first event is the stream's failure (an "error" or
// "response.failed" event), the failure as an error the core's
// classifier reads, else nil.
func holdStream(resp *http.Response) (*http.Response, error) {
	rest := resp.Body
	var (
		buf    []byte
		sc     sseScanner
		perr   error
		tail   io.Reader = rest
		chunk            = make([]byte, 32<<10)
		decide           = false
	)
	for !decide && len(buf) <= maxHeld {
		n, err := rest.Read(chunk)
		buf = append(buf, chunk[:n]...)
		typ, data, done := sc.scan(buf)
		if done {
			decide = true
			if typ == "error" || typ == "response.failed" {
				perr = streamFailure(resp.StatusCode, typ, data)
			}
		}
		if err != nil {
			if err != io.EOF {
				tail = errReader{err}
			} else {
				tail = eofReader{}
			}
			break
		}
	}
	resp.Body = readCloser{io.MultiReader(bytes.NewReader(buf), tail), rest}
	return resp, perr
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
