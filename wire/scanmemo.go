package wire

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sort"
	"sync"
)

// scanMemo keeps, for the messages arrays a Transport read, a copy of each
// array's bytes and where its elements lie, by the array's opening (its
// first two elements as they came): a client resends its conversation's
// whole array on every request, with a few elements appended, and the
// elements of the bytes it resends as they came need not be scanned
// again. What it keeps is compared byte for byte with what comes, never
// trusted on a hash. It is safe for concurrent use; a nil *scanMemo keeps
// nothing.
type scanMemo struct {
	mu      sync.Mutex
	entries map[uint64][]*scanned // by the hash of the opening (scanSeed); newest first
	size    int                   // bytes held (see scannedSize)
	limit   int                   // bound on size; 0 for maxScanBytes
	floor   int                   // rescanFloor's value; 0 for rescanFloor
}

// scanSeed seeds the hash of an array's opening, which only chooses the
// arrays compared (a collision costs a comparison, never a wrong
// element).
var scanSeed = maphash.MakeSeed()

// scanned is an array as it came, from its opening bracket to its closing
// one, and its elements' spans (relative to the opening bracket).
// Neither is ever written to once made: a request whose elements the memo
// gave reads them from arr (Request.items), and the codecs may keep them
// by their address (bytecache.Stable).
type scanned struct {
	arr []byte
	els []span
}

// taken is what a scanMemo gave for an array: its first n elements are
// from's.
type taken struct {
	from *scanned
	n    int
}

// stable lists the first byte of each element of each array a scanMemo
// holds (*byte), with the element's length (int): bytecache.Stable's
// answer. An array is listed while a memo holds it (the list must not
// keep it alive), but its bytes never change after, whoever still holds
// them. A sync.Map: every codec lookup of a message not found by its
// address asks it, from every request at once, and it changes only when
// a memo keeps or drops an array.
var stable sync.Map

// list adds s's elements to stable (on false, removes them).
func (s *scanned) list(add bool) {
	for _, e := range s.els {
		if e.end <= e.start {
			continue
		}
		p, n := &s.arr[e.start], e.end-e.start
		if add {
			stable.Store(p, n)
		} else {
			stable.CompareAndDelete(p, n)
		}
	}
}

// isStable reports whether b is an element of an array a scanMemo holds:
// bytes never written to.
func isStable(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	n, ok := stable.Load(&b[0])
	return ok && n == len(b)
}

const (
	// maxScanBytes bounds the bytes a scanMemo holds: past it, it starts
	// afresh (a conversation's array is then scanned once more).
	maxScanBytes = 64 << 20
	// scanWays is how many arrays are kept for one opening (conversations
	// that open alike, a conversation and its forks).
	scanWays = 4
	// rescanFloor is how many bytes an array may have past the part of it
	// the memo held before the memo keeps it anew: a client's next
	// requests reuse the older copy for all but their last few elements,
	// so the copy is made once in that many bytes of growth (or a quarter
	// of the array, when that is more), not on every request.
	rescanFloor = 64 << 10
)

// anew reports whether an array whose elements end at last, of which
// the memo gave those in its first upTo bytes, is to be kept anew: what
// was scanned anew is more than rescanFloor and a quarter of it.
func (m *scanMemo) anew(upTo, last int) bool {
	floor := m.floor
	if floor <= 0 {
		floor = rescanFloor
	}
	return last-upTo > max(floor, last/4)
}

// scannedSize is what a kept array counts against the bound.
func scannedSize(arr []byte, els []span) int { return len(arr) + 16*len(els) + 64 }

// key returns the hash of an array's opening, b[v:e]: its bracket, its
// first two elements and what lies between them.
func (m *scanMemo) key(open []byte) uint64 { return maphash.Bytes(scanSeed, open) }

// lookup returns the array kept under key that shares the longest run of
// whole elements with arr (an array's bytes from its bracket on) and how
// many of its elements lie in the bytes they share (a number or literal
// with the byte after it, which tells where it ends); 0 when none does.
func (m *scanMemo) lookup(key uint64, arr []byte) (*scanned, int) {
	m.mu.Lock()
	ways := m.entries[key] // never written to: a change replaces the slice
	m.mu.Unlock()
	var best *scanned
	n := 0
	for _, s := range ways {
		common := commonPrefix(arr, s.arr)
		k := sort.Search(len(s.els), func(j int) bool { return s.els[j].end > common })
		if k > 0 && s.els[k-1].end == common && !closes(s.arr[s.els[k-1].start]) {
			k-- // a number or literal: where it ends depends on the byte after it
		}
		if k > n {
			best, n = s, k
		}
	}
	return best, n
}

// keep holds a copy of arr and els under key, in place of was (the array
// the memo gave for it, if any: the same conversation, further on).
func (m *scanMemo) keep(key uint64, was *scanned, arr []byte, els []span) {
	size := scannedSize(arr, els)
	limit := m.limit
	if limit <= 0 {
		limit = maxScanBytes
	}
	if size > limit {
		return
	}
	s := &scanned{arr: bytes.Clone(arr), els: slices.Clone(els)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[uint64][]*scanned{}
	}
	if m.size+size > limit {
		for _, ways := range m.entries {
			for _, o := range ways {
				o.list(false)
			}
		}
		m.entries, m.size = map[uint64][]*scanned{}, 0
	}
	old := m.entries[key]
	ways := make([]*scanned, 0, min(len(old)+1, scanWays))
	ways = append(ways, s)
	for _, o := range old {
		if o == was || len(ways) == scanWays {
			m.size -= scannedSize(o.arr, o.els)
			o.list(false)
			continue
		}
		ways = append(ways, o)
	}
	m.entries[key] = ways
	m.size += size
	s.list(true)
}

// closes reports whether a JSON value that starts with c ends at a byte
// of its own (an object, an array, a string): its end does not depend on
// the byte after it.
func closes(c byte) bool { return c == '{' || c == '[' || c == '"' }

// commonPrefix returns how many bytes a and b share from their start.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	const chunk = 1 << 10
	i := 0
	for i+chunk <= n && bytes.Equal(a[i:i+chunk], b[i:i+chunk]) {
		i += chunk
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
