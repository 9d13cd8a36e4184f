package responses

// This file keeps, for the wire's codec (RegisterWire), what the
// conversion reads of an item and how Trim rewrites one, by the item's
// exact bytes: a client resends its whole input on every request, so the
// same items would be read through their JSON, and the same outputs
// elided and re-encoded, again and again.

import (
	"encoding/json"
	"slices"
	"sync"
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
// every byte a miss sends. It is safe for concurrent use; a nil
// *itemMemo keeps nothing.
type itemMemo struct {
	mu       sync.Mutex
	views    map[string]decoded
	rewrites map[string]rewritten
	// reads holds the view of each item views keeps decoded and read, by
	// the first byte of the copy of its JSON the kept item holds: the item
	// decode returned is read (read) without hashing and comparing its
	// bytes again. A copy the memo made and keeps alive is never another
	// item's bytes, so its address is a key no other item has; reads is
	// emptied with views.
	reads map[*byte]view
	// The bytes each table holds (see maxMemoBytes), and its bound: 0
	// for maxMemoBytes.
	viewBytes, rewriteBytes, limit int
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
// false) or as its arguments (args true), it encodes as raw.
type rewritten struct {
	text string
	args bool
	raw  []byte
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

// decode returns the item that sends raw (newOverride), kept by raw's
// bytes: the item kept holds a copy of them, never the request's body,
// which it would keep alive.
func (m *itemMemo) decode(raw json.RawMessage) Item {
	m.mu.Lock()
	d, hit := m.views[string(raw)]
	m.mu.Unlock()
	if hit {
		return d.u
	}
	return m.keep(raw, nil).u
}

// keep returns the entry of raw, set with set (when not nil), adding it
// (holding its item) when there is none: an entry over the bound is not
// kept, its item sends raw itself. m.mu is not held.
func (m *itemMemo) keep(raw json.RawMessage, set func(*decoded)) decoded {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, kept := m.views[string(raw)]
	if !kept {
		size := 3*len(raw) + memoEntry
		if size > m.bound() {
			d.u = newOverride(raw)
			if set != nil {
				set(&d)
			}
			return d
		}
		if m.views == nil || m.viewBytes+size > m.bound() {
			m.views, m.reads, m.viewBytes = map[string]decoded{}, map[*byte]view{}, 0
		}
		d.u = newOverride(slices.Clone(raw))
		m.viewBytes += size
	}
	if set != nil {
		set(&d)
	}
	m.views[string(raw)] = d
	if d.read {
		if own, ok := rawOf(&d.u); ok && len(own) > 0 {
			m.reads[&own[0]] = d.v
		}
	}
	return d
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
	if v, hit := m.reads[&raw[0]]; hit {
		m.mu.Unlock()
		return v, nil
	}
	d, hit := m.views[string(raw)]
	m.mu.Unlock()
	if hit && d.read {
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
	r, hit := m.rewrites[string(raw)]
	m.mu.Unlock()
	if hit && r.args == args && r.text == text {
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
		m.rewrites, m.rewriteBytes = map[string]rewritten{}, 0
	}
	if size <= m.bound() {
		if old, ok := m.rewrites[string(raw)]; ok {
			m.rewriteBytes -= len(raw) + len(old.text) + len(old.raw) + memoEntry
		}
		m.rewrites[string(raw)] = rewritten{text: text, args: args, raw: b}
		m.rewriteBytes += size
	}
	return out
}
