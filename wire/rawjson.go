package wire

// A small scanner over raw JSON: where the members of an object and the
// elements of an array start and end in the bytes as they came, so that a
// body is rewritten by splicing (what is not replaced stays byte for
// byte) rather than by decoding and encoding it again. It checks the
// structure it walks (brackets, strings, literals' first bytes), not
// every value: a member it does not read is passed on as it came, and the
// provider judges it. It never panics and runs in time linear in the
// input, with the depth of nesting bounded.

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/histrim/history/internal/bytecache"
	"github.com/histrim/history/internal/wireapi"
)

// errSyntax is returned for bytes that are not the JSON value expected.
var errSyntax = errors.New("history/wire: malformed JSON")

// maxDepth bounds the nesting the scanner follows.
const maxDepth = 10_000

// ws reports whether c is JSON whitespace.
func ws(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipWS returns the index of the first non-whitespace byte of b at or
// after i.
func skipWS(b []byte, i int) int {
	for i < len(b) && ws(b[i]) {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at b[i] (i at its
// first byte, no whitespace before it).
func skipValue(b []byte, i int) (int, error) {
	return skipNested(b, i, maxDepth)
}

// skipNested is skipValue for a value whose nesting may go limit deep.
func skipNested(b []byte, i, limit int) (int, error) {
	depth := 0
	for {
		if i >= len(b) {
			return 0, errSyntax
		}
		switch c := b[i]; {
		case c == '"':
			j, err := skipString(b, i)
			if err != nil {
				return 0, err
			}
			i = j
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return 0, errSyntax
			}
			i++
			continue
		case c == '}' || c == ']':
			if depth == 0 {
				return 0, errSyntax
			}
			depth--
			i++
		case c == ',' || c == ':' || ws(c):
			if depth == 0 {
				return 0, errSyntax
			}
			i++
			continue
		case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
			for i < len(b) && !ws(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ':' && b[i] != '"' && b[i] != '{' && b[i] != '[' {
				i++
			}
		default:
			return 0, errSyntax
		}
		if depth == 0 {
			return i, nil
		}
	}
}

// skipString returns the end of the JSON string starting at b[i] ('"'):
// the next quote that an even number of backslashes precedes, found with
// bytes.IndexByte (most of a body is the text of its strings).
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for j <= len(b) {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
	return 0, errSyntax
}

// span is the bytes b[start:end] of a value in the body.
type span struct{ start, end int }

// member is one member of a JSON object: its key as it came (quotes and
// escapes included), the span of its key's first byte to its value's
// end, and its value's.
type member struct {
	key   []byte
	whole span // from the key's opening quote to the value's end
	val   span
}

// name returns the key's text when it has no escapes (every key this
// package reads is plain ASCII), else "".
func (m member) name() string {
	k := m.key
	if len(k) < 2 {
		return ""
	}
	k = k[1 : len(k)-1]
	for _, c := range k {
		if c == '\\' {
			return ""
		}
	}
	return string(k)
}

// objectMembers returns the members of the JSON object that is exactly b
// (whitespace around it allowed), in order.
func objectMembers(b []byte) ([]member, error) {
	ms, _, _, err := objectArray(b, "", nil, nil)
	return ms, err
}

// objectArray is objectMembers that also returns, read in the same pass,
// the elements of the array that is the value of the last member named
// name (find's) as arrayElements returns them for that value, and ok; ok
// is false when no member is named name or the last one's value is not
// an array arrayElements reads. A body's messages array is most of its
// bytes: it is walked once, not skipped and then walked again; through
// memo, when it is not nil (see elementsAt).
//
// got, when not nil, is set to what the memo gave for those elements.
func objectArray(b []byte, name string, memo *scanMemo, got *taken) (ms []member, els []span, ok bool, err error) {
	err = eachItem(b, '{', '}', func(i int) (int, error) {
		if b[i] != '"' {
			return 0, errSyntax
		}
		k, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		j := skipWS(b, k)
		if j >= len(b) || b[j] != ':' {
			return 0, errSyntax
		}
		v := skipWS(b, j+1)
		m := member{key: b[i:k]}
		e := -1
		if name != "" && m.name() == name {
			els, e, ok = elementsAt(b, v, memo, got)
		}
		if e < 0 {
			if e, err = skipValue(b, v); err != nil {
				return 0, err
			}
		}
		m.whole, m.val = span{i, e}, span{v, e}
		ms = append(ms, m)
		return e, nil
	})
	if err != nil {
		return nil, nil, false, err
	}
	return ms, els, ok, nil
}

// spanScratch holds the arrays elementsAt appends to (*[]span), for the
// next array read; maxScratchSpans bounds the one kept.
var spanScratch sync.Pool

const maxScratchSpans = 1 << 16

// elementsAt reads the JSON array starting at b[v] as arrayElements reads
// b[v:end]: the spans of its elements (relative to v) and end, the index
// just past its closing bracket. It returns -1 and false where
// arrayElements would fail on the value starting at v (whose end
// skipValue then finds). With a memo, the elements of an array the memo
// kept whose bytes come again as they were are taken from it, not
// scanned: a scan of the same bytes from the same bracket finds the same
// elements, whatever follows them.
//
// got, when not nil, is set to what the memo gave (a scan that then
// fails included).
func elementsAt(b []byte, v int, memo *scanMemo, got *taken) ([]span, int, bool) {
	if got != nil {
		*got = taken{}
	}
	p, _ := spanScratch.Get().(*[]span)
	if p == nil {
		p = new([]span)
	}
	out := (*p)[:0]
	defer func() {
		if cap(out) <= maxScratchSpans {
			*p = out[:0]
			spanScratch.Put(p)
		}
	}()
	var (
		key uint64
		t   taken // what the memo gave
	)
	end, err := eachItemAt(b, v, '[', ']', func(i int) (int, error) {
		e, err := skipNested(b, i, maxDepth-1) // inside the array: one level less
		if err != nil {
			return 0, err
		}
		out = append(out, span{i - v, e - v})
		if memo != nil && len(out) == 2 {
			// The opening read: the elements the memo holds as they came
			// are its, and the scan goes on after the last of them.
			key = memo.key(b[v:e])
			if s, k := memo.lookup(key, b[v:]); k > len(out) {
				out = append(out[:0], s.els[:k]...)
				t = taken{s, k}
				if got != nil {
					*got = t
				}
				e = v + s.els[k-1].end
			}
		}
		return e, nil
	})
	if err != nil {
		return nil, -1, false
	}
	var els []span
	if len(out) > 0 {
		els = slices.Clone(out) // one array of the right size, not the appends' doublings
	}
	if n := len(out); memo != nil && n >= 2 {
		upTo := 0 // the bytes of the array the memo gave elements for
		if t.n > 0 {
			upTo = t.from.els[t.n-1].end
		}
		if memo.anew(upTo, out[n-1].end) {
			memo.keep(key, t.from, b[v:end], els) // through the closing bracket
		}
	}
	return els, end, true
}

// arrayElements returns the spans of the elements of the JSON array that
// is exactly b (whitespace around it allowed).
func arrayElements(b []byte) ([]span, error) {
	var out []span
	err := eachItem(b, '[', ']', func(i int) (int, error) {
		e, err := skipValue(b, i)
		if err != nil {
			return 0, err
		}
		out = append(out, span{i, e})
		return e, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachItem walks the JSON object or array (opening and closing its brackets)
// that is exactly b (whitespace around it allowed): item is called with
// the offset of each member or element, in order, and returns the offset
// just past it; eachItem checks the commas between and the bracket that
// ends it. item is never called at the end of b.
func eachItem(b []byte, opening, closing byte, item func(i int) (int, error)) error {
	end, err := eachItemAt(b, skipWS(b, 0), opening, closing, item)
	if err == nil && skipWS(b, end) != len(b) {
		return errSyntax
	}
	return err
}

// eachItemAt is eachItem for the object or array that starts at b[i] (its
// opening bracket), followed by anything: it returns the index just past
// its closing bracket.
func eachItemAt(b []byte, i int, opening, closing byte, item func(i int) (int, error)) (int, error) {
	if i >= len(b) || b[i] != opening {
		return 0, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return 0, errSyntax
		}
		e, err := item(i)
		if err != nil {
			return 0, err
		}
		i = skipWS(b, e)
		if i >= len(b) {
			return 0, errSyntax
		}
		if b[i] == closing {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, errSyntax
		}
		i = skipWS(b, i+1)
	}
}

// find returns the last member named name (the one encoding/json reads),
// or false.
func find(ms []member, name string) (member, bool) {
	for k := len(ms) - 1; k >= 0; k-- {
		if ms[k].name() == name {
			return ms[k], true
		}
	}
	return member{}, false
}

// replaceMember returns obj, a JSON object whose members are ms, with the
// value of the member named name replaced by val (the last such member,
// as encoding/json reads it); with val nil, the member is removed (with
// the comma that joins it to its neighbour). Everything else is kept as
// it came. obj itself is not written to. ok is false when there is no
// such member.
func replaceMember(obj []byte, ms []member, name string, val []byte) ([]byte, bool) {
	k := -1
	for j := len(ms) - 1; j >= 0; j-- {
		if ms[j].name() == name {
			k = j
			break
		}
	}
	if k < 0 {
		return nil, false
	}
	m := ms[k]
	if val != nil {
		out := make([]byte, 0, len(obj)-(m.val.end-m.val.start)+len(val))
		out = append(out, obj[:m.val.start]...)
		out = append(out, val...)
		return append(out, obj[m.val.end:]...), true
	}
	from, to := m.whole.start, m.whole.end
	switch {
	case k+1 < len(ms): // drop up to the next member
		to = ms[k+1].whole.start
	case k > 0: // the last: drop from the previous member's end
		from = ms[k-1].whole.end
	}
	out := make([]byte, 0, len(obj)-(to-from))
	out = append(out, obj[:from]...)
	return append(out, obj[to:]...), true
}

func init() {
	bytecache.Stable = isStable
	wireapi.Member = func(obj []byte, name string) ([]byte, bool) {
		_, m, ok := only(obj, name)
		if !ok {
			return nil, false
		}
		return obj[m.val.start:m.val.end:m.val.end], true
	}
	wireapi.Elements = func(arr []byte) ([][]byte, bool) {
		spans, err := arrayElements(arr)
		if err != nil {
			return nil, false
		}
		out := make([][]byte, len(spans))
		for i, s := range spans {
			out[i] = arr[s.start:s.end:s.end]
		}
		return out, true
	}
	wireapi.WithMember = func(obj []byte, name string, val []byte) ([]byte, bool) {
		ms, _, ok := only(obj, name)
		if !ok {
			return nil, false
		}
		return replaceMember(obj, ms, name, val)
	}
}

// only returns the members of the JSON object obj and its member name,
// when that member is the one encoding/json reads for name and no other:
// obj has exactly one key that equals name under case folding (as
// encoding/json matches a struct field), spelled exactly so, and no key
// with escapes (which this scanner does not read). Otherwise ok is false:
// a caller that would rewrite the member does not (it encodes instead).
func only(obj []byte, name string) (ms []member, m member, ok bool) {
	ms, err := objectMembers(obj)
	if err != nil {
		return nil, member{}, false
	}
	n := 0
	for _, x := range ms {
		k := x.name()
		if k == "" && len(x.key) != 2 {
			return nil, member{}, false // escaped: it might read as name
		}
		if strings.EqualFold(k, name) {
			if k != name {
				return nil, member{}, false
			}
			n, m = n+1, x
		}
	}
	return ms, m, n == 1
}
