package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/storekit"
	"github.com/histrim/history/internal/wireapi"
	"github.com/histrim/history/models"
)

// ConversationHeader is the request header that names a request's
// conversation for the [Transport]: requests with the same value share a
// Trimmer (their state in [Transport.Store]). The Transport removes it
// from what it forwards.
const ConversationHeader = "Histrim-Conversation"

// DefaultMaxRetries is how many times a [Transport] resends a request the
// provider refused for its length when [Transport.MaxRetries] is 0.
const DefaultMaxRetries = 2

// Transport is an [http.RoundTripper] that trims every request of the APIs
// [Detect] recognises to the window of the model it names, and passes
// every other request through untouched (see the package documentation
// for what it does per request). Set its fields before the first request;
// the zero value is ready: [http.DefaultTransport] below it, conversations
// kept in memory, models from [models.Lookup].
//
// It never modifies the caller's request or its body, never sends a
// request the provider already refused for its length again, and never
// delays a byte of a response but the opening lifecycle events of a
// streamed Responses answer (response.created, response.in_progress: at
// most 4 events in 1 MiB, for at most 2 seconds after the headers), held
// until the stream's next event shows whether it refuses the input, while
// a resend is left: the usage is read from the bytes as the caller reads
// them. It is safe for concurrent use.
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Store keeps each conversation's Trimmer state, shared by the
	// replicas of a deployment (a Redis or PostgreSQL store); nil keeps
	// it in this Transport's memory. A store that also shares each
	// model's Calibration (LoadCalibration and ObserveShared, as the
	// stores/redis and stores/postgres stores do) is loaded before each
	// trim and told each usage, so that replicas trim as one process;
	// what silent truncations showed of a model's window is then kept in
	// it too (under a key that starts "truncation" and a NUL, which no
	// conversation's key can equal).
	Store history.StateStore
	// Models returns the model a request names (the body's "model", or
	// Gemini's path); nil means models.Lookup. An error forwards the
	// request untouched and is reported in its Event: a window is never
	// guessed. Its answer is kept per API and name (an error only when it
	// wraps models.ErrUnknownModel: another, a discovery that failed, is
	// asked again on the next request).
	Models func(ctx context.Context, name string) (models.Model, error)
	// Options are added after the door's (fit.Options of the model, the
	// request's overhead) to every trim: history.WithOnTrim,
	// history.WithLabels, a policy.
	Options []history.Option
	// MaxRetries bounds the resends of a request refused for its length:
	// 0 means DefaultMaxRetries, a negative value none.
	MaxRetries int
	// OnEvent, when set, receives an [Event] for every request the
	// Transport read, and for every response whose usage shows a silent
	// truncation. It must be safe for concurrent use.
	OnEvent func(Event)
	// OnState, when set, is the history.Conversations OnState of every
	// conversation: where its state came from on each trim (a store that
	// is down shows there).
	OnState func(key, state string)
	// Logger receives the events too (Info for a request trimmed,
	// recovered or forwarded untouched for an error, Warn for a silent
	// truncation, Debug otherwise); nil means slog.Default(). Headers are
	// never logged.
	Logger *slog.Logger

	once   sync.Once
	store  history.StateStore
	mu     sync.Mutex
	models map[string]*model
	// scans keeps the messages arrays read, so that the part of a
	// conversation's array a client resends as it came is not scanned
	// again (scanMemo).
	scans scanMemo
}

// maxModels bounds the model names a Transport remembers (names come
// from requests; past it, a name's answer is not kept).
const maxModels = 1024

// maxErrorBody bounds what is read of an error response to classify it.
const maxErrorBody = 1 << 20

// model is what a Transport keeps per API and model name.
type model struct {
	api     API
	m       models.Model
	err     error
	counter history.Counter
	cal     *history.Calibration

	mu       sync.Mutex
	trunc    truncations    // what silent truncations showed
	observed int            // the responses whose usage the Calibration observed
	groups   map[int]*group // by overhead
}

