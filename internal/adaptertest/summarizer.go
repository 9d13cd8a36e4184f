package adaptertest

// The tests every adapter's ready-made Summarizer runs, with its SDK's
// real client against a local server that speaks its wire format: the
// plain and cache-safe forms on the wire, the provider's errors, timeouts,
// a reply over the cap, and a Trimmer that never waits for a summary in
// background mode and falls back to its breadcrumb on every failure.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
)

// Summarizer is what the tests use of an adapter's ready-made Summarizer.
type Summarizer interface {
	history.Summarizer
	Option() history.Option
}

// SummaryTrimmer is an adapter's stateful trimmer as the Summarizer tests
// use it.
type SummaryTrimmer[N any] interface {
	TrimContext(ctx context.Context, transcript []N, budget int) ([]N, history.Result, error)
	Close() error
	SummaryDone() <-chan struct{}
	Summary() (history.SummaryInfo, bool)
}

// ErrorAnswer is an error the provider answers with, as it sends it.
type ErrorAnswer struct {
	Name   string
	Status int
	// ContentType is application/json when empty.
	ContentType string
	Body        string
}

// OpenAIErrors are OpenAI's answers to a request it refuses, each from
// the source its comment names: the errors of every Summarizer that
// speaks OpenAI's wire format (chat completions, Responses).
var OpenAIErrors = []ErrorAnswer{
	// chathub-dev/chathub#126. The summariser then sends the plain form,
	// which the provider refuses too.
	{Name: "400 context_length_exceeded", Status: http.StatusBadRequest,
		Body: `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
	// TheR1D/shell_gpt#653.
	{Name: "429 tokens per minute", Status: http.StatusTooManyRequests,
		Body: `{"error":{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`},
	// The message as code handling OpenAI's 500s quotes it (find_string
	// "server had an error while processing your request"), in
	// OpenAI's error envelope.
	{Name: "500 server_error", Status: http.StatusInternalServerError,
		Body: `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`},
	// danielmiessler/Fabric#1299: the summariser's model is unknown.
	{Name: "400 invalid model", Status: http.StatusBadRequest,
		Body: `{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`},
	// nginx's default 502 page, from a proxy in front of the API.
	{Name: "502 HTML page", Status: http.StatusBadGateway, ContentType: "text/html",
		Body: "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"},
}

// Summary describes an adapter's ready-made Summarizer to Run, for native
// messages of type N.
type Summary[N any] struct {
	// Path is the end of the path the SDK posts its requests to.
	Path string
	// List is the key of the conversation in a request's JSON body:
	// "messages", "input", "contents".
	List string
	// Caps are the keys of the reply's cap in a request's JSON body,
	// dotted for a nested one ("generationConfig.maxOutputTokens"): a
	// summary request sets them, the cache-safe form changes nothing else.
	Caps []string
	// Reply is the provider's answer to a request, whose reply is text;
	// cut: it stopped at its cap.
	Reply func(text string, cut bool) string
	// Errors are the provider's real error answers (each with its
	// source, in the adapter's test).
	Errors []ErrorAnswer
	// New returns the adapter's Summarizer with cfg, whose client sends
	// to url, without retries.
	New func(url string, cfg summarize.Config) Summarizer
	// NewTrimmer returns the adapter's Trimmer with opts, for the system
	// prompt Send sends.
	NewTrimmer func(opts ...history.Option) SummaryTrimmer[N]
	// Open returns the opening of a conversation: the task (at index
	// Task), a call of a tool, its result, an answer.
	Open func() []N
	Task int
	// User and Assistant return native messages holding text.
	User, Assistant func(text string) N
	// ToHistory converts native messages.
	ToHistory func(msgs []N) ([]history.Message, error)
	// Send sends msgs, with a system prompt and a tool, through the SDK
	// client of s to url, recording the request with s as it is sent,
	// and returns the text of the reply.
	Send func(ctx context.Context, s Summarizer, url string, msgs []N) (string, error)
}

// Run runs the tests of the adapter's Summarizer.
func (c *Summary[N]) Run(t *testing.T) {
	t.Run("plain", c.plain)
	t.Run("cache-safe", c.cacheSafe)
	t.Run("bound", c.bound)
	t.Run("background", c.background)
	t.Run("errors", c.errors)
	t.Run("timeout", c.timeout)
	t.Run("over the cap", c.overCap)
}

// The texts of the tests' conversation opening (Summary.Open): the task,
// and the file a tool read.
const (
	SummaryTask = "Task: write a JSON parser in Go, with no dependencies; keep the API small."
	SummaryFile = "package main\n\nfunc main() {}\n"
)

// ChatReply is a chat completion whose reply is text, as OpenAI answers
// it; cut: it stopped at its cap (finish_reason "length"). Every
// Summarizer that speaks the chat-completions format is answered with it.
func ChatReply(text string, cut bool) string {
	finish := "stop"
	if cut {
		finish = "length"
	}
	content, _ := json.Marshal(text)
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4.1",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(content) + `,"refusal":null},"finish_reason":"` + finish + `"}],` +
		`"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940,"prompt_tokens_details":{"cached_tokens":768}}}`
}

// Markers of the summary requests and their replies.
const (
	// summaryMark is in every summary request (Prompt's) and in no other.
	summaryMark = "Files and resources:"
	// summaryText is the reply to a summary request, numbered.
	summaryText = "Task: the parser. Decisions: a hand-written lexer. Summary number "
)

// wire is a request the server received.
type wire struct {
	body    []byte
	summary bool
}

// summaryServer is a provider that answers the conversation's requests
// with short replies and its summary requests as answer says.
type summaryServer[N any] struct {
	c   *Summary[N]
	t   *testing.T
	url string

	mu     sync.Mutex
	reqs   []wire
	answer func(r *http.Request, n int) ErrorAnswer
	seen   chan struct{} // receives a value for each summary request
}

// serve starts the server of c; answer answers the n-th summary request
// (from 1); nil: summaryText numbered.
func (c *Summary[N]) serve(t *testing.T, answer func(r *http.Request, n int) ErrorAnswer) *summaryServer[N] {
	s := &summaryServer[N]{c: c, t: t, answer: answer, seen: make(chan struct{}, 64)}
	hs := httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return s
}

func (s *summaryServer[N]) handle(w http.ResponseWriter, r *http.Request) {
	body := new(bytes.Buffer)
	_, _ = body.ReadFrom(r.Body)
	if !strings.HasSuffix(r.URL.Path, s.c.Path) {
		s.t.Errorf("a request to %s", r.URL.Path)
	}
	sum := bytes.Contains(body.Bytes(), []byte(summaryMark))
	s.mu.Lock()
	s.reqs = append(s.reqs, wire{body: body.Bytes(), summary: sum})
	n, all := 0, len(s.reqs)
	for _, q := range s.reqs {
		if q.summary {
			n++
		}
	}
	s.mu.Unlock()
	a := ErrorAnswer{Status: http.StatusOK, Body: s.c.Reply("Noted, step "+strconv.Itoa(all)+".", false)}
	if sum {
		s.seen <- struct{}{}
		a.Body = s.c.Reply(summaryText+strconv.Itoa(n)+".", false)
		if s.answer != nil {
			a = s.answer(r, n)
		}
	}
	Answer(w, a.Status, a.ContentType, "application/json", a.Body)
}

// requests returns what the server received.
func (s *summaryServer[N]) requests() []wire {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wire(nil), s.reqs...)
}

