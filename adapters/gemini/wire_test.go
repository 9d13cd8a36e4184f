package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/latency"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/regroup"
	"github.com/histrim/history/internal/retained"
	"github.com/histrim/history/internal/wiretest"
	"github.com/histrim/history/models"
	hwire "github.com/histrim/history/wire"
	"google.golang.org/genai"
)

// geminiRuntime is the loop's runtime on the genai client
// (client.Models.GenerateContent, or GenerateContentStream): it sends its
// whole transcript every time and never trims.
type geminiRuntime struct {
	client  *genai.Client
	config  *genai.GenerateContentConfig
	stream  bool
	all     []*genai.Content // the runtime's full transcript, never trimmed
	names   map[string]string
	results []*genai.Part
}

func (g *geminiRuntime) User(task string) {
	g.all = append(g.all, genai.NewContentFromText(task, genai.RoleUser))
}

func (g *geminiRuntime) Result(id, text string) {
	g.results = append(g.results, &genai.Part{FunctionResponse: &genai.FunctionResponse{
		ID: id, Name: g.names[id], Response: map[string]any{"output": text}}})
}

func (g *geminiRuntime) Step(ctx context.Context) ([]string, int, error) {
	if g.results != nil { // the responses to the last calls, one content
		g.all = append(g.all, &genai.Content{Role: genai.RoleUser, Parts: g.results})
		g.results = nil
	}
	resp, err := g.send(ctx)
	if err != nil {
		return nil, 0, err
	}
	answer := resp.Candidates[0].Content
	g.all = append(g.all, answer)
	var calls []string
	g.names = map[string]string{}
	for _, p := range answer.Parts {
		if fc := p.FunctionCall; fc != nil {
			calls = append(calls, fc.ID)
			g.names[fc.ID] = fc.Name
		}
	}
	return calls, int(resp.UsageMetadata.PromptTokenCount), nil
}

func (g *geminiRuntime) send(ctx context.Context) (*genai.GenerateContentResponse, error) {
	if !g.stream {
		return g.client.Models.GenerateContent(ctx, loopModel, g.all, g.config)
	}
	var last *genai.GenerateContentResponse
	for resp, err := range g.client.Models.GenerateContentStream(ctx, loopModel, g.all, g.config) {
		if err != nil {
			return nil, err
		}
		last = resp
	}
	if last == nil {
		return nil, errors.New("the stream ended without a chunk")
	}
	return last, nil
}

// runWireLoop runs l.Turns user turns of 1 to 6 tool steps through the
// real genai client (geminiRuntime) against loopServer, the client's
// requests going through a wire.Transport set as its HTTP client's
// transport: the runtime sends its whole transcript every time and never
// trims; the Transport does. loopServer counts each request through l,
// refuses it over the window with the API's real 400 body, and checks the
// pairing and the latest task. Errors that reach the runtime are recorded
// in l.
func runWireLoop(t *testing.T, l *adaptertest.Loop, stream bool) *wiretest.Events {
	t.Helper()
	srv := &loopServer{loop: l}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ev := &wiretest.Events{}
	tr := wiretest.Transport(ev, loopModel, "google", l.Window)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	rt := &geminiRuntime{client: client, stream: stream, config: &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText("You are a coding agent. Use the tools to read files before you answer.", genai.RoleUser),
		Tools:             loopToolDecls(),
	}}
	adaptertest.RunTurns(t, l, rt, func(turn int) string { return taskText(turn - 1) },
		func(id string) string { return toolOutput(id, l.Words) })
	srv.mu.Lock()
	for _, p := range srv.problems {
		t.Error("server: " + p)
	}
	srv.mu.Unlock()
	return ev
}

// TestWireLoop: 50 user turns of tool steps (15 under the race detector)
// through wire.Transport with the codec RegisterWire registers, the real
// genai client sending its whole transcript every time to a server that
// counts 1.35 times the library's estimate or drifts from 1.0 to 1.4
// (adaptertest.Modes), refuses a request over the window with the API's
// real 400 body and checks the pairing of function calls and responses
// and the latest task: no turn fails, no request breaks the pairing or
// lacks the latest task, and every refusal for length is resent smaller
// inside the Transport. JSON and streamed (?alt=sse, the usage read from
// the chunk's usageMetadata).
func TestWireLoop(t *testing.T) {
	RegisterWire()
	for _, c := range []struct {
		name   string
		stream bool
		window int
		mode   adaptertest.Mode
	}{
		{"json/16k/skew", false, 16_000, adaptertest.Modes()[0]},
		{"stream/16k/drift", true, 16_000, adaptertest.Modes()[2]},
		{"json/32k/drift", false, 32_000, adaptertest.Modes()[2]},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("gemini/wire", c.mode, c.window)
			if race.Enabled {
				l.Turns = 15
			}
			ev := runWireLoop(t, l, c.stream)
			s := l.Stats()
			t.Logf("%s\n%s\n%v", adaptertest.TableHeader, s.Row(), ev)
			if s.Errors > 0 || s.Violations > 0 || s.Missing > 0 {
				t.Errorf("%d failed turns, %d pairing violations, %d requests without the latest task\n%v",
					s.Errors, s.Violations, s.Missing, l.Notes())
			}
			want := 10
			if race.Enabled && c.window > 16_000 {
				want = 0 // 15 turns do not outgrow 32k
			}
			ev.Check(t, want, s.Overflows)
		})
	}
}