// group is the conversations of one model whose requests send the same
// overhead (the core's option): the adapt Conversations of the API's
// codec.
type group struct {
	trim    func(ctx context.Context, key string, r *Request, budget int) ([]json.RawMessage, history.Result, error)
	recover func(ctx context.Context, key string, r *Request, providerErr error, attempt int) ([]json.RawMessage, history.Result, error)
	close   func() error
}

// newGroup returns the group of api's requests, trimmed with opts, their
// state in store.
func newGroup(api API, store history.StateStore, opts []history.Option, onState func(key, state string)) *group {
	switch api {
	case Responses, Gemini:
		// The adapter's codec over the raw items (adapt.Raw), given the
		// body without its items: it reads there what the adapter reads of the
		// request's parameters (previous_response_id, conversation,
		// reasoning.context). do checked that it is registered.
		cs := adapt.NewSystemConversations(wireapi.Lookup(api.String()), store, opts)
		cs.OnState = onState
		return &group{
			trim: func(ctx context.Context, key string, r *Request, budget int) ([]json.RawMessage, history.Result, error) {
				return cs.Trim(ctx, key, r.params, r.items, budget)
			},
			recover: func(ctx context.Context, key string, r *Request, perr error, attempt int) ([]json.RawMessage, history.Result, error) {
				return cs.RecoverOverflow(ctx, key, r.params, r.items, perr, attempt)
			},
			close: cs.Close,
		}
	case AnthropicMessages:
		cs := adapt.NewSystemConversations(anthropicCodec, store, opts)
		cs.OnState = onState
		return &group{
			trim: func(ctx context.Context, key string, r *Request, budget int) ([]json.RawMessage, history.Result, error) {
				return cs.Trim(ctx, key, r.system, r.items, budget)
			},
			recover: func(ctx context.Context, key string, r *Request, perr error, attempt int) ([]json.RawMessage, history.Result, error) {
				return cs.RecoverOverflow(ctx, key, r.system, r.items, perr, attempt)
			},
			close: cs.Close,
		}
	}
	cs := adapt.NewConversations(chatCodec, struct{}{}, store, opts)
	cs.OnState = onState
	return &group{
		trim: func(ctx context.Context, key string, r *Request, budget int) ([]json.RawMessage, history.Result, error) {
			return cs.Trim(ctx, key, r.items, budget)
		},
		recover: func(ctx context.Context, key string, r *Request, perr error, attempt int) ([]json.RawMessage, history.Result, error) {
			return cs.RecoverOverflow(ctx, key, r.items, perr, attempt)
		},
		close: cs.Close,
	}
}

// maxGroups bounds the overheads a model keeps conversations for.
const maxGroups = 64