// conversation is a conversation of the tests: a transcript, the
// adapter's Trimmer with the Summarizer, and the events of its trims.
type conversation[N any] struct {
	c          *Summary[N]
	srv        *summaryServer[N]
	sum        Summarizer
	tr         SummaryTrimmer[N]
	transcript []N

	slowest time.Duration // the longest trim

	mu     sync.Mutex
	events []history.Event
}

// budget is the trims' budget: the opening and five turns fit, and the
// summary's room (summaryTokens) with them.
const (
	budget        = 1000
	summaryTokens = 200
)

// start begins a conversation whose Summarizer has so (MaxTokens
// summaryTokens when 0), whose Trimmer pins the task.
func (c *Summary[N]) start(t *testing.T, srv *summaryServer[N], so history.SummaryOptions) *conversation[N] {
	if so.MaxTokens == 0 {
		so.MaxTokens = summaryTokens
	}
	cv := &conversation[N]{c: c, srv: srv, sum: c.New(srv.url, summarize.Config{Summary: so}), transcript: c.Open()}
	cv.tr = c.NewTrimmer(cv.sum.Option(), history.WithPin(c.Task), history.WithOnTrim(func(e history.Event) {
		cv.mu.Lock()
		defer cv.mu.Unlock()
		cv.events = append(cv.events, e)
	}))
	t.Cleanup(func() { _ = cv.tr.Close() })
	return cv
}

