package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/histrim/history"
)

// chunks is a body that returns at most n bytes a Read, then err.
type chunks struct {
	b   []byte
	n   int
	err error
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, c.err
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

func (c *chunks) Close() error { return nil }

// held runs holdStream over stream, read n bytes at a time and ending in
// err, and returns what the caller then reads and the failure it saw.
func held(stream string, n int, end error) ([]byte, error, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Body: &chunks{b: []byte(stream), n: max(n, 1), err: end}}
	resp, h, err := holdStream(context.Background(), resp)
	if err != nil {
		return nil, nil, err
	}
	got, err := io.ReadAll(resp.Body)
	return got, h.failure, err
}

const (
	openingEvents = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n" +
		"event: response.in_progress\r\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":1}\r\n\r\n"
	overflowEvent = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model. Please adjust your input and try again.\",\"param\":\"input\"}}\n\n"
)

// TestHoldStream: what holdStream reads of a Responses stream and what
// the caller reads after it, each case with its reason.
func TestHoldStream(t *testing.T) {
	boom := errors.New("connection reset")
	cases := []struct {
		name, stream string
		end          error
		overflow     bool  // the failure is a context overflow
		err          error // what the caller's last Read returns
	}{
		{"the overflow after the opening, its type from the event field", openingEvents + overflowEvent, io.EOF, true, nil},
		{"the overflow, its type from the data alone", openingEvents + strings.Replace(overflowEvent, "event: error\n", "", 1), io.EOF, true, nil},
		{"response.failed: its response's error read, not the response it echoes",
			openingEvents + `data: {"type":"response.failed","response":{"instructions":"maximum context length","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}` + "\n\n", io.EOF, true, nil},
		{"response.failed for another reason: no overflow",
			openingEvents + `data: {"type":"response.failed","response":{"instructions":"maximum context length","error":{"code":"server_error","message":"boom"}}}` + "\n\n", io.EOF, false, nil},
		{"response.failed without an error: no failure read", openingEvents + `data: {"type":"response.failed","response":{"error":null}}` + "\n\n", io.EOF, false, nil},
		{"an output event first: passed on", openingEvents + "event: response.output_item.added\ndata: {}\n\n" + overflowEvent, io.EOF, false, nil},
		{"comments and ids are no event", ": keep-alive\n\nid: 1\n" + openingEvents + overflowEvent, io.EOF, true, nil},
		{"the stream ends in the opening: passed on, EOF", openingEvents, io.EOF, false, nil},
		{"the connection breaks in the opening: the bytes, then its error", openingEvents, boom, false, boom},
		{"more lifecycle events than are held: passed on", strings.Repeat(openingEvents, 3) + overflowEvent, io.EOF, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []int{1, 7, 1 << 20} {
				got, perr, err := held(c.stream, n, c.end)
				if string(got) != c.stream || !errors.Is(err, c.err) {
					t.Fatalf("read %d at a time: the caller read %q, %v; want the stream, %v", n, got, err, c.err)
				}
				if history.IsContextOverflow(perr) != c.overflow {
					t.Fatalf("read %d at a time: failure %v, want an overflow: %v", n, perr, c.overflow)
				}
			}
		})
	}
}

// FuzzHoldStream: whatever a stream's bytes and however they are read,
// holdStream never panics, and the caller reads every byte of the stream
// in order.
func FuzzHoldStream(f *testing.F) {
	f.Add([]byte(openingEvents+overflowEvent), 3)
	f.Add([]byte(openingEvents+"data: {\"type\":\"response.output_text.delta\"}\n\n"), 1)
	f.Add([]byte("event:\ndata\n\n\r\n:x\n"), 2)
	f.Fuzz(func(t *testing.T, stream []byte, n int) {
		resp := &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(iotest.HalfReader(&chunks{b: bytes.Clone(stream), n: max(n%64, 1), err: io.EOF}))}
		resp, _, err := holdStream(context.Background(), resp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, stream) {
			t.Fatalf("the caller read %q, %v; want %q", got, err, stream)
		}
	})
}
