package history

// This file owns reading the numbers of a refusal for length: the shapes
// the provider table (overflow_providers.go) gives its rows, each a pattern
// with the role of each number, and readSizes, which walks them.

import (
	"regexp"
	"strconv"
	"strings"
)

// shape is a pattern that carries numbers, with the role of each submatch.
type shape struct {
	re *regexp.Regexp
	// roles has one letter per submatch:
	//   u  input tokens used (several u are summed),
	//   l  the window, or the input limit,
	//   o  output tokens reserved in the same window (summed),
	//   e  tokens over the limit: used is limit + e,
	//   t  total requested: the used count when nothing else states one,
	//   b  an OpenAI breakdown list "(N in the messages, M in the
	//      completion)": completion and output items are o, the rest u,
	//   -  ignored.
	roles string
}

// num matches a token count, with or without thousands separators.
const num = `(\d{1,3}(?:,\d{3})+|\d+)`

// sh compiles a shape. In pattern, # stands for a token count; the pattern
// is matched against normalized text (lowercase, single spaces, no
// backticks, escapes decoded).
func sh(pattern, roles string) shape {
	re := regexp.MustCompile(strings.ReplaceAll(pattern, "#", num))
	if re.NumSubexp() != len(roles) {
		panic("history: overflow shape " + quote(pattern) + " has " + strconv.Itoa(re.NumSubexp()) + " groups, roles " + quote(roles))
	}
	return shape{re: re, roles: roles}
}

// sizes are the numbers read from an overflow message, in the provider's
// tokens: used input, the whole window (or input limit) and, when the message
// names it, the output reservation counted against the same window.
type sizes struct{ used, limit, output int }

// reItem reads one item of an OpenAI breakdown list.
var reItem = regexp.MustCompile(num + ` (?:in|for|of) (?:the |your )?([a-z ]+)`)

// readSizes tries every shape of the table on the normalized window w and
// returns the first that states both used and limit; failing that, the
// first that states one of them (found is true). found is false when no
// shape with numbers matches.
func readSizes(w []byte) (s sizes, found bool) {
	var partial sizes
	havePartial := false
	for i := range overflowRows {
		for _, shp := range overflowRows[i].shapes {
			m := shp.re.FindSubmatchIndex(w)
			if m == nil {
				continue
			}
			got := shp.read(w, m)
			if got.used > 0 && got.limit > 0 {
				return got, true
			}
			if !havePartial && (got.used > 0 || got.limit > 0) {
				partial, havePartial = got, true
			}
		}
	}
	return partial, havePartial
}

// read maps the submatches m of w to sizes, by the shape's roles.
func (shp shape) read(w []byte, m []int) sizes {
	var s sizes
	excess, total := 0, 0
	for g, role := range []byte(shp.roles) {
		a, b := m[2+2*g], m[3+2*g]
		if a < 0 {
			continue
		}
		part := w[a:b]
		switch role {
		case 'u':
			s.used = satAdd(s.used, atoi(part))
		case 'l':
			s.limit = atoi(part)
		case 'o':
			s.output = satAdd(s.output, atoi(part))
		case 'e':
			excess = atoi(part)
		case 't':
			total = atoi(part)
		case 'b':
			for _, it := range reItem.FindAllSubmatch(part, -1) {
				n := atoi(it[1])
				if what := string(it[2]); strings.Contains(what, "completion") || strings.Contains(what, "output") {
					s.output = satAdd(s.output, n)
				} else {
					s.used = satAdd(s.used, n)
				}
			}
		}
	}
	if excess > 0 && s.limit > 0 && s.used == 0 {
		s.used = min(satAdd(s.limit, excess), maxTokenCount)
	}
	if s.used == 0 && s.output == 0 {
		s.used = total
	}
	return s
}

// maxTokenCount caps parsed numbers: no model window is near it, and it keeps
// later arithmetic far from integer overflow on every platform.
const maxTokenCount = 1 << 30

// atoi parses a token count written with or without thousands separators.
// Anything unparsable or absurdly large reads as 0 (not stated).
func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c == ',' {
			continue
		}
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
		if n > maxTokenCount {
			return 0
		}
	}
	return n
}
