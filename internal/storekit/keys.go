package storekit

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"

	"github.com/histrim/history/internal/recallkey"
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
	return recallkey.IsHandle(h)
}