// turn adds a user turn, trims, sends and adds the reply; it returns
// what was sent and the trim's Result. It fails t when the trim takes
// longer than wait.
func (cv *conversation[N]) turn(t *testing.T, i int, wait time.Duration) ([]N, history.Result) {
	t.Helper()
	cv.transcript = append(cv.transcript, cv.c.User("Question "+strconv.Itoa(i)+": "+strings.Repeat("how does the parser handle nested arrays and escapes? ", 6)))
	start := time.Now()
	out, res, err := cv.tr.TrimContext(context.Background(), cv.transcript, budget)
	if err != nil {
		t.Fatalf("turn %d: trim: %v", i, err)
	}
	d := time.Since(start)
	if d > wait {
		t.Fatalf("turn %d: the trim took %v (at most %v)", i, d, wait)
	}
	cv.slowest = max(cv.slowest, d)
	reply, err := cv.c.Send(context.Background(), cv.sum, cv.srv.url, out)
	if err != nil {
		t.Fatalf("turn %d: send: %v", i, err)
	}
	cv.transcript = append(cv.transcript, cv.c.Assistant(reply))
	return out, res
}

// statuses returns the Summary outcomes of the events so far, and clears
// them.
func (cv *conversation[N]) statuses() []string {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	var out []string
	for _, e := range cv.events {
		if e.Summary != "" {
			out = append(out, e.Summary)
		}
	}
	cv.events = nil
	return out
}

// until runs turns until a trim reports status, at most n turns; it
// returns the turn's output and Result.
func (cv *conversation[N]) until(t *testing.T, status string, n int, wait time.Duration) ([]N, history.Result) {
	t.Helper()
	for i := range n {
		out, res := cv.turn(t, i, wait)
		for _, s := range cv.statuses() {
			if s == status {
				return out, res
			}
		}
	}
	t.Fatalf("no trim of %d turns reported %q", n, status)
	return nil, history.Result{}
}

// dropped returns the opening converted and a previous summary, as a
// Trimmer would hand them to the Summarizer.
func (c *Summary[N]) dropped(t *testing.T) ([]history.Message, *history.Message) {
	hist, err := c.ToHistory(c.Open())
	if err != nil {
		t.Fatal(err)
	}
	prev := history.Message{Role: history.RoleUser, Content: "[Summary of 2 earlier turn(s): 4 messages, about 90 tokens]\nThe user asked for a JSON parser in Go.", Kind: history.KindSummary}
	return hist, &prev
}

