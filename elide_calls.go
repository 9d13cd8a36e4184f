// This file owns what elision reads of a tool call's arguments: the target
// a digest names, and whether a call reads, writes or rewrites a file (for
// superseded results).

package history

import (
	"strconv"
	"strings"
)

// Argument names that hold the target of a call: paths first, then what
// other tools act on.
var (
	pathKeys   = [...]string{"file_path", "path", "filepath", "filename", "file", "notebook_path", "target_file", "absolute_path"}
	targetKeys = [...]string{"url", "command", "cmd", "pattern", "query"}
)

// callPath returns the path a call's JSON arguments name (the first of
// pathKeys with a string value), or "".
func callPath(args string) string {
	for _, k := range pathKeys {
		if v, ok := jsonField(args, k); ok && v != "" {
			return v
		}
	}
	return ""
}

// callTarget returns the path or target a call's JSON arguments name, or
// "".
func callTarget(args string) string {
	if p := callPath(args); p != "" {
		return p
	}
	for _, k := range targetKeys {
		if v, ok := jsonField(args, k); ok && v != "" {
			return v
		}
	}
	return ""
}

// jsonField returns the string value of the first member named key in
// the JSON text args, found by a scan, not a parse (a member of a nested
// object, or a string that looks like a member, may be found instead; a
// target is a hint).
func jsonField(args, key string) (string, bool) {
	q := `"` + key + `"`
	for off := 0; ; {
		i := strings.Index(args[off:], q)
		if i < 0 {
			return "", false
		}
		off += i + len(q)
		s := strings.TrimLeft(args[off:], " \t\r\n")
		if !strings.HasPrefix(s, ":") {
			continue
		}
		s = strings.TrimLeft(s[1:], " \t\r\n")
		if !strings.HasPrefix(s, `"`) {
			return "", false
		}
		esc := false
		for j := 1; j < len(s); j++ {
			switch {
			case esc:
				esc = false
			case s[j] == '\\':
				esc = true
			case s[j] == '"':
				v := s[1:j]
				if strings.IndexByte(v, '\\') >= 0 {
					u, err := strconv.Unquote(s[:j+1])
					if err != nil {
						return v, true
					}
					v = u
				}
				return v, true
			}
		}
		return "", false
	}
}

// readsFile reports whether a call reads a file: its name says so (read,
// view, cat, open, show), or an editor tool's "command" argument is
// "view".
func readsFile(name, args string) bool {
	if cmd, ok := jsonField(args, "command"); ok && len(cmd) < 16 {
		return cmd == "view" || cmd == "read"
	}
	return nameHas(name, readWords[:])
}

// writesFile reports whether a call writes a file: its name says so, or
// an editor tool's "command" argument does.
func writesFile(name, args string) bool {
	if cmd, ok := jsonField(args, "command"); ok && len(cmd) < 16 {
		return nameHas(cmd, writeWords[:])
	}
	return nameHas(name, writeWords[:])
}

// nameHas reports whether one of the words of name (split at '_', '-',
// '.', ' ' and lower-to-upper case changes: "read_file", "MultiEdit")
// is one of words (lower case), ignoring case.
func nameHas(name string, words []string) bool {
	start := 0
	for i := 0; i <= len(name); i++ {
		end := i == len(name)
		if !end {
			c := name[i]
			sep := c == '_' || c == '-' || c == '.' || c == ' '
			hump := c >= 'A' && c <= 'Z' && i > 0 && name[i-1] >= 'a' && name[i-1] <= 'z'
			if !sep && !hump {
				continue
			}
		}
		if w := name[start:i]; w != "" {
			for _, x := range words {
				if len(w) == len(x) && equalFoldASCII(w, x) {
					return true
				}
			}
		}
		start = i
		if !end && name[i] != '_' && name[i] != '-' && name[i] != '.' && name[i] != ' ' {
			continue // a hump starts the next word
		}
		start = i + 1
	}
	return false
}

// rewritesFile reports whether a call writes a whole file (not an edit
// of part of it): its name says write or create, or an editor tool's
// "command" argument is "create".
func rewritesFile(name, args string) bool {
	if cmd, ok := jsonField(args, "command"); ok && len(cmd) < 16 {
		return cmd == "create" || cmd == "write"
	}
	return nameHas(name, fileWriteWords[:]) && !nameHas(name, editWords[:])
}

// readsPart reports whether a read's arguments name a part of the file
// (a range of lines), so that it shows less than a whole read.
func readsPart(args string) bool {
	for _, k := range rangeKeys {
		if strings.Contains(args, `"`+k+`"`) {
			return true
		}
	}
	return false
}

var (
	fileWriteWords = [...]string{"write", "create", "save"}
	editWords      = [...]string{"edit", "replace", "patch", "insert"}
	rangeKeys      = [...]string{"offset", "limit", "view_range", "start_line", "end_line", "line_range", "lines", "range"}
	readWords      = [...]string{"read", "view", "cat", "open", "show"}
	writeWords     = [...]string{"write", "edit", "create", "replace", "patch", "insert", "delete", "remove", "apply", "save", "undo"}
)