// wireLoopBody is the body of a generateContent request of a thinking
// tool loop: turns user turns of steps steps each, every step a model
// content of a thought and a function call, both carrying a thought
// signature (and a field the SDK does not know, with odd whitespace), and
// a user content answering it with words words; tools, if set, is its
// tools array, system its systemInstruction text. The top level has
// fields the SDK does not know too, before and after the contents.
func wireLoopBody(turns, steps, words int, tools, system string) string {
	var b strings.Builder
	b.WriteString(`{"x_top":{"keep" : [1, 2]},  "systemInstruction":{"parts":[{"text":` + fmt.Sprintf("%q", system) + `}]},`)
	if tools != "" {
		b.WriteString(`"tools":` + tools + `,`)
	}
	b.WriteString("\n  \"contents\": [")
	for t := range turns {
		if t > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"role":"user","parts":[{"text":"Task %d: fix module %d."}]}`, t, t)
		for s := range steps {
			id := fmt.Sprintf("c%d_%d", t, s)
			fmt.Fprintf(&b, `,{ "role" : "model", "parts":[{"text":"Reading %s.","thought":true,"thoughtSignature":"c2lnLXRob3VnaHQt%s"},`+
				`{"functionCall":{"id":"%s","name":"read_file","args":{"path":"src/%s.go"}},"thoughtSignature":"c2lnLWNhbGwt%s", "x_vendor" : { "a" : [ 1, 2 ] }}]}`,
				id, sigDigits(id), id, id, sigDigits(id))
			fmt.Fprintf(&b, `,{"role":"user","parts":[{"functionResponse":{"id":"%s","name":"read_file","response":{"output":%q}}}],"x_content":true}`,
				id, strings.Repeat("line of code "+id+" ", words))
		}
	}
	b.WriteString("],\n  \"generationConfig\": {\"temperature\": 0.2}, \"x_after\": \"kept\"}")
	return b.String()
}

// sigDigits returns s with the characters base64 has no digit for replaced, so
// that it reads as base64 digits.
func sigDigits(s string) string {
	return strings.NewReplacer("_", "A").Replace(s) + strings.Repeat("A", (4-len(s)%4)%4)
}

// wireCheck checks a Gemini body sent for the body got: every byte outside
// the contents as it came; the contents in their order, each the bytes it
// came in, or a user content whose function responses alone were
// replaced, or a notice (a user content of one text part); every function
// call content followed by the content answering each of its calls, and
// every response content preceded by the calls it answers; every model
// content with a function call sent as it came (its thought signatures
// with it); the latest content sent (as it came, or its responses
// elided), and the latest task as it came.
func wireCheck(t *testing.T, path string, got, sent []byte) {
	t.Helper()
	if !json.Valid(sent) {
		t.Fatalf("sent body is not JSON: %s", sent)
	}
	in, err := hwire.Parse(path, got)
	if err != nil {
		t.Fatal(err)
	}
	out, err := hwire.Parse(path, sent)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in.Body([]json.RawMessage{}), out.Body([]json.RawMessage{})) {
		t.Fatalf("bytes outside the contents changed:\n%s\n%s", in.Body([]json.RawMessage{}), out.Body([]json.RawMessage{}))
	}
	items, kept := in.Messages(), out.Messages()
	var contents []*genai.Content
	next := 0
	for k, it := range kept {
		var c genai.Content
		if err := json.Unmarshal(it, &c); err != nil {
			t.Fatalf("sent content %d does not decode: %v", k, err)
		}
		contents = append(contents, &c)
		j := next
		for j < len(items) && !bytes.Equal(items[j], it) && !responsesReplaced(items[j], &c) {
			j++
		}
		if j == len(items) {
			if c.Role != genai.RoleUser || len(c.Parts) != 1 || c.Parts[0].Text == "" {
				t.Fatalf("sent content %d is neither a content received (in order), one with responses elided, nor a notice: %s", k, it)
			}
			continue
		}
		next = j + 1
		for _, p := range c.Parts {
			if p.FunctionCall != nil && !bytes.Equal(items[j], it) {
				t.Fatalf("a function call content was changed (its signatures must go as they came): %s", it)
			}
		}
	}
	if body := pairing(contents); body != "" {
		t.Fatalf("sent contents break the pairing: %s", body)
	}
	var latest *genai.Content
	if err := json.Unmarshal(kept[len(kept)-1], &latest); err != nil ||
		(!bytes.Equal(kept[len(kept)-1], items[len(items)-1]) && !responsesReplaced(items[len(items)-1], latest)) {
		t.Fatalf("the latest content was not sent (as it came, or its responses elided)")
	}
	task := -1 // the latest user text: the task
	for i, it := range items {
		var c genai.Content
		if json.Unmarshal(it, &c) == nil && c.Role == genai.RoleUser && len(c.Parts) > 0 && c.Parts[0].Text != "" {
			task = i
		}
	}
	if task >= 0 && !slices.ContainsFunc(kept, func(k json.RawMessage) bool { return bytes.Equal(k, items[task]) }) {
		t.Fatalf("the latest task was not sent as it came")
	}
}

// responsesReplaced reports whether c is the content raw decodes to but
// for the responses of its function responses (same role, same parts in
// the same order, a function response with the same id and name).
func responsesReplaced(raw []byte, c *genai.Content) bool {
	var o genai.Content
	if json.Unmarshal(raw, &o) != nil || o.Role != c.Role || len(o.Parts) != len(c.Parts) {
		return false
	}
	for i, p := range o.Parts {
		q := c.Parts[i]
		if p.FunctionResponse != nil && q.FunctionResponse != nil {
			if p.FunctionResponse.ID != q.FunctionResponse.ID || p.FunctionResponse.Name != q.FunctionResponse.Name {
				return false
			}
			continue
		}
		a, _ := json.Marshal(p)
		b, _ := json.Marshal(q)
		if !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

// wirePath is the path of the requests of the rules' tests.
const wirePath = "/v1beta/models/gemini-2.5-flash:generateContent"

// wireUp is the upstream of the rules' tests: the model's window 6,000
// tokens.
var wireUp = wiretest.Upstream{Model: "gemini-2.5-flash", Provider: "google", Window: 6_000,
	OK: `{"candidates":[],"usageMetadata":{"promptTokenCount":10}}`}

// wireSend sends body to path through wireUp's Transport and returns what
// the upstream received; ev, if set, receives the request's Event.
func wireSend(t *testing.T, path, body string, ev *hwire.Event) []byte {
	t.Helper()
	got, e := wireUp.Send(t, path, body)
	if ev != nil {
		*ev = e
	}
	return got
}

// TestWireRules: Gemini bodies through wire.Transport with the codec
// RegisterWire registers, each case with its reason: what must go
// untouched does, and a trimmed body keeps the API's rules (function
// calls with their responses, in Gemini's order; thought signatures with
// their parts) and every byte it does not need to change.
func TestWireRules(t *testing.T) {
	RegisterWire()
	const sys = "You are a coding agent."
	bigTools := `[{"functionDeclarations":[` + strings.Repeat(`{"name":"t","description":"`+strings.Repeat("describes a tool at length ", 40)+`"},`, 9) +
		`{"name":"last"}]}]`
	loop := wireLoopBody(12, 3, 60, "", sys)
	withTools := wireLoopBody(12, 3, 60, bigTools, sys)
	longSystem := wireLoopBody(12, 3, 60, "", strings.Repeat("Follow the house rules at length. ", 250))
	withOutput := strings.Replace(loop, `{"temperature": 0.2}`, `{"temperature": 0.2, "maxOutputTokens": 3000}`, 1)
	small := wireLoopBody(1, 1, 5, "", sys)
	// A thinking model content whose signed call nobody answers, in the
	// middle of the history: Gemini refuses it where it stands.
	unanswered := strings.Replace(small, `"contents": [`, `"contents": [{"role":"user","parts":[{"text":"Earlier."}]},`+
		`{"role":"model","parts":[{"functionCall":{"id":"lost","name":"read_file","args":{}},"thoughtSignature":"bG9zdA=="}]},`, 1)
	count := func(body []byte) int {
		var b struct{ Contents []json.RawMessage }
		_ = json.Unmarshal(body, &b)
		return len(b.Contents)
	}
	cases := []struct {
		name, path, body string
		forwarded        error // the Event's Err when the body must go untouched
		check            func(t *testing.T, sent []byte, ev hwire.Event)
	}{
		{"a request within the window: sent as it came, byte for byte", wirePath, small, nil,
			func(t *testing.T, sent []byte, ev hwire.Event) {
				if string(sent) != small || ev.Trimmed {
					t.Fatalf("changed: %s", sent)
				}
			}},
		{"a content that does not decode as a genai.Content: forwarded untouched",
			wirePath, strings.Replace(loop, `"contents": [`, `"contents": [{"role":"user","parts":"not a list"},`, 1), ErrInvalidContent, nil},
		{"a tool loop over the window: whole steps and turns dropped, responses elided, calls kept with their responses and signatures",
			wirePath, loop, nil, func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, wirePath, []byte(loop), sent)
				if !ev.Trimmed || ev.Sent >= ev.Messages || ev.Model != "gemini-2.5-flash" {
					t.Fatalf("not trimmed: %+v", ev)
				}
			}},
		{"streamGenerateContent is trimmed the same way", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", loop, nil,
			func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, wirePath, []byte(loop), sent)
				if !ev.Trimmed {
					t.Fatalf("not trimmed: %+v", ev)
				}
			}},
		{"a signed call nobody answers, mid-history: its content dropped whole (Gemini refuses it), the rest as it came",
			wirePath, unanswered, nil, func(t *testing.T, sent []byte, ev hwire.Event) {
				if bytes.Contains(sent, []byte(`"lost"`)) || count(sent) != count([]byte(unanswered))-1 {
					t.Fatalf("sent %s", sent)
				}
				wireCheck(t, wirePath, []byte(unanswered), sent)
			}},
		{"tools count as overhead: the same contents with 10 long tools leave fewer", wirePath, withTools, nil,
			func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, wirePath, []byte(withTools), sent)
				if n, m := count(sent), count(wireSend(t, wirePath, loop, nil)); n >= m {
					t.Fatalf("%d contents sent with the tools, %d without", n, m)
				}
			}},
		{"the system instruction counts: the same contents with a long one leave fewer", wirePath, longSystem, nil,
			func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, wirePath, []byte(longSystem), sent)
				if n, m := count(sent), count(wireSend(t, wirePath, loop, nil)); n >= m {
					t.Fatalf("%d contents sent with the long system instruction, %d without", n, m)
				}
			}},
		{"generationConfig.maxOutputTokens is the output room: a smaller budget, fewer contents", wirePath, withOutput, nil,
			func(t *testing.T, sent []byte, ev hwire.Event) {
				wireCheck(t, wirePath, []byte(withOutput), sent)
				var without hwire.Event
				m := count(wireSend(t, wirePath, loop, &without))
				if ev.Budget >= without.Budget || count(sent) >= m {
					t.Fatalf("budget %d with maxOutputTokens, %d without; %d and %d contents", ev.Budget, without.Budget, count(sent), m)
				}
			}},
		{"a model the path does not name: forwarded untouched", "/v1beta/cachedContents:generateContent", loop, models.ErrUnknownModel, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ev hwire.Event
			sent := wireSend(t, c.path, c.body, &ev)
			wiretest.Rule(t, c.body, sent, ev, c.forwarded, c.check)
		})
	}
}

// TestWireOverflow: an upstream that refuses every Gemini request whose
// body is over limit bytes with the API's real 400 body ("The input token
// count (N) exceeds the maximum number of tokens allowed (M)."
// INVALID_ARGUMENT), under a model whose window the Transport believes
// far larger, so that its first request is refused. Each case with its
// reason: the Transport resends smaller, never a body it sent before, at
// most MaxRetries times, and the caller sees the success, or, when
// nothing more can go, the provider's own answer.
func TestWireOverflow(t *testing.T) {
	RegisterWire()
	body := wireLoopBody(12, 3, 60, "", "You are a coding agent.")
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
			refusal := fmt.Sprintf(`{"error":{"code":400,"message":"The input token count (%d) exceeds the maximum number of tokens allowed (%d).","status":"INVALID_ARGUMENT"}}`,
				history.EstimateText(body), history.EstimateText(body[:c.limit]))
			o := wiretest.Overflow{Path: wirePath, Body: body, Limit: c.limit, Refusal: refusal,
				OK: `{"candidates":[],"usageMetadata":{"promptTokenCount":10}}`, ContentType: "application/json; charset=UTF-8",
				Provider: "google", Window: 1_000_000}
			ev, sent := o.Run(t, c.wantStatus, func(t *testing.T, sent []byte) { wireCheck(t, wirePath, []byte(body), sent) })
			if ev.Overflows != sent-boolInt(c.wantStatus == http.StatusOK) {
				t.Fatalf("event counts %d refusals and %d resends for %d requests", ev.Overflows, ev.Recovered, sent)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzWireCodec: arbitrary bytes as a Gemini body, trimmed by the codec
// RegisterWire registers as wire.Transport trims it: it never panics;
// every byte outside the contents array stays; every content sent is one
// received, in order and byte for byte, or one cut down from it (same
// role, a subsequence of its parts, each as it came or a function
// response or call of the same id and name whose response or arguments
// alone were replaced), or a notice (a user content of one text part); a
// body that was valid JSON stays valid; the body is not modified.
func FuzzWireCodec(f *testing.F) {
	f.Add([]byte(wireLoopBody(3, 2, 40, "", "s")), 600)
	f.Add([]byte(wireLoopBody(1, 1, 5, "", "")), 50)
	f.Add([]byte(`{"contents":[]}`), 10)
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"},"thoughtSignature":"AA=="}]},{"role":"user","parts":[{"text":"q"}]}]}`), 5)
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]},{"parts":[{"text":"q"}]}],"systemInstruction":null}`), 5)
	f.Add([]byte(`{"a":"\"]}","contents" : [ {"role":"user","parts":[{"text":"\\","x":1}],"y":[]} ] }`), 3)
	f.Fuzz(func(t *testing.T, body []byte, budget int) {
		wiretest.Codec(t, wirePath, rawCodec, body, budget, func(t *testing.T, orig, sent json.RawMessage) {
			var c genai.Content
			if err := json.Unmarshal(sent, &c); err != nil {
				t.Fatalf("content does not decode: %v: %s", err, sent)
			}
			if orig == nil {
				if c.Role != genai.RoleUser || len(c.Parts) != 1 || c.Parts[0].Text == "" {
					t.Fatalf("notice is not a user text: %s", sent)
				}
				return
			}
			if !cutFrom(orig, &c) {
				t.Fatalf("content changed beyond parts dropped or replaced:\n%s\n%s", orig, sent)
			}
		})
	})
}

// cutFrom reports whether c is the content raw decodes to cut down: the
// same role, a subsequence of its parts, each as it came, or a function
// response or call with the same id and name (its response or arguments
// replaced) and the same other fields.
func cutFrom(raw []byte, c *genai.Content) bool {
	var o genai.Content
	if json.Unmarshal(raw, &o) != nil || o.Role != c.Role {
		return false
	}
	j := 0
	for _, q := range c.Parts {
		for j < len(o.Parts) && !samePart(o.Parts[j], q) {
			j++
		}
		if j == len(o.Parts) {
			return false
		}
		j++
	}
	return true
}

// samePart reports whether q is p, or p with its function response's
// response or its function call's arguments alone replaced.
func samePart(p, q *genai.Part) bool {
	if p == nil || q == nil {
		return p == q
	}
	pc, qc := *p, *q
	if p.FunctionResponse != nil && q.FunctionResponse != nil {
		a, b := *p.FunctionResponse, *q.FunctionResponse
		a.Response, b.Response, a.Parts, b.Parts = nil, nil, nil, nil
		pc.FunctionResponse, qc.FunctionResponse = &a, &b
	}
	if p.FunctionCall != nil && q.FunctionCall != nil {
		a, b := *p.FunctionCall, *q.FunctionCall
		a.Args, b.Args, a.PartialArgs, b.PartialArgs = nil, nil, nil, nil
		pc.FunctionCall, qc.FunctionCall = &a, &b
	}
	x, _ := json.Marshal(&pc)
	y, _ := json.Marshal(&qc)
	return bytes.Equal(x, y)
}

// wireCanned is an upstream that reads the request's body and answers at
// once with a small response: what BenchmarkWireTransport measures is
// the Transport's own work.
type wireCanned struct{}

func (wireCanned) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	_ = req.Body.Close()
	body := `{"candidates":[{"content":{"role":"model","parts":[{"text":"Done."}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":2,"totalTokenCount":1002}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json; charset=UTF-8"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// BenchmarkWireTransport is package wire's BenchmarkTransport for a
// generateContent body of 100k tokens (Heuristic count: a thinking tool
// loop, wireLoopBody's, of signed thoughts and function calls and their
// function responses), the model's window half of it: the latency
// wire.Transport adds with this adapter's codec over sending the body
// untouched, p50 and p99 of one request; "grow" is
// "trim" for a client that appends a turn on every request.
func BenchmarkWireTransport(b *testing.B) {
	RegisterWire()
	const sys = "You are a coding agent."
	one := history.EstimateText(wireLoopBody(1, 3, 60, "", sys))
	body := []byte(wireLoopBody(max(100_000/one, 1), 3, 60, "", sys))
	window := func(_ context.Context, name string) (models.Model, error) {
		return models.Model{Name: name, Provider: "google", Window: 50_000}, nil
	}
	tr := &hwire.Transport{Base: wireCanned{}, Logger: slog.New(slog.DiscardHandler), Models: window}
	var ev hwire.Event // one request first: what is measured is a trim
	check := &hwire.Transport{Base: wireCanned{}, Logger: slog.New(slog.DiscardHandler), Models: window,
		OnEvent: func(e hwire.Event) { ev = e }}
	req, _ := http.NewRequest(http.MethodPost, "http://upstream"+wirePath, bytes.NewReader(body))
	if resp, err := check.RoundTrip(req); err != nil {
		b.Fatal(err)
	} else {
		_ = resp.Body.Close()
	}
	if !ev.Trimmed || ev.Err != nil {
		b.Fatalf("the body was not trimmed: %+v", ev)
	}
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
					bodies = append(bodies, []byte(wireLoopBody(max(100_000/one, 1)+k, 3, 60, "", sys)))
				}
				tr := &hwire.Transport{Base: wireCanned{}, Logger: slog.New(slog.DiscardHandler), Models: window}
				latency.Cycle(b, tr, "http://upstream"+wirePath, bodies, false)
				return
			}
			latency.Requests(b, rt, "http://upstream"+wirePath, body, false)
		})
	}
}