func (t *Transport) init() {
	t.once.Do(func() {
		t.store = t.Store
		if t.store == nil {
			t.store = &history.MemoryStateStore{}
		}
		t.models = map[string]*model{}
	})
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func (t *Transport) retries() int {
	switch {
	case t.MaxRetries == 0:
		return DefaultMaxRetries
	case t.MaxRetries < 0:
		return 0
	}
	return t.MaxRetries
}

// model returns what the Transport keeps for the model name of api.
func (t *Transport) model(ctx context.Context, api API, name string) *model {
	k := api.String() + "\x00" + name
	t.mu.Lock()
	md, ok := t.models[k]
	t.mu.Unlock()
	if ok {
		return md
	}
	lookup := t.Models
	if lookup == nil {
		lookup = func(_ context.Context, name string) (models.Model, error) { return models.Lookup(name) }
	}
	m, err := lookup(ctx, name)
	if err == nil && (m.Window <= 0 || m.Output < 0) {
		err = errors.New("history/wire: model " + strconv.Quote(name) + " has no window")
	}
	md = &model{api: api, m: m, err: err, groups: map[int]*group{}}
	if err == nil {
		md.counter = fit.Counter(m)
		md.cal = new(history.Calibration)
	}
	if err != nil && !errors.Is(err, models.ErrUnknownModel) {
		return md // a server that did not answer, a context done: ask again next time
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev, ok := t.models[k]; ok {
		return prev
	}
	if len(t.models) < maxModels {
		t.models[k] = md
	}
	return md
}

// group returns the model's conversations for requests of api whose
// overhead is overhead.
func (t *Transport) group(md *model, overhead int) *group {
	md.mu.Lock()
	defer md.mu.Unlock()
	if g, ok := md.groups[overhead]; ok {
		return g
	}
	if len(md.groups) >= maxGroups {
		for k, g := range md.groups { // any: a conversation's next trim restores its state
			_ = g.close()
			delete(md.groups, k)
			break
		}
	}
	opts := append(fit.Options(md.m), history.WithCounter(md.counter), history.WithCalibration(md.cal), history.WithOverhead(overhead))
	opts = append(opts, t.Options...)
	g := newGroup(md.api, t.store, opts, t.OnState)
	md.groups[overhead] = g
	return g
}

// budget returns the input budget of a request of md: the door's (the
// window less the output room, less history.MarginShare of the window
// until the model's Calibration is warm), the window being the one a
// silent truncation showed when it is smaller.
func (md *model) budget(r *Request) int {
	md.mu.Lock()
	w := md.m.Window
	if md.trunc.Window > 0 && md.trunc.Window < w {
		w = md.trunc.Window
	}
	md.mu.Unlock()
	out := md.m.Output
	if r.MaxOutput > 0 && (out == 0 || r.MaxOutput < out) {
		out = r.MaxOutput
	}
	if out >= w { // a window learnt from a truncation, below the output asked
		out = w / 2
	}
	b := history.Budget{Window: w, Output: out}
	if _, _, _, warm := md.cal.Model(); !warm {
		b.Reserve = int(float64(w) * history.MarginShare)
	}
	return max(b.Input(), 1)
}

// RoundTrip trims req's body when its path is that of an API the package
// reads and sends it with Base; see the package documentation. Its errors
// are Base's, and the request context's when it ends while the Transport
// holds a stream's opening (the upstream's body is closed then); a request that cannot be trimmed (a body that does not
// parse, an unknown model, a message that does not convert) is sent
// untouched, and its Event says why.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.do(req, t.base().RoundTrip)
}

// Middleware is RoundTrip in the shape of the middleware of openai-go and
// anthropic-sdk-go (option.WithMiddleware(tr.Middleware)): next, the rest
// of the SDK's chain, sends the requests in place of Base.
func (t *Transport) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return t.do(req, next)
}

