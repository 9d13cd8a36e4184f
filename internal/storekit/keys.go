package storekit

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// MaxRawKey is the longest key a backend stores as it is; a longer one is
// stored hashed (Key).
const MaxRawKey = 1024

// HashedKeyPrefix starts the stored form of every key that is not stored
// as it is (Key). A key that starts with it is itself stored hashed, so
// no raw key is ever stored under a name that starts with it.
const HashedKeyPrefix = "~sha256:"

// Key returns the name under which a backend stores what a caller keeps
// under key (a conversation's, a model's, a recall scope's and handle):
// key itself when every backend can store it as it is (valid UTF-8, no
// NUL, at most MaxRawKey bytes, not starting with HashedKeyPrefix), else
// HashedKeyPrefix and the hex SHA-256 of key. Distinct keys get distinct
// names (up to SHA-256 collisions), and every name is valid UTF-8 without
// NUL, which PostgreSQL's text needs, of at most MaxRawKey bytes, which
// its index entries need.
func Key(key string) string {
	if len(key) <= MaxRawKey && utf8.ValidString(key) && strings.IndexByte(key, 0) < 0 && !strings.HasPrefix(key, HashedKeyPrefix) {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return HashedKeyPrefix + hex.EncodeToString(sum[:])
}

// EscapeScope returns scope with '%' written "%25" and '/' written "%2F",
// as history.ScopeStore writes it: a form without '/', so that no scope's
// names start with another's, and the backend's Recall(k) names what
// history.ScopeStore(Recall(""), k) names.
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

// ValidHandle reports whether a recall Store may be asked for h: a handle
// history.ElisionHandle makes ("r" and 24 lower-case hex digits), after
// any number of scopes history.ScopeStore adds (each escaped, non-empty,
// followed by '/').
func ValidHandle(h string) bool {
	if i := strings.LastIndexByte(h, '/'); i >= 0 {
		if strings.Contains(h[:i+1], "//") || h[0] == '/' {
			return false
		}
		h = h[i+1:]
	}
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