// TestWireMemo: the codec sends the same bytes whether each content is
// decoded afresh (the memo off), decoded once and kept (cold, then warm),
// over tool loops with thoughts and signatures, at budgets from whole to
// the latest step alone.
func TestWireMemo(t *testing.T) {
	trim := func(body []byte, budget int) []byte { return wireTrim(t, body, budget) }
	defer func(bound int) { decoded.Bound = bound; decoded.Reset() }(decoded.Bound)
	for _, body := range []string{
		wireLoopBody(6, 3, 60, "", "You are a coding agent."),
		wireLoopBody(12, 1, 200, "", ""),
		`{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{"x":1}},"thoughtSignature":"AA=="}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"` + strings.Repeat("word ", 300) + `"}}}]},{"role":"user","parts":[{"text":"next"}]}]}`,
	} {
		full := history.EstimateText(body)
		for _, budget := range []int{full * 2, full / 2, full / 4, full / 10, 1} {
			decoded.Bound = 1 // nothing kept: decoded afresh
			decoded.Reset()
			want := trim([]byte(body), budget)
			decoded.Bound = 0
			decoded.Reset()
			for _, pass := range []string{"cold", "warm"} {
				if got := trim([]byte(body), budget); !bytes.Equal(got, want) {
					t.Errorf("budget %d, memo %s:\n got %s\nwant %s", budget, pass, got, want)
				}
			}
		}
	}
}

