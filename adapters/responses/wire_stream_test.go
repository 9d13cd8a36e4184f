package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history/models"
	hwire "github.com/histrim/history/wire"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// The Responses API refuses a streamed input over the window inside the
// stream: HTTP 200, the lifecycle events, then its failure. The shapes
// users reported:
//
//   - streamError: an "error" event whose nested error carries the code,
//     after response.created and response.in_progress (dyad-sh/dyad#1672:
//     sequence_number 2), followed by response.failed, as the API ends a
//     stream it failed (maximhq/bifrost#5040);
//   - streamFailed: response.failed alone, its response.error the code
//     (james-6-23/codex2api#310, the ChatGPT Codex backend);
//   - streamFlat: an "error" event with the code at its top, the shape of
//     openai-go's ResponseErrorEvent;
//   - streamFirst: the "error" event with no lifecycle event before it
//     (dyad-sh/dyad#2509: sequence_number 0).
const (
	streamError = iota + 1
	streamFailed
	streamFlat
	streamFirst
)

// overflowMessage is the API's message for an input over the window.
const overflowMessage = "Your input exceeds the context window of this model. Please adjust your input and try again."

// sseEvent is one server-sent event as the API writes it.
func sseEvent(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }

// streamedResponse is the response object of the n-th answer with status
// status, as the stream's events carry it; instructions is its echo of the
// request's instructions.
func streamedResponse(n int, status, output, errObj, usage, instructions string) string {
	return fmt.Sprintf(`{"id":"resp_%d","object":"response","created_at":1764300000,"status":%q,"error":%s,"incomplete_details":null,"instructions":%q,"max_output_tokens":null,"model":"o4-mini","output":%s,"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":"medium","summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":%s,"metadata":{}}`,
		n, status, errObj, instructions, output, usage)
}

