// This file owns what digests learn from later messages: the salient
// words (identifiers, paths, ids) a later message mentions, indexed once
// per trim (mentions), which a digest's lines score by (elide_digest.go).

package history

import "strings"

// mentionScore is what a digest line scores for each salient word that a
// later message mentions: more than an error line, so that what the agent
// went on to use goes first.
const mentionScore = 10

// mentionKeys calls f with the keys a salient word w is indexed and
// looked up by, until f returns true: w and each of its suffixes after a
// '/' or a '.' that is itself salient (a path's file name, a dotted
// name's last part).
func mentionKeys(w string, f func(string) bool) bool {
	if f(w) {
		return true
	}
	for k := 0; k < len(w)-1; k++ {
		if (w[k] == '/' || w[k] == '.') && len(w)-k-1 >= 4 && salientWord(w[k+1:]) && f(w[k+1:]) {
			return true
		}
	}
	return false
}

// laterOf returns what later says of w itself (a later result shows it:
// -1), or else of the first of its keys a later message mentions (1), or
// 0.
func laterOf(w string, later func(string) int) int {
	if v := later(w); v != 0 {
		return v
	}
	if mentionKeys(w, func(k string) bool { return later(k) > 0 }) {
		return 1
	}
	return 0
}

// mentions indexes the salient words of a view from index from on: each
// at the index of the last message that mentions it (the text of assistant
// and user-role messages, and the arguments of tool calls), and of the
// last tool result that shows it. A digest prefers the lines of a result
// whose words a later message went on to mention (an identifier, a path
// or an error the agent used again is likely used once more), and gives no
// credit for the words a later result shows again (that result is the
// current one: a re-read file, a listing run again). It is built on first
// use.
type mentions struct {
	msgs          []Message
	from          int
	last, results map[string]int
}

// after returns the test of a digest for the result at index i: 1 when a
// message after it mentions a word (and no later result shows it), -1
// when a later result shows it, 0 otherwise. A nil mentions has none.
func (mt *mentions) after(i int) func(string) int {
	if mt == nil {
		return nil
	}
	if mt.last == nil {
		mt.build()
	}
	return func(w string) int {
		if j, ok := mt.results[w]; ok && j > i {
			return -1
		}
		if j, ok := mt.last[w]; ok && j > i {
			return 1
		}
		return 0
	}
}

func (mt *mentions) build() {
	mt.last, mt.results = map[string]int{}, map[string]int{}
	for i := max(mt.from, 0); i < len(mt.msgs); i++ {
		m := &mt.msgs[i]
		switch {
		case m.Role == RoleSystem || m.Kind == KindElided:
		case m.Role == RoleTool:
			mt.index(mt.results, resultText(m), i)
		default:
			mt.index(mt.last, resultText(m), i)
			for _, c := range m.ToolCalls {
				mt.index(mt.last, c.Arguments, i)
			}
		}
	}
}

// index records the salient words of s in at, at i (see mentionKeys).
func (mt *mentions) index(at map[string]int, s string, i int) {
	salientWords(s, func(w string) {
		mentionKeys(w, func(k string) bool { at[k] = i; return false })
	})
}

// salientWords calls yield with each salient word of s (salientWord, 4
// bytes at least), in order: the maximal runs of wordChar bytes, trimmed
// of the '.', '-' and '/' around them.
func salientWords(s string, yield func(w string)) {
	for i := 0; i < len(s); {
		if !wordChar(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && wordChar(s[j]) {
			j++
		}
		w := strings.Trim(s[i:j], ".-/")
		i = j
		if len(w) >= 4 && salientWord(w) {
			yield(w)
		}
	}
}

func wordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-'
}

// salientWord reports whether w (letters, digits, '_', '.', '/', '-')
// reads as a path, a dotted, underscored or camelCase name, or an id.
func salientWord(w string) bool {
	letters, digits := 0, 0
	sep, camel := false, false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z':
			letters++
		case c >= 'A' && c <= 'Z':
			letters++
			camel = camel || (i > 0 && w[i-1] >= 'a' && w[i-1] <= 'z')
		case c >= '0' && c <= '9':
			digits++
		default: // '_', '.', '/', '-'
			sep = sep || (c != '-' && i > 0 && i < len(w)-1)
		}
	}
	return letters > 0 && (sep || camel || (digits >= 2 && len(w) >= 5))
}