// wireTrim returns the body the wire's codec sends for body trimmed to
// budget (results elided, arguments cleared), or "error: " and the error
// when it sends none.
func wireTrim(t *testing.T, body []byte, budget int) []byte {
	t.Helper()
	r, err := hwire.Parse(wirePath, body)
	if err != nil {
		t.Fatal(err)
	}
	opts := []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 1})}
	out, _, _, err := rawCodec.Decide(r.Body([]json.RawMessage{}), r.Messages(), budget, opts,
		func(hist []history.Message, opts []history.Option) (history.Result, error) {
			return history.TrimToRecentTurns(hist, budget, opts...)
		})
	if out == nil {
		return []byte("error: " + fmt.Sprint(err))
	}
	return r.Body(out)
}

// TestWireSplice: a content the trim cuts down is written over the bytes
// it came in (splice), not encoded from genai's types: members genai does
// not know (on the content, on a part, inside a function response or
// call) and the spacing of what is kept stay, and what is sent decodes
// to what the encoding gave. Tool loops at budgets that elide responses
// and clear arguments.
func TestWireSplice(t *testing.T) {
	encoded := adapt.Raw(codec, rawSystem, decodeContent, func(c **genai.Content) ([]byte, error) { return json.Marshal(*c) })
	decide := func(c *adapt.Codec[json.RawMessage, json.RawMessage], r *hwire.Request, budget int) ([]json.RawMessage, []int) {
		opts := []history.Option{history.WithElision(history.ElideOptions{ClearArguments: 1})}
		out, _, from, err := c.Decide(r.Body([]json.RawMessage{}), r.Messages(), budget, opts,
			func(hist []history.Message, opts []history.Option) (history.Result, error) {
				return history.TrimToRecentTurns(hist, budget, opts...)
			})
		if out == nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		return out, from
	}
	// Turns of a write whose call carries its file (arguments worth
	// clearing) and whose response is long, with members genai does not
	// know on the contents, the parts and inside the call and response.
	var odd strings.Builder
	odd.WriteString(`{"contents":[`)
	for i := range 6 {
		if i > 0 {
			odd.WriteString(",")
		}
		fmt.Fprintf(&odd, `{"role":"user","parts":[{"text":"Task %d: write f%d."}]},`, i, i)
		fmt.Fprintf(&odd, `{"role":"model","x_content":{"k":"v"},"parts":[{"functionCall":{"id":"w%d","name":"write_file","args":{"path":"f%d.go","text":"%s"},"x_fc":2},"x_part":[1]}]},`,
			i, i, strings.Repeat("new file line ", 150))
		fmt.Fprintf(&odd, `{"role":"user","x_content":{"k":"v"},"parts":[ {"x_part":"before","functionResponse":{"x_fr":true,"id":"w%d","name":"write_file","response":{"output":"%s"}}} ]}`,
			i, strings.Repeat("long file line ", 200))
	}
	odd.WriteString(`]}`)
	spliced, unknown := 0, 0
	seen := map[string]int{}
	for _, body := range []string{odd.String(), wireLoopBody(8, 3, 80, "", "You are a coding agent.")} {
		r, err := hwire.Parse(wirePath, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		items := r.Messages()
		full := history.EstimateText(body)
		for _, budget := range []int{full * 9 / 10, full * 3 / 4, full / 2, full / 4, full / 10} {
			got, from := decide(rawCodec, r, budget)
			want, wantFrom := decide(encoded, r, budget)
			if !slices.Equal(from, wantFrom) {
				t.Fatalf("budget %d: contents kept %v, encoded %v", budget, from, wantFrom)
			}
			for k, b := range got {
				i := from[k]
				if i < 0 || bytes.Equal(b, items[i]) {
					continue
				}
				spliced++
				var g, w genai.Content
				if err := json.Unmarshal(b, &g); err != nil {
					t.Fatalf("budget %d: content %d does not decode: %v\n%s", budget, k, err, b)
				}
				if err := json.Unmarshal(want[k], &w); err != nil {
					t.Fatal(err)
				}
				if gb, wb := mustJSON(t, &g), mustJSON(t, &w); !bytes.Equal(gb, wb) {
					t.Errorf("budget %d: content %d decodes to\n%s\nthe encoding to\n%s", budget, k, gb, wb)
				}
				for _, m := range []string{`"x_content":{"k":"v"}`, `"x_content":true`, `"x_part":[1]`, `"x_part":"before"`, `"x_fr":true`, `"x_fc":2`, `"x_vendor" : { "a" : [ 1, 2 ] }`} {
					if bytes.Contains(items[i], []byte(m)) {
						unknown++
						seen[m]++
						if !bytes.Contains(b, []byte(m)) {
							t.Errorf("budget %d: content %d lost %s:\n%s", budget, k, m, b)
						}
					}
				}
			}
		}
	}
	if spliced < 10 || unknown < 10 {
		t.Fatalf("%d contents cut down, %d unknown members in them: the budgets cut too little", spliced, unknown)
	}
	t.Logf("%d contents cut down, %d unknown members in them kept: %v", spliced, unknown, seen)
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWireReads: plain keeps its reading only of a content decodeContent
// kept (a content a caller built may change between two calls, and its
// reading with it), and only for the role and index it was read at (a
// call without an id reads with an id made from the index). Each case
// with its reason.
func TestWireReads(t *testing.T) {
	defer func(bound int) { decoded.Bound = bound; decoded.Reset(); wireReads.reset() }(decoded.Bound)
	decoded.Bound = 0
	decoded.Reset()
	wireReads.reset()
	raw := json.RawMessage(`{"role":"model","parts":[{"functionCall":{"name":"read","args":{"path":"a.go"}}}]}`)
	args := func(m history.Message) string { return m.ToolCalls[0].Arguments }

	t.Run("a content a caller built is read anew after it changes", func(t *testing.T) {
		c := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: "read", Args: map[string]any{"path": "a.go"}}}}}
		first, err := plain(c, history.RoleAssistant, 1)
		if err != nil {
			t.Fatal(err)
		}
		c.Parts[0].FunctionCall.Args["path"] = "b.go"
		second, err := plain(c, history.RoleAssistant, 1)
		if err != nil {
			t.Fatal(err)
		}
		if args(first) == args(second) {
			t.Errorf("arguments read %s both times: the first reading was kept", args(second))
		}
	})
	t.Run("a decoded content is read once for its role and index", func(t *testing.T) {
		c := decodeContent(raw)
		if decodeContent(raw) != c {
			t.Fatal("the content was not kept (setup)")
		}
		want, err := plainOnce(c, history.RoleAssistant, 3)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := wireReads.get(c, history.RoleAssistant, 3); ok {
			t.Fatal("a reading was kept before any (setup)")
		}
		got, _ := plain(c, history.RoleAssistant, 3)
		kept, ok := wireReads.get(c, history.RoleAssistant, 3)
		if !ok || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(kept, want) {
			t.Errorf("read %+v, kept %+v (%v), want %+v", got, kept, ok, want)
		}
		at5, _ := plain(c, history.RoleAssistant, 5)
		if want5, _ := plainOnce(c, history.RoleAssistant, 5); !reflect.DeepEqual(at5, want5) || at5.ToolCalls[0].ID == got.ToolCalls[0].ID {
			t.Errorf("at index 5: %+v, want %+v, with another synthetic id than at 3 (%s)", at5, want5, got.ToolCalls[0].ID)
		}
	})
	t.Run("a content decoded but not kept (the memo past its bound) is not kept either", func(t *testing.T) {
		decoded.Bound = 1
		decoded.Reset()
		c := decodeContent(raw)
		if _, err := plain(c, history.RoleAssistant, 2); err != nil {
			t.Fatal(err)
		}
		if _, ok := wireReads.get(c, history.RoleAssistant, 2); ok {
			t.Error("the reading of a content the decode memo did not keep was kept")
		}
	})
}

