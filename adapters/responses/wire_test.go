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
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history/internal/latency"

	"github.com/histrim/history"

	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/wiretest"
	"github.com/histrim/history/models"
	hwire "github.com/histrim/history/wire"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// responsesRuntime is the loop's runtime on openai-go
// (client.Responses.New, or NewStreaming): it sends its whole transcript
// every time and never trims, and sends the output items back as their
// raw JSON.
type responsesRuntime struct {
	client     openai.Client
	params     responses.ResponseNewParams
	stream     bool
	transcript []Item
}

func (r *responsesRuntime) User(task string) { r.transcript = append(r.transcript, user(task)) }

func (r *responsesRuntime) Result(id, text string) {
	r.transcript = append(r.transcript, functionOutput(id, text))
}

func (r *responsesRuntime) Step(ctx context.Context) ([]string, int, error) {
	resp, err := r.send(ctx)
	if err != nil {
		return nil, 0, err
	}
	var calls []string
	for _, o := range resp.Output {
		// As an application that keeps the output's raw JSON sends it
		// back.
		r.transcript = append(r.transcript, param.Override[Item](json.RawMessage(o.RawJSON())))
		if o.Type == "function_call" {
			calls = append(calls, o.CallID)
		}
	}
	return calls, int(resp.Usage.InputTokens), nil
}

func (r *responsesRuntime) send(ctx context.Context) (*responses.Response, error) {
	p := r.params
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: r.transcript}
	if !r.stream {
		return r.client.Responses.New(ctx, p)
	}
	s := r.client.Responses.NewStreaming(ctx, p)
	defer s.Close()
	var done *responses.Response
	for s.Next() {
		if e := s.Current(); e.Type == "response.completed" {
			resp := e.AsResponseCompleted().Response
			done = &resp
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if done == nil {
		return nil, fmt.Errorf("the stream ended without response.completed")
	}
	return done, nil
}

// runWireLoop runs l.Turns user turns of 1 to 6 tool steps through the
// real openai-go client (responsesRuntime) against the fake reasoning
// model in loop mode, the client's requests going through a
// wire.Transport (as its HTTP client's transport, or as
// option.WithMiddleware): the runtime sends its whole transcript every
// time and never trims; the Transport does. Errors that reach the
// runtime are recorded in l.
func runWireLoop(t *testing.T, l *adaptertest.Loop, stream, middleware bool) (*fakeAPI, *wiretest.Events) {
	t.Helper()
	api := newLoopAPI(l)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	ev := &wiretest.Events{}
	tr := wiretest.Transport(ev, "o4-mini", "openai", l.Window)
	opts := []option.RequestOption{option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0)}
	if middleware {
		opts = append(opts, option.WithMiddleware(tr.Middleware))
	} else {
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: tr}))
	}
	rt := &responsesRuntime{client: openai.NewClient(opts...), stream: stream,
		params: responses.ResponseNewParams{Model: "o4-mini", Tools: loopTools(),
			Instructions: openai.String("You are a coding agent. Use the tools to read files before you answer.")}}
	adaptertest.RunTurns(t, l, rt,
		func(turn int) string {
			return "Task " + strconv.Itoa(turn) + ": look into module " + strconv.Itoa(turn*13%97) + " and fix what you find."
		},
		func(id string) string { return loopOutput(l, id) })
	return api, ev
}

// TestWireLoop: 50 user turns of tool steps (15 under the race
// detector) through wire.Transport with the codec RegisterWire registers,
// the real openai-go client sending its whole transcript every time to a
// reasoning model that binds each reasoning item to the item after it,
// checks the pairing of calls and outputs, counts 1.35 times the
// library's estimate or drifts from 1.0 to 1.4 (adaptertest.Modes), and
// refuses an input over the window with the API's real 400 body: no turn
// fails, no request breaks the binding or the pairing or lacks the latest
// task, and every refusal for length is resent smaller inside the
// Transport. JSON and streamed (the usage read from response.completed),
// through the HTTP client's transport and the SDK's middleware.
func TestWireLoop(t *testing.T) {
	RegisterWire()
	for _, c := range []struct {
		name               string
		stream, middleware bool
		window             int
		mode               adaptertest.Mode
	}{
		{"transport/json/16k/skew", false, false, 16_000, adaptertest.Modes()[0]},
		{"transport/stream/16k/drift", true, false, 16_000, adaptertest.Modes()[2]},
		{"middleware/json/32k/drift", false, true, 32_000, adaptertest.Modes()[2]},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("responses/wire", c.mode, c.window)
			if race.Enabled {
				l.Turns = 15
			}
			api, ev := runWireLoop(t, l, c.stream, c.middleware)
			s := l.Stats()
			t.Logf("%s\n%s\n%v", adaptertest.TableHeader, s.Row(), ev)
			if s.Errors > 0 || s.Violations > 0 || s.Missing > 0 {
				t.Errorf("%d failed turns, %d binding or pairing violations, %d requests without the latest task\n%v",
					s.Errors, s.Violations, s.Missing, l.Notes())
			}
			want := 10
			if race.Enabled && c.window > 16_000 {
				want = 0 // 15 turns do not outgrow 32k
			}
			api.mu.Lock()
			refused := api.overflow
			api.mu.Unlock()
			ev.Check(t, want, refused)
		})
	}
}

