package responses

// This file keeps, for the wire's codec (RegisterWire), what the
// conversion reads of an item and how Trim rewrites one, by the item's
// exact bytes: a client resends its whole input on every request, so the
// same items would be read through their JSON, and the same outputs
// elided and re-encoded, again and again.

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/histrim/history/internal/bytecache"
)

// maxMemoBytes bounds each of an itemMemo's two tables: the bytes of the
// items kept, and of what is kept for them (an item decoded and its view
// counted as twice the item's size again: the item holds a copy of its
// bytes, the view's strings are read from them; a rewrite as its text
// and the bytes it encodes to), plus memoEntry for each entry's own
// structure. Past it, the table starts afresh: a client's transcript is
// read once more, never an unbounded memory.
const maxMemoBytes = 64 << 20

// memoEntry is what an entry costs beyond the bytes counted (the item
// decoded, its view twice: by its bytes and by their address).
const memoEntry = 768

// wireMemo is the wire codec's memo, shared by every request of the
// program (rawCodec).
var wireMemo itemMemo

// itemMemo keeps, for an item's JSON, the item decoded from it, what the
// conversion reads of it (its view) and the item Trim sends for it when it elides its output or clears its
// arguments, each by the item's bytes: the map's key is the item itself,
// so a hit is an equal item, never a hash collision. Only items built
// with param.Override of their raw JSON are kept (those the wire
// decodes), which read and rewrite through that JSON alone: what is kept
// is what reading or rewriting them again gives, so that a hit sends
// every byte a miss sends. An entry is never written to once a table
// holds it (one with more set replaces it). It is safe for concurrent
// use; a nil *itemMemo keeps nothing.
type itemMemo struct {
	mu       sync.Mutex
	views    map[string]*decoded
	rewrites map[string]*rewritten
	// reads holds each entry of views decoded and read, by the first byte
	// of the copy of its JSON the kept item holds: the item decode
	// returned is read (read) without hashing and comparing its bytes
	// again. A copy the memo made and keeps alive is never another item's
	// bytes, so its address is a key no other item has; reads is emptied
	// with views.
	reads map[*byte]*decoded
	// rewriteAt holds each entry of rewrites made for an item decode
	// returned, by the first byte of that item's copy (which the key keeps
	// alive, counted in the entry's size), as reads does: emptied with
	// rewrites.
	rewriteAt map[*byte]*rewritten
	// stableAt holds entries of views by the address of the bytes a
	// request gave for the item when bytecache.Stable says they are never
	// written to (a message package wire gave from its copy of the
	// conversation's array): the next request that resends the item as
	// it came finds it by that address, without hashing and comparing its
	// bytes. The key keeps that memory alive, and so the same bytes at
	// it; an entry counts their size against the bound. Emptied with
	// views.
	stableAt map[*byte]stableEntry
	// The bytes each table holds (see maxMemoBytes), and its bound: 0
	// for maxMemoBytes.
	viewBytes, rewriteBytes, limit int
}

// stableEntry is an entry of views (d) listed by the address of n stable
// bytes equal to its item's.
type stableEntry struct {
	d *decoded
	n int
}

// bound is m's bound on each table's bytes.
func (m *itemMemo) bound() int {
	if m.limit > 0 {
		return m.limit
	}
	return maxMemoBytes
}

// decoded is an item decoded from its JSON (newOverride of a copy of it)
// and, once read is true, its view.
type decoded struct {
	u    Item
	v    view
	read bool
}

// rewritten is the rewrite of an item: with text as its output (args
// false) or as its arguments (args true), it encodes as raw; spliced,
// when set, is raw written over the item's own bytes (splice); u, when
// set, is the item that sends raw (newOverride allocates one each time).
type rewritten struct {
	text    string
	args    bool
	raw     []byte
	spliced []byte
	u       *Item
}

// rawOf returns the JSON u was built from with param.Override, if it was
// built so.
func rawOf(u *Item) (json.RawMessage, bool) {
	v, ok := u.Overrides()
	if !ok {
		return nil, false
	}
	raw, ok := v.(json.RawMessage)
	return raw, ok
}

// sameSlice reports whether a and b are the same bytes in memory (not
// merely equal ones).
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// decode returns the item that sends raw (newOverride), kept by raw's
// bytes: the item kept holds a copy of them, never the request's body,
// which it would keep alive.
func (m *itemMemo) decode(raw json.RawMessage) Item {
	m.mu.Lock()
	if len(raw) > 0 {
		if e, ok := m.stableAt[&raw[0]]; ok && e.n == len(raw) {
			m.mu.Unlock()
			return e.d.u
		}
	}
	d := m.views[string(raw)]
	m.mu.Unlock()
	if d == nil {
		d = m.keep(raw, nil)
	}
	if stable := bytecache.Stable; stable != nil && len(raw) > 0 && stable(raw) {
		m.keepStable(raw, d)
	}
	return d.u
}

// keepStable lists d, the entry of raw, by raw's address (see stableAt),
// when views holds it and the bound leaves room for raw's bytes.
func (m *itemMemo) keepStable(raw json.RawMessage, d *decoded) {
	size := len(raw) + memoEntry
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.views[string(raw)] != d || m.viewBytes+size > m.bound() {
		return
	}
	if m.stableAt == nil {
		m.stableAt = map[*byte]stableEntry{}
	}
	if _, ok := m.stableAt[&raw[0]]; !ok {
		m.stableAt[&raw[0]] = stableEntry{d, len(raw)}
		m.viewBytes += size
	}
}