// TestWireElided: elide's copies of a part are kept only for a content
// decodeContent kept (a caller's content may change between two calls),
// one per part of it and for the latest text, so that a transcript
// resent gives the same copies and the memo stays as large as the
// contents it keeps.
func TestWireElided(t *testing.T) {
	defer func(bound int) { decoded.Bound = bound; decoded.Reset(); wireReads.reset() }(decoded.Bound)
	decoded.Bound = 0
	decoded.Reset()
	wireReads.reset()
	raw := json.RawMessage(`{"role":"user","parts":[{"functionResponse":{"id":"a","name":"read","response":{"output":"long result a"}}},{"functionResponse":{"id":"b","name":"read","response":{"output":"long result b"}}}]}`)
	same := func(got *genai.Part, p *genai.Part, text string) {
		t.Helper()
		if want := elide(p, text); !reflect.DeepEqual(got, want) {
			t.Fatalf("elided %+v, want %+v", got.FunctionResponse, want.FunctionResponse)
		}
	}

	t.Run("a content a caller built gets a new copy each time", func(t *testing.T) {
		c := decodeOnce(raw)
		first := wireReads.elided(c, c.Parts[0], "[elided]")
		same(first, c.Parts[0], "[elided]")
		if wireReads.elided(c, c.Parts[0], "[elided]") == first {
			t.Error("the copy of a part of a content decodeContent did not keep was kept")
		}
	})
	t.Run("a decoded content keeps one copy a part, for its latest text", func(t *testing.T) {
		c := decodeContent(raw)
		if decodeContent(raw) != c {
			t.Fatal("the content was not kept (setup)")
		}
		before := wireReads.bytes
		a := wireReads.elided(c, c.Parts[0], "[elided a]")
		same(a, c.Parts[0], "[elided a]")
		if wireReads.elided(c, c.Parts[0], "[elided a]") != a {
			t.Error("the same part elided alike was copied again")
		}
		if wireReads.bytes <= before {
			t.Error("the copy kept was not counted toward the bound")
		}
		b := wireReads.elided(c, c.Parts[1], "[elided b]")
		same(b, c.Parts[1], "[elided b]")
		a2 := wireReads.elided(c, c.Parts[0], "[elided again]")
		same(a2, c.Parts[0], "[elided again]")
		if a2 == a || wireReads.elided(c, c.Parts[0], "[elided again]") != a2 {
			t.Error("a part elided with another text did not replace its copy")
		}
		if c.Parts[0].FunctionResponse.Response["output"] != "long result a" {
			t.Error("eliding modified the content")
		}
		// A part that is not the content's (none is passed; the bound
		// holds whatever is): the content has two parts, and keeps two.
		for range 5 {
			stranger := &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "x", Name: "read"}}
			same(wireReads.elided(c, stranger, "[x]"), stranger, "[x]")
		}
		wireReads.mu.Lock()
		n := len(wireReads.m[c].elided)
		wireReads.mu.Unlock()
		if n != len(c.Parts) {
			t.Errorf("%d copies kept for a content of %d parts", n, len(c.Parts))
		}
	})
}