// streamOpening is the lifecycle events that open the n-th answer.
func streamOpening(n int, instructions string) string {
	r := streamedResponse(n, "in_progress", "[]", "null", "null", instructions)
	return sseEvent("response.created", `{"type":"response.created","sequence_number":0,"response":`+r+`}`) +
		sseEvent("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":`+r+`}`)
}

// streamRest is what follows the opening of the n-th answer: a message
// and response.completed, its usage the input's count (one token per four
// bytes of the body).
func streamRest(n, bodyLen int, instructions string) string {
	msg := fmt.Sprintf(`"msg_%d"`, n)
	item := `{"id":` + msg + `,"type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Fixed."}],"role":"assistant"}`
	usage := fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, bodyLen/4, bodyLen/4+3)
	return sseEvent("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":`+msg+`,"type":"message","status":"in_progress","content":[],"role":"assistant"}}`) +
		sseEvent("response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":`+msg+`,"output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}`) +
		sseEvent("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"item_id":`+msg+`,"output_index":0,"content_index":0,"delta":"Fixed."}`) +
		sseEvent("response.output_text.done", `{"type":"response.output_text.done","sequence_number":5,"item_id":`+msg+`,"output_index":0,"content_index":0,"text":"Fixed."}`) +
		sseEvent("response.content_part.done", `{"type":"response.content_part.done","sequence_number":6,"item_id":`+msg+`,"output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"Fixed."}}`) +
		sseEvent("response.output_item.done", `{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":`+item+`}`) +
		sseEvent("response.completed", `{"type":"response.completed","sequence_number":8,"response":`+streamedResponse(n, "completed", "["+item+"]", "null", usage, instructions)+`}`)
}

// streamRefusal is the n-th answer refusing its input, in shape.
func streamRefusal(n, shape int, instructions string) string {
	nested := `{"type":"error","sequence_number":%d,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"` + overflowMessage + `","param":"input"}}`
	failed := func(seq int) string {
		r := streamedResponse(n, "failed", "[]", `{"code":"context_length_exceeded","message":"`+overflowMessage+`"}`, "null", instructions)
		return sseEvent("response.failed", fmt.Sprintf(`{"type":"response.failed","sequence_number":%d,"response":%s}`, seq, r))
	}
	switch shape {
	case streamFailed:
		return streamOpening(n, instructions) + failed(2)
	case streamFlat:
		return streamOpening(n, instructions) + sseEvent("error", `{"type":"error","sequence_number":2,"code":"context_length_exceeded","message":"`+overflowMessage+`","param":"input"}`)
	case streamFirst:
		return sseEvent("error", fmt.Sprintf(nested, 0))
	}
	return streamOpening(n, instructions) + sseEvent("error", fmt.Sprintf(nested, 2)) + failed(3)
}

// streamUp is a Responses endpoint that streams every answer as the API
// does, and refuses inside the stream (HTTP 200) an input whose body is
// over limit bytes.
type streamUp struct {
	limit, shape int
	// instructions is what each response object echoes of the request's
	// instructions (a long one makes the opening events long).
	instructions string
	// read, when set, is closed by the client side once it has read the
	// first answer's opening events: the server writes the rest of that
	// answer only then, so that its first event that is not a lifecycle
	// event comes in a later read.
	read chan struct{}

	mu      sync.Mutex
	bodies  [][]byte // the requests' bodies
	answers [][]byte // the bytes of each answer
}

func (u *streamUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	// Recorded before it is written: the Transport closes a refused
	// stream, and sends the next request, while this handler may still
	// be running.
	u.mu.Lock()
	n := len(u.bodies) + 1
	var parts []string
	switch {
	case len(body) > u.limit:
		parts = []string{streamRefusal(n, u.shape, u.instructions)}
	case u.read != nil && n == 1:
		parts = []string{streamOpening(n, u.instructions), streamRest(n, len(body), u.instructions)}
	default:
		parts = []string{streamOpening(n, u.instructions) + streamRest(n, len(body), u.instructions)}
	}
	u.bodies = append(u.bodies, body)
	u.answers = append(u.answers, []byte(strings.Join(parts, "")))
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	for i, p := range parts {
		if i > 0 {
			<-u.read
		}
		_, _ = io.WriteString(w, p)
		w.(http.Flusher).Flush()
	}
}

// teeBody is a response body read through a TeeReader: its Close reads
// what the caller left (the SDK stops at an error event), so that the
// copy holds every byte the Transport gave the caller.
type teeBody struct {
	io.Reader
	c io.Closer
}

func (b teeBody) Close() error {
	_, _ = io.Copy(io.Discard, b.Reader)
	return b.c.Close()
}

// signalBody closes read once n bytes of the body were read.
type signalBody struct {
	io.ReadCloser
	n    int
	read chan struct{}
	once *sync.Once
}

func (b *signalBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	if b.n -= k; b.n <= 0 {
		b.once.Do(func() { close(b.read) })
	}
	return k, err
}

// signalTransport is the Transport's Base when the server waits for the
// first answer's opening to be read.
type signalTransport struct {
	up   *streamUp
	once sync.Once
}

func (s *signalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && s.up.read != nil {
		resp.Body = &signalBody{ReadCloser: resp.Body, n: len(streamOpening(1, s.up.instructions)), read: s.up.read, once: &s.once}
	}
	return resp, err
}

// TestWireStreamOverflow: a streamed Responses request through
// wire.Transport (RegisterWire) with the real openai-go client
// (client.Responses.NewStreaming), against an upstream that streams as the
// API does and refuses an input over its limit inside the stream, HTTP
// 200, in each shape users reported. Each case with its reason: the
// caller reads, byte for byte, the stream of the last request the
// Transport sent (the refused streams before it never reach the caller);
// a refusal is recovered as a 400 is (each resend smaller, with the
// codec's rules, at most MaxRetries), the Event counting it as a stream's;
// a stream that does not refuse passes as it came.
func TestWireStreamOverflow(t *testing.T) {
	RegisterWire()
	body := wireLoopBody(12, 3, 60, "")
	req, err := hwire.Parse("/v1/responses", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var input []Item
	for _, it := range req.Messages() {
		input = append(input, param.Override[Item](json.RawMessage(it)))
	}
	const instructions = "You are a coding agent."
	params := responses.ResponseNewParams{Model: "o4-mini", Instructions: openai.String(instructions),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
	first := len(body) // about the size of the body the client sends
	cases := []struct {
		name         string
		limit, shape int
		long, late   bool
		middleware   bool
		// requests is how many requests the Transport sends (0: 2 to
		// 1+MaxRetries); ok whether the caller's stream completes.
		requests int
		ok       bool
	}{
		{"an error event after response.created and response.in_progress, then response.failed (dyad-sh/dyad#1672, maximhq/bifrost#5040): resent smaller inside the Transport, the caller reads the resend's stream",
			first / 2, streamError, false, false, false, 0, true},
		{"response.failed alone (james-6-23/codex2api#310): likewise, through the SDK's middleware",
			first / 2, streamFailed, false, false, true, 0, true},
		{"an error event with the code at its top (openai-go's ResponseErrorEvent): likewise",
			first / 2, streamFlat, false, false, false, 0, true},
		{"the error event first, no lifecycle event before it (dyad-sh/dyad#2509): likewise",
			first / 2, streamFirst, false, false, false, 0, true},
		{"a stream that does not refuse: the caller reads what the server sent, byte for byte",
			1 << 30, streamError, false, false, false, 1, true},
		{"its first event that is not a lifecycle event comes after the opening was read: held, then passed on whole",
			1 << 30, streamError, false, true, false, 1, true},
		{"nothing more can go (a limit below the latest turn): the last refused stream reaches the caller as the server sent it",
			100, streamError, false, false, false, 0, false},
		{"opening events over the 1 MiB the Transport holds: passed on as they come, so the refusal after them reaches the caller as sent",
			first / 2, streamError, true, false, false, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := &streamUp{limit: c.limit, shape: c.shape, instructions: instructions}
			if c.long {
				up.instructions = strings.Repeat("Follow the house rules at length. ", 40_000)
			}
			if c.late {
				up.read = make(chan struct{})
			}
			srv := httptest.NewServer(up)
			defer srv.Close()
			var ev hwire.Event
			tr := &hwire.Transport{Base: &signalTransport{up: up}, Logger: slog.New(slog.DiscardHandler),
				Models: func(_ context.Context, name string) (models.Model, error) {
					return models.Model{Name: name, Provider: "openai", Window: 200_000}, nil
				},
				OnEvent: func(e hwire.Event) {
					if e.Kind == hwire.EventRequest {
						ev = e
					}
				}}
			var got bytes.Buffer // what the caller's SDK read
			capture := func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
				resp, err := next(req)
				if err == nil {
					resp.Body = teeBody{io.TeeReader(resp.Body, &got), resp.Body}
				}
				return resp, err
			}
			opts := []option.RequestOption{option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0),
				option.WithMiddleware(capture)}
			if c.middleware {
				opts = append(opts, option.WithMiddleware(tr.Middleware))
			} else {
				opts = append(opts, option.WithHTTPClient(&http.Client{Transport: tr}))
			}
			client := openai.NewClient(opts...)
			s := client.Responses.NewStreaming(context.Background(), params)
			var types []string
			var done *responses.Response
			for s.Next() {
				e := s.Current()
				types = append(types, e.Type)
				if e.Type == "response.completed" {
					r := e.AsResponseCompleted().Response
					done = &r
				}
			}
			serr := s.Err()
			_ = s.Close()

			up.mu.Lock()
			defer up.mu.Unlock()
			n := len(up.bodies)
			if c.requests > 0 && n != c.requests || c.requests == 0 && (n < 2 || n > hwire.DefaultMaxRetries+1) {
				t.Fatalf("%d requests sent, want %d (0: 2 to %d)", n, c.requests, hwire.DefaultMaxRetries+1)
			}
			for i := 1; i < n; i++ {
				if len(up.bodies[i]) >= len(up.bodies[i-1]) {
					t.Fatalf("resend %d (%d bytes) not smaller than what was refused (%d bytes)", i, len(up.bodies[i]), len(up.bodies[i-1]))
				}
				wireCheck(t, up.bodies[0], up.bodies[i])
			}
			if !bytes.Equal(got.Bytes(), up.answers[n-1]) {
				t.Fatalf("the caller read %d bytes, not the %d bytes of the last answer:\n%.600s", got.Len(), len(up.answers[n-1]), got.Bytes())
			}
			if c.ok {
				if serr != nil || done == nil || done.ID != fmt.Sprintf("resp_%d", n) {
					t.Fatalf("the caller's stream did not complete as the last answer: err %v, events %v", serr, types)
				}
			} else if serr == nil && !strings.Contains(strings.Join(types, " "), "response.failed") {
				t.Fatalf("the refusal did not reach the caller: events %v", types)
			}
			if ev.Overflows != ev.StreamOverflows || ev.Recovered != n-1 || c.ok && ev.Overflows != n-1 {
				t.Fatalf("event: %d refusals, %d of them in a stream, %d resends, for %d requests", ev.Overflows, ev.StreamOverflows, ev.Recovered, n)
			}
		})
	}
}