// wireLoopBody is the body of a Responses request of a tool loop: turns
// user turns of steps steps each, every step a reasoning item (with
// encrypted content), a function call carrying a field the SDK does not
// know and odd whitespace, and its output of words words; tools, if set,
// is its tools array. The top level has a field the SDK does not know
// too, before and after the input.
func wireLoopBody(turns, steps, words int, tools string) string {
	var b strings.Builder
	b.WriteString(`{"model":"o4-mini",  "x_top":{"keep" : [1, 2]},"instructions":"You are a coding agent.",`)
	if tools != "" {
		b.WriteString(`"tools":` + tools + `,`)
	}
	b.WriteString("\n  \"input\": [")
	for t := range turns {
		if t > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"role":"user","content":"Task %d: fix module %d."}`, t, t)
		for s := range steps {
			id := fmt.Sprintf("%d_%d", t, s)
			fmt.Fprintf(&b, `,{"type":"reasoning","id":"rs_%s","summary":[],"encrypted_content":"gAAAAB%s"}`, id, strings.Repeat("q8Zr", 20))
			fmt.Fprintf(&b, `, { "type" : "function_call", "id":"fc_%s","call_id":"call_%s","name":"read_file","arguments":"{\"path\":\"src/%s.go\"}", "x_vendor" : { "a" : [ 1, 2 ] } }`, id, id, id)
			fmt.Fprintf(&b, `,{"type":"function_call_output","call_id":"call_%s","output":%q,"x_out":true}`, id, strings.Repeat("line of code "+id+" ", words))
		}
	}
	b.WriteString("],\n  \"store\": false, \"x_after\": \"kept\"}")
	return b.String()
}

// wireCheck checks a Responses body sent for the body got: every byte
// outside the input array as it came; the input's items in their order,
// each the bytes it came in, or a function output whose output alone was
// replaced, or a notice; no function call without its output nor output
// without its call; every reasoning item followed by the item that
// followed it; and the latest user message sent.
func wireCheck(t *testing.T, got, sent []byte) {
	t.Helper()
	if !json.Valid(sent) {
		t.Fatalf("sent body is not JSON: %s", sent)
	}
	in, err := hwire.Parse("/v1/responses", got)
	if err != nil {
		t.Fatal(err)
	}
	out, err := hwire.Parse("/v1/responses", sent)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in.Body([]json.RawMessage{}), out.Body([]json.RawMessage{})) {
		t.Fatalf("bytes outside the input changed:\n%s\n%s", in.Body([]json.RawMessage{}), out.Body([]json.RawMessage{}))
	}
	items, kept := in.Messages(), out.Messages()
	next := 0
	calls, outputs := map[string]int{}, map[string]int{}
	for k, it := range kept {
		j := next
		for j < len(items) && !bytes.Equal(items[j], it) && !sameExcept(items[j], it, "output") {
			j++
		}
		if j == len(items) {
			var m struct{ Role, Content string }
			if json.Unmarshal(it, &m) != nil || m.Role == "" || m.Content == "" {
				t.Fatalf("sent item %d is neither an item received (in order), an elided output, nor a notice: %s", k, it)
			}
			continue
		}
		next = j + 1
		var w struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		_ = json.Unmarshal(it, &w)
		switch w.Type {
		case "function_call":
			calls[w.CallID] = k
		case "function_call_output":
			if c, ok := calls[w.CallID]; !ok || c > k {
				t.Fatalf("output %s sent without its call", w.CallID)
			}
			outputs[w.CallID] = k
		case "reasoning":
			if j+1 >= len(items) || k+1 >= len(kept) || !bytes.Equal(kept[k+1], items[j+1]) {
				t.Fatalf("reasoning item %d sent without the item that followed it", j)
			}
		}
	}
	for id := range calls {
		if _, ok := outputs[id]; !ok {
			t.Fatalf("call %s sent without its output", id)
		}
	}
	if !bytes.Equal(kept[len(kept)-1], items[len(items)-1]) {
		t.Fatalf("the latest item (the latest user message) was not sent as it came")
	}
}

// sameExcept reports whether the JSON objects a and b have the same
// members, by value, but the one named name.
func sameExcept(a, b []byte, name string) bool {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	delete(ma, name)
	delete(mb, name)
	return reflect.DeepEqual(ma, mb)
}

// TestWireRules: Responses bodies through wire.Transport with the codec
// RegisterWire registers, each case with its reason: what must go
// untouched does, and a trimmed body keeps the API's rules and every
// byte it does not need to change.
func TestWireRules(t *testing.T) {
	RegisterWire()
	bigTools := `[` + strings.Repeat(`{"type":"function","name":"t","description":"`+strings.Repeat("describes a tool at length ", 40)+`","parameters":{}},`, 9) +
		`{"type":"function","name":"last","parameters":{}}]`
	loop := wireLoopBody(12, 3, 60, "")
	longInstructions := strings.Replace(loop, `"You are a coding agent."`, `"`+strings.Repeat("Follow the house rules at length. ", 250)+`"`, 1)
	cases := []struct {
		name, body string
		forwarded  error // the Event's Err when the body must go untouched
		check      func(t *testing.T, sent []byte, ev hwire.Event)
	}{
		{"previous_response_id: the server holds the earlier items, which the client cannot prune",
			strings.Replace(loop, `"store": false`, `"previous_response_id":"resp_abc"`, 1), ErrChained, nil},
		{"a conversation: likewise", strings.Replace(loop, `"store": false`, `"conversation":{"id":"conv_1"}`, 1), ErrChained, nil},
		{"an input that is one string: one user message, nothing to trim",
			`{"model":"o4-mini","input":"` + strings.Repeat("word ", 9000) + `"}`, hwire.ErrNoMessages, nil},
		{"a tool loop over the window: whole steps and turns dropped, outputs elided, reasoning kept with its call, pairing kept",
			loop, nil, func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, []byte(loop), sent)
				if !ev.Trimmed || ev.Sent >= ev.Messages {
					t.Fatalf("not trimmed: %+v", ev)
				}
			}},
		{"tools count as overhead: the same input with 10 long tools leaves fewer items",
			wireLoopBody(12, 3, 60, bigTools), nil, func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, []byte(wireLoopBody(12, 3, 60, bigTools)), sent)
				var without struct{ Input []json.RawMessage }
				_ = json.Unmarshal(wireSend(t, loop, nil), &without)
				var with struct{ Input []json.RawMessage }
				_ = json.Unmarshal(sent, &with)
				if len(with.Input) >= len(without.Input) {
					t.Fatalf("%d items sent with the tools, %d without", len(with.Input), len(without.Input))
				}
			}},
		{"instructions count as overhead: the same input with long instructions leaves fewer items",
			longInstructions, nil, func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, []byte(longInstructions), sent)
				var without, with struct{ Input []json.RawMessage }
				_ = json.Unmarshal(wireSend(t, loop, nil), &without)
				_ = json.Unmarshal(sent, &with)
				if len(with.Input) >= len(without.Input) {
					t.Fatalf("%d items sent with the instructions, %d without", len(with.Input), len(without.Input))
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ev hwire.Event
			sent := wireSend(t, c.body, &ev)
			wiretest.Rule(t, c.body, sent, ev, c.forwarded, c.check)
		})
	}
}

// wireUp is the upstream of the rules' tests: the model's window 6,000
// tokens.
var wireUp = wiretest.Upstream{Provider: "openai", Window: 6_000,
	OK: `{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":10,"output_tokens":1}}`}

// wireSend sends body through wireUp's Transport and returns what the
// upstream received; ev, if set, receives the request's Event.
func wireSend(t *testing.T, body string, ev *hwire.Event) []byte {
	t.Helper()
	got, e := wireUp.Send(t, "/v1/responses", body)
	if ev != nil {
		*ev = e
	}
	return got
}

// FuzzWireCodec: arbitrary bytes as a Responses body, trimmed by the
// codec RegisterWire registers as wire.Transport trims it: it never
// panics; every byte outside the input array stays; every item sent is
// one received, in order and byte for byte, or one whose output,
// arguments, input or result alone was replaced (every other member, the
// ones the SDK does not know included, equal), or a notice; a body that
// was valid JSON stays valid; the body is not modified.
func FuzzWireCodec(f *testing.F) {
	f.Add([]byte(wireLoopBody(3, 2, 40, "")), 600)
	f.Add([]byte(wireLoopBody(1, 1, 5, "")), 50)
	f.Add([]byte(`{"input":[]}`), 10)
	f.Add([]byte(`{"input":[{"type":"reasoning","id":"rs","encrypted_content":"x"},{"role":"user","content":"q"}]}`), 5)
	f.Add([]byte(`{"input":[{"type":"function_call_output","call_id":"a","output":"r"},{"role":"user","content":"q"}],"previous_response_id":null}`), 5)
	f.Add([]byte(`{"a":"\"]}","input" : [ {"role":"user","content":[{"type":"input_text","text":"\\"}]} ] }`), 3)
	f.Fuzz(func(t *testing.T, body []byte, budget int) {
		wiretest.Codec(t, "/v1/responses", rawCodec, body, budget, func(t *testing.T, orig, sent json.RawMessage) {
			if orig == nil {
				var m struct{ Role, Content string }
				if json.Unmarshal(sent, &m) != nil || m.Role == "" {
					t.Fatalf("notice is not a message: %s", sent)
				}
				return
			}
			for _, name := range []string{"output", "arguments", "input", "result"} {
				if sameExcept(orig, sent, name) {
					return
				}
			}
			t.Fatalf("item changed beyond one replaced member:\n%s\n%s", orig, sent)
		})
	})
}

// wireCanned is an upstream that reads the request's body and answers at
// once with a small response: what BenchmarkWireTransport measures is
// the Transport's own work.
type wireCanned struct{}

func (wireCanned) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	_ = req.Body.Close()
	body := `{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":1000,"output_tokens":2}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// BenchmarkWireTransport is package wire's BenchmarkTransport for a
// Responses body of 100k tokens (Heuristic count: a tool loop of
// reasoning items, calls and outputs), the model's window half of it:
// the latency wire.Transport adds with this adapter's codec over sending
// the body untouched, p50 and p99 of one request; "grow" is
// "trim" for a client that appends a turn on every request.
func BenchmarkWireTransport(b *testing.B) {
	RegisterWire()
	one := history.EstimateText(wireLoopBody(1, 3, 60, ""))
	body := []byte(wireLoopBody(max(100_000/one, 1), 3, 60, ""))
	tr := &hwire.Transport{Base: wireCanned{}, Logger: slog.New(slog.DiscardHandler),
		Models: func(_ context.Context, name string) (models.Model, error) {
			return models.Model{Name: name, Provider: "openai", Window: 50_000}, nil
		}}
	for _, mode := range []string{"forward", "trim", "grow"} {
		b.Run("100k/"+mode, func(b *testing.B) {
			var rt http.RoundTripper = wireCanned{}
			switch mode {
			case "trim":
				rt = tr
			case "grow":
				// A client that appends a turn on every request, 8
				// requests, and starts over.
				var bodies [][]byte
				for k := range 8 {
					bodies = append(bodies, []byte(wireLoopBody(max(100_000/one, 1)+k, 3, 60, "")))
				}
				tr := &hwire.Transport{Base: wireCanned{}, Logger: slog.New(slog.DiscardHandler), Models: tr.Models}
				latency.Cycle(b, tr, "http://upstream/v1/responses", bodies, false)
				return
			}
			latency.Requests(b, rt, "http://upstream/v1/responses", body, false)
		})
	}
}

// TestWireOverflow: an upstream that refuses every Responses request
// whose input is over limit bytes with the API's real 400 body
// (overflowBody: code context_length_exceeded), under a model whose
// window the Transport believes far larger, so that its first request is
// refused. Each case with its reason: the Transport resends smaller, never
// a body it sent before, at most MaxRetries times, and the caller sees
// the success, or, when nothing more can go, the provider's own answer.
func TestWireOverflow(t *testing.T) {
	RegisterWire()
	body := wireLoopBody(12, 3, 60, "")
	cases := []struct {
		name       string
		limit      int
		wantStatus int
	}{
		{"a limit a resend can meet: recovered inside the Transport", len(body) / 2, http.StatusOK},
		{"a limit below the latest turn: the provider's 400 reaches the caller, after at most MaxRetries resends", 100, http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := wiretest.Overflow{Path: "/v1/responses", Body: body, Limit: c.limit, Refusal: overflowBody,
				OK:          `{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":10,"output_tokens":1}}`,
				ContentType: "application/json", Provider: "openai", Window: 200_000}
			o.Run(t, c.wantStatus, func(t *testing.T, sent []byte) { wireCheck(t, []byte(body), sent) })
		})
	}
}