// TestSplicePlanKeys: plans that write different responses have
// different keys (the kept splice is found by its key), whatever bytes the
// elided texts hold: the same texts split differently between two parts,
// texts holding the key's own separators, a text and the encoding of
// another response.
func TestSplicePlanKeys(t *testing.T) {
	resp := func(id string) *genai.Part {
		return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "f", Response: map[string]any{"output": "long result " + id}}}
	}
	was := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{resp("a"), resp("b")}}
	plan := func(texts ...any) string {
		now := &genai.Content{Role: genai.RoleUser}
		for k, x := range texts {
			r := map[string]any{"output": x}
			if m, ok := x.(map[string]any); ok {
				r = m
			}
			now.Parts = append(now.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: was.Parts[k].FunctionResponse.ID, Name: "f", Response: r}})
		}
		p, ok := planSplice(was, now, nil)
		if !ok {
			t.Fatalf("no plan for %q", texts)
		}
		return string(p.key)
	}
	cases := []struct {
		reason string
		a, b   []any
	}{
		{"the same bytes split differently between two parts", []any{"ab", "c"}, []any{"a", "bc"}},
		{"texts holding what separates two parts in a key", []any{"a\x001functionResponse\x01b", "X"}, []any{"a", "b\x001functionResponse\x01X"}},
		{"a text and another response's encoding", []any{`{"output":"t"}`, "w"}, []any{map[string]any{"output": "t", "n": 1.0}, "w"}},
	}
	for _, c := range cases {
		if plan(c.a...) == plan(c.b...) {
			t.Errorf("%s: the plans for %q and %q have the same key", c.reason, c.a, c.b)
		}
	}
	if first, again := plan("t", "w"), plan("t", "w"); first != again {
		t.Error("the same plan twice has two keys")
	}
}

