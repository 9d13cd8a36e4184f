// Package recallkey holds the forms of the names in a recall Store that the
// core (history.ScopeStore, history.ElisionHandle) and the backends under
// stores/ (internal/storekit) share, so that a backend's Recall(k) and
// history.ScopeStore(Recall(""), k) name the same results.
package recallkey

import "strings"

// EscapeScope returns scope with '%' written "%25" and '/' written "%2F":
// the form a scope takes in the names a Store holds, which has no '/' and
// so is never the start of another scope's names.
func EscapeScope(scope string) string {
	if !strings.ContainsAny(scope, "%/") {
		return scope
	}
	var b strings.Builder
	b.Grow(len(scope) + 8)
	for i := 0; i < len(scope); i++ {
		switch c := scope[i]; c {
		case '%':
			b.WriteString("%25")
		case '/':
			b.WriteString("%2F")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// IsHandle reports whether h has the form history.ElisionHandle gives a
// handle: "r" and 24 lower-case hex digits.
func IsHandle(h string) bool {
	if len(h) != 25 || h[0] != 'r' {
		return false
	}
	for i := 1; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