// plain: nothing recorded, a summary request of its own holds the
// dropped messages and the previous summary as a transcript, and the
// reply is a user message holding its text.
func (c *Summary[N]) plain(t *testing.T) {
	srv := c.serve(t, nil)
	s := c.New(srv.url, summarize.Config{Model: "summary-model", Summary: history.SummaryOptions{MaxTokens: summaryTokens}})
	dropped, prev := c.dropped(t)
	got, err := s.Summarize(context.Background(), dropped, prev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != history.RoleUser || got.Content != summaryText+"1." {
		t.Errorf("summary %+v", got)
	}
	reqs := srv.requests()
	if len(reqs) != 1 || !reqs[0].summary {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, m := range append(dropped, *prev) {
		if m.Content != "" && !bytes.Contains(reqs[0].body, jsonText(m.Content)) {
			t.Errorf("the transcript lacks %q:\n%s", m.Content, reqs[0].body)
		}
	}
}

// jsonText is s as JSON writes it inside a string.
func jsonText(s string) []byte {
	b, _ := json.Marshal(s)
	return b[1 : len(b)-1]
}

// cacheSafe: in a conversation, every summary request is the request
// sent before it, byte for byte, with the instruction appended and the
// reply capped; the summary is in the next request.
func (c *Summary[N]) cacheSafe(t *testing.T) {
	srv := c.serve(t, nil)
	cv := c.start(t, srv, history.SummaryOptions{})
	// Two summaries: the second folds in the first, which the last
	// request holds.
	for n := 1; n <= 2; n++ {
		out, _ := cv.until(t, history.SummaryWritten, 20, time.Minute)
		hist, err := c.ToHistory(out)
		if err != nil {
			t.Fatal(err)
		}
		if !holds(hist, summaryText+strconv.Itoa(n)+".") {
			t.Errorf("the request after summary %d does not hold it", n)
		}
	}
	var main []byte
	n := 0
	for _, r := range srv.requests() {
		if !r.summary {
			main = r.body
			continue
		}
		n++
		ins, err := extends(main, r.body, c.List, c.Caps)
		if err != nil {
			t.Fatalf("summary request %d is not the last request plus one message: %v\nlast:    %s\nsummary: %s", n, err, main, r.body)
		}
		want := [][]byte{[]byte("Pause the task"), []byte("stay in the conversation word for word"), jsonText(SummaryTask)}
		if n > 1 {
			want = append(want, []byte("It opens with an earlier summary"))
		}
		for _, w := range want {
			if !bytes.Contains(ins, w) {
				t.Errorf("instruction %d lacks %q: %s", n, w, ins)
			}
		}
		t.Logf("cache-safe: summary request %d repeats the last request's %d bytes of %s byte for byte, and every other field but %v, and appends %d bytes",
			n, listBytes(main, c.List), c.List, c.Caps, len(ins))
	}
	if n < 2 {
		t.Fatalf("%d summary requests", n)
	}
}

// holds reports whether a message of hist has text containing s.
func holds(hist []history.Message, s string) bool {
	for _, m := range hist {
		if strings.Contains(m.Content, s) {
			return true
		}
		for _, p := range m.Parts {
			if strings.Contains(p.Text, s) {
				return true
			}
		}
	}
	return false
}

// bound: when the last request and the instruction exceed InputTokens,
// the summary request is the plain form.
func (c *Summary[N]) bound(t *testing.T) {
	srv := c.serve(t, nil)
	cv := c.start(t, srv, history.SummaryOptions{InputTokens: 700})
	cv.until(t, history.SummaryWritten, 20, time.Minute)
	var main []byte
	for _, r := range srv.requests() {
		if !r.summary {
			main = r.body
			continue
		}
		if _, err := extends(main, r.body, c.List, c.Caps); err == nil {
			t.Fatalf("a cache-safe request over InputTokens: %s", r.body)
		}
	}
}

// background: a Trimmer in background mode never waits for the summary
// (the server holds it), and swaps it in once it is written.
func (c *Summary[N]) background(t *testing.T) {
	release := make(chan struct{})
	srv := c.serve(t, func(r *http.Request, n int) ErrorAnswer {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return ErrorAnswer{Status: http.StatusOK, Body: c.Reply(summaryText+strconv.Itoa(n)+".", false)}
	})
	cv := c.start(t, srv, history.SummaryOptions{Background: true})
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatal("no background summary started in 20 turns")
		}
		cv.turn(t, i, 5*time.Second)
		select {
		case <-cv.tr.SummaryDone():
			continue // none in flight
		default:
		}
		// One started within that trim: wait for its request to reach
		// the server, which holds it.
		select {
		case <-srv.seen:
		case <-time.After(time.Minute):
			t.Fatal("a background summary started, and its request never reached the server")
		}
		break
	}
	// The summary is being written: requests go on without waiting.
	for i := range 3 {
		cv.turn(t, 100+i, 5*time.Second)
	}
	t.Logf("background: the longest trim so far took %v, the one that started the summary and three while the server held it included", cv.slowest)
	close(release)
	<-cv.tr.SummaryDone()
	out, _ := cv.until(t, history.SummaryWritten, 5, 5*time.Second)
	hist, err := c.ToHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	if !holds(hist, summaryText+"1.") {
		t.Errorf("the summary is not in the request after it was written")
	}
	if info, ok := cv.tr.Summary(); !ok || !strings.Contains(info.Message.Content, summaryText+"1.") || info.Turns == 0 || info.Tokens <= 0 || info.UpTo <= info.From {
		t.Errorf("the Trimmer's Summary() = %+v, %v; want the summary sent, with what it covers", info, ok)
	}
	// Written in the cache-safe form, on a request sent before it.
	reqs := srv.requests()
	for i, r := range reqs {
		if !r.summary {
			continue
		}
		safe := false
		for _, q := range reqs[:i] {
			if _, err := extends(q.body, r.body, c.List, c.Caps); err == nil && !q.summary {
				safe = true
			}
		}
		if !safe {
			t.Errorf("the background summary request extends no request sent before it: %s", r.body)
		}
		break
	}
}