// TestPlanArraysReused: the arrays of a conversion's plan (a message and
// three entries per content) go, emptied, to the next conversion once
// convertContents has built its messages from them: a later conversion
// that reuses them converts as one with fresh arrays, and the emptied
// arrays keep no content's memory alive.
func TestPlanArraysReused(t *testing.T) {
	// One processor: what a request gives back, the next one takes (a
	// Pool keeps an item per processor).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	r, err := hwire.Parse("/v1beta/models/gemini-2.5-pro:generateContent", []byte(wireLoopBody(6, 3, 40, "", "")))
	if err != nil {
		t.Fatal(err)
	}
	var contents []*genai.Content
	for _, m := range r.Messages() {
		contents = append(contents, decodeContent(m))
	}
	for plans.Get() != nil { // another test's arrays: this one's come next
	}
	want, wantSlots, err := convertContents(0, contents)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := plans.Get().(*contentPlan)
	if p == nil {
		if !race.Enabled { // (sync.Pool drops what it is given at random under it)
			t.Fatal("the plan's arrays were not released")
		}
	} else {
		for i := range p.model[:cap(p.model)] {
			if !reflect.ValueOf(p.model[:cap(p.model)][i]).IsZero() || p.drop[:cap(p.drop)][i] ||
				p.answers[:cap(p.answers)][i] != nil || p.answered[:cap(p.answered)][i] != nil {
				t.Fatalf("entry %d of the released plan still set", i)
			}
		}
		plans.Put(p)
	}
	got, gotSlots, err := convertContents(0, contents)
	if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotSlots, wantSlots) {
		t.Fatalf("a conversion on reused arrays differs from one on fresh arrays (%v)", err)
	}
}

