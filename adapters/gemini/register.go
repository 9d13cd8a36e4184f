package gemini

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/bytecache"
	"github.com/histrim/history/internal/wireapi"
	"google.golang.org/genai"
)

// RegisterWire makes package wire (its Transport, and the gateway built
// on it) trim Gemini requests (POST .../models/{model}:generateContent
// and :streamGenerateContent, the model read from the path) with this
// adapter's rules, in the program that calls it: each content is read
// from the bytes it came in (decoded as a genai.Content), the system
// instruction and what the request sends besides its contents (tools,
// response schemas: Overhead; generationConfig.maxOutputTokens as the
// output room) as Trim and Fit count them, and the trimmed body holds
// every content the trim kept as its own bytes, every other byte of the
// body as it came. A content the trim cut down (function responses
// elided, arguments cleared, parts swept) is written over its own bytes
// (the parts kept as they came, the responses and arguments replaced,
// fields genai does not know kept), or, where its JSON cannot be so
// rewritten, encoded from its genai form; a notice is a new user content. Function calls stay with their
// responses, in Gemini's order, and thought signatures with their parts,
// as Trim keeps them. A content that does not decode as a genai.Content
// leaves the request forwarded untouched. Call it once, before the first
// request; it is safe to call again. Without it, package wire forwards
// Gemini requests untouched (wire.ErrNotRegistered). cmd/histrim-gateway
// calls it.
func RegisterWire() {
	wireapi.Register("gemini_generate_content", rawCodec)
}

// rawCodec is the adapter's codec over raw JSON contents (see
// RegisterWire).
var rawCodec = adapt.RawSplice(codec, rawSystem, decodeContent,
	func(c **genai.Content) ([]byte, error) { return json.Marshal(*c) }, splice)

// undecodable is the role of a content that did not decode: the
// conversion refuses it (ErrInvalidContent), so that the request goes on
// untouched.
const undecodable = "\x00undecodable"

// decodeContent decodes one element of a request's contents, kept by its
// exact bytes (decoded): a client resends its transcript, and decoding
// every content of it into a genai.Content at every request was most of
// the Transport's time. What is kept is shared by every request that
// sends the same bytes; nothing writes to a genai.Content the trim reads
// (the adapter never modifies the caller's contents), so that a hit gives
// what decoding gives.
func decodeContent(raw json.RawMessage) *genai.Content {
	if c, ok := decoded.Get(raw); ok {
		return c
	}
	c := decodeOnce(raw)
	decoded.Add(raw, c, 3*len(raw))
	if kept, ok := decoded.Get(raw); ok && kept == c {
		wireReads.enable(c, 3*len(raw))
	}
	return c
}

// decodeOnce is decodeContent without its memo.
func decodeOnce(raw json.RawMessage) *genai.Content {
	var c genai.Content
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &c) != nil {
		return &genai.Content{Role: undecodable}
	}
	return &c
}

// rawSystem reads the system instruction of a request body (its
// systemInstruction, or the proto's system_instruction), nil when it
// sends none.
func rawSystem(body json.RawMessage) (*genai.Content, error) {
	var b struct {
		Camel json.RawMessage `json:"systemInstruction"`
		Snake json.RawMessage `json:"system_instruction"`
	}
	_ = json.Unmarshal(body, &b) // a body wire parsed: an object
	raw := b.Camel
	if len(raw) == 0 {
		raw = b.Snake
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c genai.Content
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, contentErr(-1, -1, "does not decode: "+err.Error())
	}
	return &c, nil
}

// decoded keeps decodeContent's contents (see there), each counted as
// three times its JSON (the key, and the strings and parts decoded from
// it).
var decoded bytecache.Cache[*genai.Content]

// wireReads keeps what plain reads of each content decodeContent keeps,
// and of no other (a content a caller built may change between two
// calls; one decoded from bytes is never written to): a client resends
// its transcript, and reading every content again at every request (its
// calls' arguments encoded, its thought signatures in base64) was a tenth
// of the Transport's time. Each content keeps the reading of its last
// role and index (the synthetic ids of calls without one depend on the
// index), and the copies elide made of its parts (see readMemo.elided).
var wireReads readMemo

// readMemo is wireReads' type: a bounded map by the content itself, past
// its bound started afresh (the contents are then read again). It is safe
// for concurrent use.
type readMemo struct {
	Bound int // the most bytes kept, as the contents' counts say; 0 is bytecache.DefaultBound

	used  atomic.Bool // a content was enabled: a program that never decodes one never locks mu
	mu    sync.Mutex
	m     map[*genai.Content]*contentRead
	bytes int
}

// contentRead is what plain read of a content, once read is true: as role,
// at index i; and the copies elide made of its parts (see elided).
type contentRead struct {
	read   bool
	role   history.Role
	i      int
	msg    history.Message
	elided map[*genai.Part]elidedPart
}

// elidedSize is what an elided copy takes besides its text, counted
// toward readMemo's bound: the part, its function response and the map's
// entry, rounded up.
const elidedSize = 512

// elidedPart is elide's copy of a part, with text.
type elidedPart struct {
	text string
	out  *genai.Part
}

// enable lets plain keep its reading of c, counted as size bytes.
func (r *readMemo) enable(c *genai.Content, size int) {
	bound := r.Bound
	if bound <= 0 {
		bound = bytecache.DefaultBound
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || r.bytes+size > bound {
		r.m, r.bytes = map[*genai.Content]*contentRead{}, 0
	}
	if size > bound {
		return
	}
	if _, ok := r.m[c]; !ok {
		r.m[c] = &contentRead{}
		r.bytes += size
		r.used.Store(true)
	}
}

// get returns the reading of c as role at index i, if kept; the message's
// slices are shared, and never written to (they are clipped: an append
// copies).
func (r *readMemo) get(c *genai.Content, role history.Role, i int) (history.Message, bool) {
	if !r.used.Load() {
		return history.Message{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[c]
	if e == nil || !e.read || e.role != role || e.i != i {
		return history.Message{}, false
	}
	return e.msg, true
}

// put keeps m as the reading of c as role at index i, when c is enabled.
func (r *readMemo) put(c *genai.Content, role history.Role, i int, m history.Message) {
	if !r.used.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.m[c]; e != nil {
		m.Parts, m.ToolCalls = slices.Clip(m.Parts), slices.Clip(m.ToolCalls)
		*e = contentRead{read: true, role: role, i: i, msg: m, elided: e.elided}
	}
}

// elided returns elide(p, text) for p, a part of c. For a content
// decodeContent keeps, the copy made the first time is kept with it, one
// per part (for the latest text; as many as c has parts), and given
// again: a client resends its transcript, and the trim elides the same
// results with the same text at every request (making the copies was a
// tenth of what a request through the wire allocated). The copy is only
// read (the wire encodes it), as the contents it is made of are.
func (r *readMemo) elided(c *genai.Content, p *genai.Part, text string) *genai.Part {
	if !r.used.Load() {
		return elide(p, text)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.m[c]
	if e == nil {
		return elide(p, text)
	}
	x, ok := e.elided[p]
	if ok && x.text == text {
		return x.out
	}
	out := elide(p, text)
	if ok || len(e.elided) < len(c.Parts) {
		if e.elided == nil {
			e.elided = make(map[*genai.Part]elidedPart)
		}
		e.elided[p] = elidedPart{text: text, out: out}
		r.bytes += elidedSize + len(text) // counted toward the bound, which the next content enabled checks
	}
	return out
}

// reset forgets every content (tests).
func (r *readMemo) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m, r.bytes = nil, 0
}