// do is RoundTrip with next sending the requests.
func (t *Transport) do(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	api := Detect(req.URL.Path)
	if api == 0 || req.Method != http.MethodPost || req.Body == nil || req.Body == http.NoBody || req.Header.Get("Content-Encoding") != "" {
		return next(req)
	}
	t.init()
	body, err := readBody(req)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	ev := Event{Kind: EventRequest, API: api}
	r, err := parse(req.URL.Path, body, &t.scans)
	if err != nil {
		ev.Err = err
		return t.forward(req, body, ev, next)
	}
	ev.Model = r.Model
	if !api.Trims() {
		adapter := "responses"
		if api == Gemini {
			adapter = "gemini"
		}
		ev.Err = fmt.Errorf("%w: %s (import github.com/histrim/history/adapters/%s and call its RegisterWire)", ErrNotRegistered, api, adapter)
		return t.forward(req, body, ev, next)
	}
	ctx := req.Context()
	md := t.model(ctx, api, r.Model)
	if md.err != nil {
		ev.Err = md.err
		return t.forward(req, body, ev, next)
	}
	ev.Conversation, ev.KeyFrom = req.Header.Get(ConversationHeader), KeyHeader
	if ev.Conversation == "" {
		ev.Conversation, ev.KeyFrom = r.Key, KeyRequest
	}
	if ev.Conversation == "" {
		ev.Conversation, ev.KeyFrom = r.opening(), KeyOpening
	}
	key := api.String() + "\x00" + md.m.Name + "\x00" + ev.Conversation
	g := t.group(md, adapt.Overhead(md.counter, r.extra...))
	if sc, ok := t.store.(sharedCalibration); ok {
		_ = sc.LoadCalibration(ctx, md.m.Name, md.cal) // unchanged when none is saved or the store fails
		if truncates(md.m.Provider) {
			md.loadTruncation(ctx, t.store) // unchanged when none is saved or the store fails
		}
	}
	ev.Budget = md.budget(r)
	sent, res, err := g.trim(ctx, key, r, ev.Budget)
	if sent == nil {
		ev.Err = err
		return t.forward(req, body, ev, next)
	}
	ev.Err = err // a latest turn over the budget: sent as trimmed, the provider judges
	// body goes to the next request's read (release) when every body
	// sent was built anew: nothing else holds its memory past this call
	// (docs/wire.md, "Measurements"); a body sent as it came may still be
	// read by Base after RoundTrip returns.
	out, owned := r.newBody(sent)
	defer func() {
		if owned {
			release(body)
		}
	}()
	resp, err := send(req, out, next)
	for attempt := 1; err == nil && attempt <= t.retries(); attempt++ {
		var perr error
		inStream := false
		switch {
		case refusal(resp.StatusCode):
			resp, perr = readError(resp)
		case api == Responses && resp.StatusCode == http.StatusOK && isSSE(resp) && resp.Header.Get("Content-Encoding") == "":
			// A stream that can still refuse the input (stream.go).
			var h hold
			resp, h, err = holdStream(ctx, resp)
			perr, ev.HoldExpired, inStream = h.failure, h.expired, true
		}
		if err != nil {
			break
		}
		if !history.IsContextOverflow(perr) {
			break
		}
		ev.Overflows++
		if inStream {
			ev.StreamOverflows++
		}
		if sc, ok := t.store.(sharedCalibration); ok {
			shareOverflow(ctx, sc, md.m.Name, res.TokensAfter, perr)
		}
		smaller, nres, rerr := g.recover(ctx, key, r, perr, attempt)
		if rerr != nil || smaller == nil || sameBytes(smaller, sent) {
			// Nothing more can go (history.ErrCannotRecover: what is
			// left cannot fit what the provider said), or the trim
			// failed: the provider's answer stands.
			break
		}
		_ = resp.Body.Close()
		sent, res = smaller, nres
		ev.Recovered++
		var fresh bool
		out, fresh = r.newBody(sent)
		owned = owned && fresh
		resp, err = send(req, out, next)
	}
	ev.Status = 0
	if resp != nil {
		ev.Status = resp.StatusCode
	}
	ev.fill(res, len(r.items), len(sent))
	t.emit(ev)
	if err != nil || resp.StatusCode/100 != 2 || resp.Header.Get("Content-Encoding") != "" {
		return resp, err
	}
	resp.Body = newUsageBody(resp.Body, api, isSSE(resp), func(reported int) {
		t.observe(md, ev, res.TokensAfter, reported)
	})
	return resp, nil
}

// forward sends body untouched and reports ev.
func (t *Transport) forward(req *http.Request, body []byte, ev Event, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	ev.Forwarded = true
	resp, err := send(req, body, next)
	if resp != nil {
		ev.Status = resp.StatusCode
	}
	t.emit(ev)
	return resp, err
}

// send sends a clone of req with body through next.
func send(req *http.Request, body []byte, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Del(ConversationHeader)
	out.Header.Del("Content-Length")
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.ContentLength = int64(len(body))
	return next(out)
}

