package refs

import (
	"encoding/json"
	"strings"
)

// Salient tokens are what an agent copies out of a tool result when it
// uses it: file paths, dotted, underscored and camelCase identifiers, ids
// and hashes, and error codes. A text's tokens are its maximal runs of
// [A-Za-z0-9_./~-], trimmed of trailing punctuation, that read as one of
// those, together with their salient parts (the suffixes of a path, the
// runs of two or more components of a dotted name, and the components
// that are salient on their own), so that "plan.go" written by the model
// matches "/repo/plan.go" in a result.

// minToken is the shortest salient token, in bytes.
const minToken = 4

// tokenSet is the set of salient tokens of one text.
type tokenSet map[string]struct{}

func (s tokenSet) add(t string) { s[t] = struct{}{} }

// has reports whether t is in s.
func (s tokenSet) has(t string) bool { _, ok := s[t]; return ok }

// tokensOf returns the salient tokens of s, added to set (nil: a new set).
func tokensOf(s string, set tokenSet) tokenSet {
	if set == nil {
		set = make(tokenSet)
	}
	for i := 0; i < len(s); {
		if !wordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && wordByte(s[j]) {
			j++
		}
		word(s[i:j], set)
		i = j
	}
	return set
}

// argValues returns the string values of a call's JSON arguments, joined
// by newlines (the raw arguments when they are not JSON): the text the
// model wrote, without the argument names.
func argValues(args string) string {
	var v any
	if json.Unmarshal([]byte(args), &v) != nil {
		return args
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v)
			b.WriteByte('\n')
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '~' || c == '-'
}

// word adds the salient tokens of one run of word bytes to set.
func word(w string, set tokenSet) {
	w = strings.TrimRight(w, ".-/~")
	w = strings.TrimLeft(w, "-~")
	if len(w) < minToken {
		return
	}
	if strings.Contains(w, "/") {
		path(w, set)
		return
	}
	if strings.Contains(w, ".") {
		dotted(w, set)
		return
	}
	if strings.Contains(w, "-") {
		if isUUIDish(w) {
			set.add(w)
			return
		}
		for _, p := range strings.Split(w, "-") {
			if salientAtom(p) {
				set.add(p)
			}
		}
		return
	}
	if salientAtom(w) {
		set.add(w)
	}
}

// path adds a path (a word with a slash) and its suffixes after each
// slash, and the salient parts of its last component.
func path(w string, set tokenSet) {
	if !hasLetter(w) || len(w) < 5 {
		return
	}
	set.add(w)
	for i := 0; i < len(w); i++ {
		if w[i] == '/' && i+1 < len(w) {
			if s := w[i+1:]; len(s) >= minToken && (strings.ContainsAny(s, "/.") || salientAtom(s)) {
				set.add(s)
			}
		}
	}
	last := w[strings.LastIndexByte(w, '/')+1:]
	if strings.Contains(last, ".") {
		dotted(last, set)
	}
}

// dotted adds a dotted name (a file name, a qualified identifier) with at
// least one letter, every run of two or more of its components, and the
// components that are salient on their own.
func dotted(w string, set tokenSet) {
	parts := strings.Split(w, ".")
	for _, p := range parts {
		if p == "" {
			return // "a..b": not a name
		}
	}
	if !hasLetter(w) {
		return // a version or a number
	}
	for i := range parts {
		for j := i + 2; j <= len(parts); j++ {
			if s := strings.Join(parts[i:j], "."); len(s) >= minToken {
				set.add(s)
			}
		}
		if salientAtom(parts[i]) {
			set.add(parts[i])
		}
	}
}

// salientAtom reports whether a word with no separator but underscores is
// salient on its own: underscored, camelCase, an id or hash, an error
// code.
func salientAtom(w string) bool {
	if len(w) < minToken {
		return false
	}
	letters, digits, upper, lower := 0, 0, 0, 0
	camel, under := false, false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z':
			letters++
			lower++
		case c >= 'A' && c <= 'Z':
			letters++
			upper++
			if i > 0 && w[i-1] >= 'a' && w[i-1] <= 'z' {
				camel = true
			}
		case c >= '0' && c <= '9':
			digits++
		case c == '_':
			if i > 0 && i < len(w)-1 && w[i-1] != '_' && w[i+1] != '_' {
				under = true
			}
		default:
			return false
		}
	}
	switch {
	case letters == 0:
		return false // a number
	case under, camel:
		return true
	case digits >= 2 && len(w) >= 5:
		return true // an id, a hash, an error code (E0308, TS2304, HAT170)
	case isHex(w) && len(w) >= 7 && digits >= 1:
		return true
	case upper == letters && upper >= 4 && errnos[w]:
		return true
	}
	return false
}

// errnos are POSIX error names, which are error codes without digits.
var errnos = map[string]bool{
	"ENOENT": true, "EACCES": true, "EEXIST": true, "EPERM": true, "ENOTDIR": true, "EISDIR": true,
	"EINVAL": true, "EAGAIN": true, "EPIPE": true, "ECONNREFUSED": true, "ECONNRESET": true,
	"ETIMEDOUT": true, "EADDRINUSE": true, "ENOSPC": true, "EBUSY": true, "ENOTEMPTY": true,
}

func isHex(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isUUIDish reports a run of hex groups joined by dashes, with digits in
// it (a UUID, a request id).
func isUUIDish(w string) bool {
	parts := strings.Split(w, "-")
	if len(parts) < 3 {
		return false
	}
	digits, letters := 0, 0
	for _, p := range parts {
		if p == "" || !isHex(strings.ToLower(p)) {
			return false
		}
		for i := 0; i < len(p); i++ {
			if p[i] >= '0' && p[i] <= '9' {
				digits++
			} else {
				letters++
			}
		}
	}
	return digits >= 3 && letters >= 1 // a date (2024-05-21) is no id
}

func hasLetter(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

// Visible reports whether token t appears in text s as a whole token: not
// inside a longer identifier (the bytes around it are not letters, digits
// or underscores).
func Visible(s, t string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], t)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(t)
		if (i == 0 || !identByte(s[i-1])) && (j == len(s) || !identByte(s[j])) {
			return true
		}
		off = i + 1
	}
}

func identByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