// TestConversionArraysReused: the messages and slots of the wire codec's
// conversion go, emptied, to the next conversion once the decision is
// written to bytes (View.Release): the bodies sent from reused arrays are
// those sent from fresh ones, and the arrays given back keep no message's
// memory alive.
func TestConversionArraysReused(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1)) // see TestPlanArraysReused
	body := []byte(wireLoopBody(8, 3, 60, "", "You are a coding agent."))
	full := history.EstimateText(string(body))
	// taken returns arrays given back to regroup.TakeArrays, if any.
	taken := func() (*regroup.Arrays, []history.Message, []regroup.Slot) {
		a := regroup.TakeArrays()
		h, sl := a.Make(0, 0)
		return a, h, sl
	}
	drain := func() {
		for { // another decision's arrays
			if _, h, _ := taken(); cap(h) == 0 {
				return
			}
		}
	}
	budgets := []int{full / 2, full / 4, full / 10}
	var fresh [][]byte
	for _, b := range budgets {
		drain() // each decided on fresh arrays
		out := wireTrim(t, body, b)
		if bytes.HasPrefix(out, []byte("error: ")) {
			t.Fatalf("budget %d: %s", b, out)
		}
		fresh = append(fresh, out)
	}
	a, h, sl := taken()
	if cap(h) == 0 {
		if !race.Enabled { // (sync.Pool drops what it is given at random under it)
			t.Fatal("the conversion's arrays were not released")
		}
	} else {
		for i, m := range h[:cap(h)] {
			if !reflect.ValueOf(m).IsZero() {
				t.Fatalf("message %d of the released arrays still set", i)
			}
		}
		for i, s := range sl[:cap(sl)] {
			if !reflect.ValueOf(s).IsZero() {
				t.Fatalf("slot %d of the released arrays still set", i)
			}
		}
		a.Give(h, sl)
	}
	for round := range 2 {
		for i, b := range budgets { // on the arrays of the decision before
			if got := wireTrim(t, body, b); !bytes.Equal(got, fresh[i]) {
				t.Fatalf("round %d, budget %d: the body sent from reused arrays differs", round, b)
			}
		}
	}
}

// TestWireBodyNotRetained: a loop of the real genai client through the
// Transport with this adapter's codec, every request body the Transport is
// done with held weakly (retained.Watch): none is reachable once the
// collector ran, so that nothing the codec keeps (its memos of decoded
// contents, readings and splices, the conversations) holds a body's bytes,
// which the Transport reads the next request into.
func TestWireBodyNotRetained(t *testing.T) {
	RegisterWire()
	check := retained.Watch(t)
	l := adaptertest.NewLoop("gemini/wire/retained", adaptertest.Modes()[0], 16_000)
	l.Turns = 12
	runWireLoop(t, l, false)
	if s := l.Stats(); s.Errors > 0 {
		t.Fatalf("%d failed turns", s.Errors)
	}
	if n := check(); n < l.Turns {
		t.Fatalf("%d bodies released in %d turns: the check watched too little", n, l.Turns)
	}
}
