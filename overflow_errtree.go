package history

// This file owns how the overflow classifier reads an error tree: the walk
// (every error reachable through Unwrap, with cycle protection and bounds),
// the calls into caller-supplied methods (which may panic, or be typed nils),
// the structured SDK fields read through small interfaces, and the decoding
// of JSON response bodies.

import (
	"errors"
	"reflect"

	"github.com/histrim/history/internal/errtree"
)

// Bounds of one classification. Both are far above any real SDK error (a
// few nodes, a few kilobytes); they only cap the work on pathological trees.
const (
	// maxErrorNodes bounds the errors visited in one tree, and with it the
	// errors held waiting to be visited: a tree that is wide as well as
	// deep (every error unwrapping to hundreds) holds at most this many,
	// and Unwrap is not called once that many are known. An Unwrap chain
	// that generates new errors forever ends here.
	maxErrorNodes = 1 << 16
	// maxErrorText bounds the bytes of error text examined (normalized and
	// scanned) in one tree. Text beyond it is not read.
	maxErrorText = 32 << 20
	// trackCyclesAfter is the node count from which visited pointers are
	// remembered, so that small trees allocate no set.
	trackCyclesAfter = 64
	// maxJSONDepth bounds the nesting of JSON bodies decoded inside JSON
	// strings (a provider body quoted in a gateway body).
	maxJSONDepth = 4
	// maxJSONItems bounds the elements of one JSON array that are read.
	maxJSONItems = 64
)

// The small interfaces read on every error of the tree. They describe
// methods of SDK errors; the core imports no SDK.
type (
	// httpStatusCoder is AWS smithy's HTTP response error.
	httpStatusCoder interface{ HTTPStatusCode() int }
	// statusCoder is the HTTP status of many SDK and gateway errors.
	statusCoder interface{ StatusCode() int }
	// httpCoder is Google's gax *apierror.APIError.
	httpCoder interface{ HTTPCode() int }
	// errorCoder and errorMessager are AWS smithy's APIError.
	errorCoder    interface{ ErrorCode() string }
	errorMessager interface{ ErrorMessage() string }
	// rawJSONer is the response body as openai-go and anthropic-sdk-go keep
	// it (openai-go: the body's "error" object).
	rawJSONer interface{ RawJSON() string }
)

// frame is one error waiting to be visited, with the index in
// classifier.texts of its parent's text (-1 for the root).
type frame struct {
	err    error
	parent int
}

// nodeText is the Error() text of a visited error, kept so that its children
// can skip what it already showed.
type nodeText struct {
	text string
	// read is how much of text was examined: len(text) unless the text
	// budget ran out inside it.
	read int
	// cursor is where the next child's text is expected (a wrapper with
	// several children lists their texts in order).
	cursor int
}

// walk visits err and every error reachable from it through Unwrap() error
// and Unwrap() []error, depth first, parents before children. It stops at
// maxErrorNodes errors or when the classification is decided (a veto).
func (c *classifier) walk(err error) {
	stack := append(c.stack[:0], frame{err, -1})
	var seen map[errIdentity]struct{}
	for len(stack) > 0 && !c.vetoed {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.err == nil {
			continue
		}
		if c.nodes >= maxErrorNodes {
			break
		}
		c.nodes++
		if c.nodes > trackCyclesAfter {
			if id, ok := errIdentityOf(f.err); ok {
				if seen == nil {
					seen = make(map[errIdentity]struct{})
				}
				if _, dup := seen[id]; dup {
					continue
				}
				seen[id] = struct{}{}
			}
		}
		self := c.visit(f.err, f.parent)
		// Never hold more errors than can still be visited: the first
		// room children, in order, are the ones a depth-first walk
		// would reach first.
		room := maxErrorNodes - c.nodes - len(stack)
		if room <= 0 {
			continue
		}
		many, one := errtree.Unwrap(f.err)
		if one != nil {
			stack = append(stack, frame{one, self})
		}
		if len(many) > room {
			many = many[:room]
		}
		for i := len(many) - 1; i >= 0; i-- {
			stack = append(stack, frame{many[i], self})
		}
	}
	c.stack = stack[:0]
}

// joinErrorType is the type errors.Join returns.
var joinErrorType = reflect.TypeOf(errors.Join(errors.New("")))

// errIdentity identifies an error held by pointer.
type errIdentity struct {
	t reflect.Type
	p uintptr
}

// errIdentityOf returns the identity of an error held by pointer (the only kind
// that can point back at itself); ok is false for other kinds, which the
// node bound covers.
func errIdentityOf(e error) (id errIdentity, ok bool) {
	v := reflect.ValueOf(e)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return errIdentity{v.Type(), v.Pointer()}, true
	}
	return errIdentity{}, false
}

// visit reads one error: its HTTP status, its structured fields, its
// response body and its Error() text. It returns the index of the node's
// text in c.texts, for its children.
func (c *classifier) visit(e error, parent int) int {
	st := safeStructured(e)
	if vetoStatus(st.status) {
		c.vetoed = true
		return -1
	}
	if st.code != "" {
		c.examine(st.code)
	}
	if st.message != "" {
		c.examine(st.message)
	}
	if st.raw != "" {
		c.examineJSON(st.raw)
	}
	if c.vetoed || reflect.TypeOf(e) == joinErrorType {
		// errors.Join's text is its children's texts, one per line, built
		// anew on every call: read the children instead of building it.
		return -1
	}
	s, ok := errtree.Error(e)
	if !ok {
		return -1
	}
	nt := nodeText{text: s}
	if parent >= 0 && c.texts[parent].covers(s) {
		nt.read = len(s) // already examined as part of the parent's text
	} else {
		nt.read = c.examine(s)
	}
	c.texts = append(c.texts, nt)
	return len(c.texts) - 1
}

// covers reports whether child, the Error() text of one of p's children,
// lies in the part of p's text that was examined, at the place a wrapper
// puts it: at the end ("context: %w"), or at the cursor ("%w: context", and
// the children of a wrapper with several %w, in order). It costs
// O(len(child)), so the walk stays linear in the total text. The child's text must stand on word boundaries in p's text, so
// that no word of it was merged with a neighbour there.
func (p *nodeText) covers(child string) bool {
	if child == "" {
		return true
	}
	if p.cursor == 0 {
		// "context: %w", the common case, first.
		at := len(p.text) - len(child)
		if at >= 0 && len(p.text) == p.read && p.text[at:] == child && onBoundary(p.text, at, len(p.text)) {
			return true
		}
	}
	for _, at := range [2]int{p.cursor, p.cursor + 1} {
		end := at + len(child)
		if end <= p.read && p.text[at:end] == child && onBoundary(p.text, at, end) {
			p.cursor = end
			return true
		}
	}
	return false
}

// onBoundary reports whether s[a:b] starts and ends on word boundaries.
func onBoundary(s string, a, b int) bool {
	lower := func(c byte) byte {
		if 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	if a > 0 && isWordByte(lower(s[a-1])) && isWordByte(lower(s[a])) {
		return false
	}
	if b < len(s) && b > a && isWordByte(lower(s[b-1])) && isWordByte(lower(s[b])) {
		return false
	}
	return true
}