// refusal reports whether status is one a provider answers a request over
// the window with (400; 413 for a body over its size limit).
func refusal(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge
}

// readError reads resp's body (up to maxErrorBody, the rest left to the
// caller) and returns resp with a body that gives the same bytes, and the
// upstream's answer as an error the core's classifier reads.
func readError(resp *http.Response) (*http.Response, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	rest := resp.Body
	var body io.Reader = bytes.NewReader(b)
	if err != nil {
		body = io.MultiReader(body, errReader{err})
	} else if len(b) == maxErrorBody {
		body = io.MultiReader(body, rest)
	}
	resp.Body = readCloser{body, rest}
	return resp, &upstreamError{StatusCode: resp.StatusCode, Body: string(b)}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r readCloser) Close() error { return r.c.Close() }

// upstreamError is an upstream's answer other than a success, as the
// core's overflow classifier reads it: the status (a field, as SDK errors
// keep it) and the body (RawJSON, as openai-go and anthropic-sdk-go keep
// it, and in the text).
type upstreamError struct {
	StatusCode int
	Body       string
}

func (e *upstreamError) Error() string {
	return "history/wire: upstream answered " + strconv.Itoa(e.StatusCode) + ": " + e.Body
}

// RawJSON returns the body.
func (e *upstreamError) RawJSON() string { return e.Body }