// errors: each error of the provider is returned by Summarize, and a
// Trimmer goes on with its breadcrumb.
func (c *Summary[N]) errors(t *testing.T) {
	for _, e := range c.Errors {
		t.Run(e.Name, func(t *testing.T) {
			srv := c.serve(t, func(*http.Request, int) ErrorAnswer { return e })
			cv := c.start(t, srv, history.SummaryOptions{})
			out, res := cv.until(t, history.SummaryFailed, 20, time.Minute)
			checkBreadcrumb(t, c, out, res)
			dropped, prev := c.dropped(t)
			if _, err := cv.sum.Summarize(context.Background(), dropped, prev); err == nil {
				t.Error("Summarize returned no error")
			}
		})
	}
}

// checkBreadcrumb fails t unless the trim's output holds the breadcrumb
// and no summary.
func checkBreadcrumb[N any](t *testing.T, c *Summary[N], out []N, res history.Result) {
	t.Helper()
	hist, err := c.ToHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	if !holds(hist, history.BreadcrumbText) || holds(hist, summaryText) || res.DroppedTurns == 0 {
		t.Errorf("the trim after the failure: dropped %d turns, breadcrumb %v, summary %v",
			res.DroppedTurns, holds(hist, history.BreadcrumbText), holds(hist, summaryText))
	}
}

// timeout: a provider that does not answer makes Summarize return when its
// context ends, and a Trimmer go on with its breadcrumb after Timeout.
func (c *Summary[N]) timeout(t *testing.T) {
	srv := c.serve(t, func(r *http.Request, n int) ErrorAnswer {
		<-r.Context().Done()
		return ErrorAnswer{Status: http.StatusOK, Body: c.Reply("too late", false)}
	})
	cv := c.start(t, srv, history.SummaryOptions{Timeout: 200 * time.Millisecond})
	out, res := cv.until(t, history.SummaryTimeout, 20, 10*time.Second)
	checkBreadcrumb(t, c, out, res)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	dropped, prev := c.dropped(t)
	start := time.Now()
	if _, err := cv.sum.Summarize(ctx, dropped, prev); err == nil || ctx.Err() == nil {
		t.Errorf("Summarize: %v, after %v", err, time.Since(start))
	}
}

// overCap: a summary longer than MaxTokens is not used, nor one the
// provider cut at its cap.
func (c *Summary[N]) overCap(t *testing.T) {
	for _, tt := range []struct {
		name, status string
		cut          bool
	}{{"long", history.SummaryTooLarge, false}, {"cut", history.SummaryFailed, true}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := c.serve(t, func(*http.Request, int) ErrorAnswer {
				return ErrorAnswer{Status: http.StatusOK, Body: c.Reply(strings.Repeat("The parser reads nested arrays. ", 200), tt.cut)}
			})
			cv := c.start(t, srv, history.SummaryOptions{})
			out, res := cv.until(t, tt.status, 20, time.Minute)
			checkBreadcrumb(t, c, out, res)
		})
	}
}