// keep returns the entry of raw, set with set (when not nil), adding it
// (holding its item) when there is none: an entry over the bound is not
// kept, its item sends raw itself. m.mu is not held.
func (m *itemMemo) keep(raw json.RawMessage, set func(*decoded)) *decoded {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.views[string(raw)]
	if d != nil && set == nil {
		return d
	}
	var nd decoded
	if d == nil {
		size := 3*len(raw) + memoEntry
		if size > m.bound() {
			nd.u = newOverride(raw)
			if set != nil {
				set(&nd)
			}
			return &nd
		}
		if m.views == nil || m.viewBytes+size > m.bound() {
			m.views, m.reads, m.stableAt, m.viewBytes = map[string]*decoded{}, map[*byte]*decoded{}, nil, 0
		}
		nd.u = newOverride(slices.Clone(raw))
		m.viewBytes += size
	} else {
		nd = *d
	}
	if set != nil {
		set(&nd)
	}
	m.views[string(raw)] = &nd
	if nd.read {
		if own, ok := rawOf(&nd.u); ok && len(own) > 0 {
			m.reads[&own[0]] = &nd
		}
	}
	return &nd
}

// read is read(u), kept by u's bytes; its parts clipped, so that an
// append to them never writes to the kept array. An item that cannot be
// read is not kept.
func (m *itemMemo) read(u *Item) (view, error) {
	if m == nil {
		return read(u)
	}
	raw, ok := rawOf(u)
	if !ok || len(raw) == 0 {
		return read(u)
	}
	m.mu.Lock()
	if d := m.reads[&raw[0]]; d != nil {
		m.mu.Unlock()
		return d.v, nil
	}
	d := m.views[string(raw)]
	m.mu.Unlock()
	if d != nil && d.read {
		return d.v, nil
	}
	v, err := read(u)
	if err != nil {
		return v, err
	}
	v.parts = slices.Clip(v.parts)
	m.keep(raw, func(d *decoded) { d.v, d.read = v, true })
	return v, nil
}

// rewrite returns the item Trim sends for u with text as its output (an
// elided output: elide) or, args set, as its arguments (a cleared call:
// withArguments), kept by u's bytes and text. The kept bytes are never
// modified: the item returned sends them (param.Override), and the wire
// copies them into the body.
func (m *itemMemo) rewrite(u Item, text string, args bool) Item {
	do := func() Item {
		if args {
			return withArguments(u, text)
		}
		return elide(u, text)
	}
	if m == nil {
		return do()
	}
	raw, ok := rawOf(&u)
	if !ok {
		return do()
	}
	m.mu.Lock()
	var r *rewritten
	if len(raw) > 0 {
		r = m.rewriteAt[&raw[0]]
	}
	if r == nil {
		r = m.rewrites[string(raw)]
	}
	m.mu.Unlock()
	if r != nil && r.args == args && r.text == text {
		if r.u != nil {
			return *r.u
		}
		return newOverride(r.raw)
	}
	out := do()
	b, err := rawJSON(&out)
	if err != nil {
		return out
	}
	b = slices.Clone(b) // never a part of the request's body, which it would keep alive
	size := len(raw) + len(text) + len(b) + memoEntry
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rewrites == nil || m.rewriteBytes+size > m.bound() {
		m.rewrites, m.rewriteAt, m.rewriteBytes = map[string]*rewritten{}, map[*byte]*rewritten{}, 0
	}
	if size <= m.bound() {
		if old := m.rewrites[string(raw)]; old != nil {
			m.rewriteBytes -= old.size(len(raw))
		}
		u := newOverride(b)
		nr := &rewritten{text: text, args: args, raw: b, u: &u}
		m.rewrites[string(raw)] = nr
		if len(raw) > 0 && m.reads[&raw[0]] != nil {
			m.rewriteAt[&raw[0]] = nr // raw is the copy an entry of views holds
		}
		m.rewriteBytes += size
	}
	return out
}

// size is what r, kept for an item of n bytes, counts in its table.
func (r *rewritten) size(n int) int {
	return n + len(r.text) + len(r.raw) + len(r.spliced) + memoEntry
}

// splicedOf returns what splice wrote for the item that decoded as was
// when the trim rewrote it to now, if m kept it (keepSpliced): now sends
// the bytes m kept for was's rewrite.
func (m *itemMemo) splicedOf(was *Item, now []byte) ([]byte, bool) {
	w, ok := rawOf(was)
	if !ok || len(w) == 0 {
		return nil, false
	}
	m.mu.Lock()
	r := m.rewriteAt[&w[0]]
	m.mu.Unlock()
	if r == nil || r.spliced == nil || !sameSlice(r.raw, now) && !bytes.Equal(r.raw, now) {
		return nil, false
	}
	return r.spliced, true
}

// keepSpliced keeps out, what splice wrote for the item that decoded as
// was when the trim rewrote it to now, with was's rewrite when m keeps
// one that sends now, within the table's bound.
func (m *itemMemo) keepSpliced(was *Item, now, out []byte) {
	w, ok := rawOf(was)
	if !ok || len(w) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rewriteAt[&w[0]]
	if r == nil || r.spliced != nil || !bytes.Equal(r.raw, now) || m.rewriteBytes+len(out) > m.bound() {
		return
	}
	nr := *r
	nr.spliced = out
	m.rewriteAt[&w[0]] = &nr
	if m.rewrites[string(w)] == r {
		m.rewrites[string(w)] = &nr
	}
	m.rewriteBytes += len(out)
}