// sameBytes reports whether a and b hold equal messages in the same
// order.
func sameBytes(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// observe feeds a response's usage to md's Calibration, or, when the
// upstream counted far less than was sent (a silent truncation), reports
// it, and learns the window it showed once two truncations in a row
// agree within 10% (truncation.learn). With a Store that shares
// Calibrations, what the truncations showed is shared too
// (shareTruncation), so that every replica learns the window at the
// response one process would.
func (t *Transport) observe(md *model, ev Event, sent, reported int) {
	if sent <= 0 || reported <= 0 {
		return
	}
	sc, shared := t.store.(sharedCalibration)
	if truncation(sent, reported) {
		ev.Kind, ev.Truncated, ev.Reported, ev.Err = EventTruncation, true, reported, nil
		if truncates(md.m.Provider) && reported >= minLearntWindow {
			if shared {
				ev.Learnt = md.shareTruncation(t.store, func(tr *truncations) bool { return tr.learn(reported) })
			} else {
				md.mu.Lock()
				ev.Learnt = md.trunc.learn(reported)
				md.mu.Unlock()
			}
		}
		t.emit(ev)
		return
	}
	md.cal.Observe(sent, reported)
	if shared {
		_, _ = sc.ObserveShared(context.Background(), md.m.Name, sent, reported)
	}
	md.mu.Lock()
	md.trunc.Pending = 0 // a count that read the whole prompt: the next truncation starts afresh
	md.observed++
	md.mu.Unlock()
	if shared && truncates(md.m.Provider) {
		// Whichever replica saw the truncation pending (a load; a save
		// only when one is).
		md.shareTruncation(t.store, func(tr *truncations) bool { tr.Pending = 0; return false })
	}
}

// truncations is what a model's silent truncations showed: the window
// learnt (0 for none) and the count of the last response that showed a
// truncation, not yet confirmed (0 for none). Replicas share it in their
// Store, as JSON under truncationKey.
type truncations struct {
	Window  int `json:"window,omitempty"`
	Pending int `json:"pending,omitempty"`
}

// learn records a response that showed a truncation to reported tokens,
// and reports whether it taught the window: when the last response
// showed one too and the two agree within 10% (a server truncating to its
// window reports about the window every time; a server that counts only
// what its cache did not hold reports what each request added, which
// varies), the window is the larger of the two, and only ever lowers a
// window learnt before.
func (tr *truncations) learn(reported int) bool {
	if p := tr.Pending; p > 0 && 10*abs(p-reported) <= max(p, reported) {
		if w := max(p, reported); tr.Window == 0 || w < tr.Window {
			tr.Window = w
		}
		tr.Pending = 0
		return true
	}
	tr.Pending = reported
	return false
}

// truncationKey is the key under which replicas share what model's silent
// truncations showed, in the Store of their conversations: every
// conversation's key starts with its API's name, never "truncation".
func truncationKey(model string) string { return "truncation\x00" + model }

// decodeTruncation reads a shared truncation; what cannot be read, or
// holds a window below minLearntWindow or a negative count, reads as
// nothing learnt.
func decodeTruncation(data []byte) truncations {
	var tr truncations
	if json.Unmarshal(data, &tr) != nil || tr.Window < 0 || tr.Pending < 0 || (tr.Window > 0 && tr.Window < minLearntWindow) {
		return truncations{}
	}
	return tr
}

// loadTruncation takes into md what the replicas sharing st learnt of
// the model's silent truncations: a lower window, and the truncation
// pending. md is unchanged when nothing is saved or the store fails.
func (md *model) loadTruncation(ctx context.Context, st history.StateStore) {
	data, version, err := st.Load(ctx, truncationKey(md.m.Name))
	if err != nil || version <= 0 {
		return
	}
	md.merge(decodeTruncation(data))
}

// merge takes shared into md's truncation: its pending count, and its
// window where it is lower.
func (md *model) merge(shared truncations) {
	md.mu.Lock()
	defer md.mu.Unlock()
	if w := shared.Window; w > 0 && (md.trunc.Window == 0 || w < md.trunc.Window) {
		md.trunc.Window = w
	}
	md.trunc.Pending = shared.Pending
}

// shareTruncation applies change to the truncations the replicas sharing
// st keep for md's model, with compare-and-swap (saved only when change
// changed them), and takes the result into md; it returns what change
// returned on the attempt that landed. When the store fails, change
// applies to md's own truncations instead.
func (md *model) shareTruncation(st history.StateStore, change func(*truncations) bool) bool {
	var got bool
	var tr truncations
	err := storekit.Swap(context.Background(), st, "wire: truncation of "+md.m.Name, truncationKey(md.m.Name), func(data []byte) ([]byte, bool, error) {
		tr = truncations{}
		if data != nil {
			tr = decodeTruncation(data)
		}
		before := tr
		if got = change(&tr); tr == before {
			return nil, false, nil
		}
		out, err := json.Marshal(tr)
		return out, true, err
	})
	if err != nil {
		md.mu.Lock()
		defer md.mu.Unlock()
		return change(&md.trunc)
	}
	md.merge(tr)
	return got
}

// sharedCalibration is a [Transport.Store] that also keeps each model's
// Calibration for every replica (stores/redis, stores/postgres): the
// Transport loads it before each trim and records each usage in it, so
// that replicas aim their trims as one process would.
type sharedCalibration interface {
	LoadCalibration(ctx context.Context, model string, cal *history.Calibration) error
	ObserveShared(ctx context.Context, model string, sent, reported int) (history.Verdict, error)
	ObserveOverflowShared(ctx context.Context, model string, sent, limit int) error
}

// shareOverflow records in the shared Calibration a request of sent
// tokens the provider refused with perr, as history.RecoverOverflow
// records it in the Transport's: the count the error states as a usage,
// else the refusal as a cap.
func shareOverflow(ctx context.Context, sc sharedCalibration, model string, sent int, perr error) {
	ov, ok := history.ParseOverflow(perr)
	if !ok || sent <= 1 {
		return
	}
	if v, err := sc.ObserveShared(ctx, model, sent, ov.Used); err == nil && (v == history.VerdictUsed || v == history.VerdictRestarted) {
		return
	}
	_ = sc.ObserveOverflowShared(ctx, model, sent, ov.Limit)
}

// minLearntWindow is the smallest window a silent truncation teaches: a
// count below it is no window a server runs a model with (Ollama's
// smallest default num_ctx is 2,048), but a misread usage or a prompt
// mostly read from the server's cache (Ollama counts only what it
// evaluated).
const minLearntWindow = 2048

// abs is |n|.
func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// truncates reports whether a model's provider may truncate a prompt
// silently: a local or routed server, or a model the caller described.
// The providers of the models table that refuse a prompt over the window
// with an error (the only way their usage reads far below what was sent
// is a misread usage) do not teach a window: the Event says what was
// seen, and nothing else changes.
func truncates(provider string) bool {
	switch provider {
	case "openai", "anthropic", "google", "mistral", "deepseek", "xai":
		return false
	}
	return true
}

// truncation reports whether an upstream that counted reported tokens of
// a request the trim counted at sent truncated it: under half, by more
// than a rounding (512 tokens). The counts of a provider and the library
// differ by far less (a Calibration's scale stays within a few tenths of
// 1), so a count this low means the upstream did not read the whole
// prompt.
func truncation(sent, reported int) bool {
	return reported < sent/2 && sent-reported > 512
}

// readBody reads req's body whole, in one buffer of its stated length
// when it states one: a buffer a request before released (release) when
// one large enough is there, else fresh memory.
func readBody(req *http.Request) ([]byte, error) {
	if req.ContentLength <= 0 || req.ContentLength > 1<<30 {
		return io.ReadAll(req.Body)
	}
	n := int(req.ContentLength) + bytes.MinRead
	var b []byte
	if n <= maxPooledBody {
		if p, _ := bodies.Get().(*[]byte); p != nil && cap(*p) >= n {
			b = (*p)[:0]
		}
	}
	buf := bytes.NewBuffer(b)
	buf.Grow(n)
	_, err := buf.ReadFrom(req.Body)
	return buf.Bytes(), err
}

// bodies holds the buffers of request bodies that no one holds any more
// (release), for the next bodies read: a body of 100k tokens read into
// fresh memory cost a fifth of the Transport's time, the kernel faulting
// in each page the runtime had returned to it.
var bodies sync.Pool // of *[]byte

// maxPooledBody is the largest buffer bodies keeps (16 MiB): a larger
// body is read into fresh memory, which the collector reclaims.
const maxPooledBody = 16 << 20

// poison, when set, has release overwrite a body's bytes before it goes
// to bodies, so that whatever still read them after the request would
// read other bytes: the tests of every codec run under the race detector
// with it set, and their pinned outputs and loops hold (TestBodyReuse).
var poison = race.Enabled

// release gives body, read by readBody for a request that is done, to a
// later request's read. The caller guarantees that nothing holds its
// memory any more: every body sent was built anew (Request.newBody), and
// what the trim keeps past the request (the conversations' state, the
// codecs' memos, the events) holds copies, never the body's bytes.
func release(body []byte) {
	if f := wireapi.Released; f != nil {
		f(body)
		return
	}
	if cap(body) == 0 || cap(body) > maxPooledBody {
		return
	}
	body = body[:cap(body)]
	if poison {
		for i := range body {
			body[i] = 0xff
		}
	}
	body = body[:0]
	bodies.Put(&body)
}

// CloseIdleConnections closes Base's idle connections, when Base has
// that method (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base().(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Close stops every background summary in flight in the conversations
// the Transport keeps (history.Conversations.Close), for a graceful
// shutdown, and returns nil. The Transport still trims afterwards.
func (t *Transport) Close() error {
	t.init()
	for _, md := range lockedValues(&t.mu, t.models) {
		for _, g := range lockedValues(&md.mu, md.groups) {
			_ = g.close()
		}
	}
	return nil
}

// lockedValues returns the values of m, read while holding mu.
func lockedValues[K comparable, V any](mu *sync.Mutex, m map[K]V) []V {
	mu.Lock()
	defer mu.Unlock()
	vs := make([]V, 0, len(m))
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}
