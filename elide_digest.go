// This file owns digests: the short excerpt of a tool result that an
// elided or cut result keeps after its marker (the target of its call,
// its head and tail, the lines likely to be used again), and the target
// of a call. A digest is a function of the result, its call, its size and
// the words that later messages mention (mentions); it is built only for
// the results a trim elides or cuts.

package history

import (
	"slices"
	"strconv"
	"strings"
)

// Digest shapes: the share of a digest's size given to head and tail
// lines first, in percent.
const (
	digestHeadTail = 30 // an elided result: mostly the lines likely to be used again
	cutHeadTail    = 50 // a cut result: a head and tail digest
)

// maxItem is the longest piece of a line a digest shows on its own: a
// longer line (minified JSON, a long log line) is split into pieces of at
// most this many bytes, so that its parts can be chosen apart.
const maxItem = 160

// gapCost is what a digest counts, in EstimateText tokens, for each gap
// marker an item may bring ("[... 12 lines]").
const gapCost = 5

// digestItem is one line of a result, or one piece of a long line.
type digestItem struct {
	start, end int // byte range in the text
	line       int // line number, from 0
	piece      bool
	score      int
	cost       int // EstimateText of the item, its newline and a gap marker; 0 until needed (see itemCost)
}

// digest returns the digest of text, the content of a tool result whose
// call names target, in at most size tokens as measure counts them
// (later, when not nil, tells what later messages do with the salient
// words: see mentions.after)
// (measure returns the cost of a digest as sent; a digest that measure
// finds too large loses its last chosen lines until it fits). share is
// the percentage of size given to head and tail lines before the others.
// It returns "" when size is 0 or less or nothing fits.
func digest(text, target string, size, share int, measure func(string) int, later func(string) int) string {
	if size <= 0 || (text == "" && target == "") {
		return ""
	}
	text = strings.TrimRight(text, "\n")
	items := digestItems(text, later)
	head := ""
	if target != "" {
		head = "excerpt of " + clipText(target, 120) + ":"
	} else {
		head = "excerpt:"
	}
	room := size - EstimateText(head) - 1
	if room <= 0 {
		return ""
	}
	order := chooseItems(text, items, room, room*share/100)
	d := renderDigest(text, head, items, order)
	if measure == nil || measure(d) <= size {
		return d
	}
	// The estimate fell short of measure: keep the longest run of the
	// chosen items, in the order chosen, that fits.
	lo, hi := 0, len(order) // order[:lo] fits (or lo is 0); order[:hi] does not
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if measure(renderDigest(text, head, items, order[:mid])) <= size {
			lo = mid
		} else {
			hi = mid
		}
	}
	if d = renderDigest(text, head, items, order[:lo]); lo > 0 || measure(d) <= size {
		return d
	}
	return ""
}

// digestItems splits text into lines, and long lines into pieces of at
// most maxItem bytes (cut on rune boundaries), with their costs and
// scores (later: see digest).
func digestItems(text string, later func(string) int) []digestItem {
	items := make([]digestItem, 0, strings.Count(text, "\n")+1+len(text)/(4*maxItem))
	seen := make(map[string]bool, len(text)/128)
	line := 0
	for start := 0; start <= len(text); line++ {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		l := text[start:end]
		lineScore := lineKind(l)
		piece := len(l) > maxItem
		for s := start; s < end || s == start; {
			e := min(s+maxItem, end)
			for e < end && e > s && !runeStart(text[e]) {
				e--
			}
			it := digestItem{start: s, end: e, line: line, piece: piece}
			it.score = lineScore + newTokens(text[s:e], seen, later)
			items = append(items, it)
			if e == s {
				break
			}
			s = e
		}
		start = end + 1
	}
	return items
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// itemCost returns the cost of it, an item of text, computed on first
// use: only the items a digest may show are measured.
func itemCost(text string, it *digestItem) int {
	if it.cost == 0 {
		it.cost = EstimateText(text[it.start:it.end]) + 1 + gapCost
	}
	return it.cost
}

// lineKind scores a line for what it is: an error or warning report, or
// a definition (an item a reader refers to by name).
func lineKind(l string) int {
	score := 0
	if containsFold(l, errorWords[:]) {
		score += 6
	}
	t := strings.TrimLeft(l, " \t")
	// Line-numbered listings ("  12→", "12:", "12\t") show the number first.
	if i := strings.IndexFunc(t, func(r rune) bool { return r < '0' || r > '9' }); i > 0 {
		t = t[i:]
		for _, sep := range [...]string{"→", ":", "\t", "|", " "} {
			if strings.HasPrefix(t, sep) {
				t = strings.TrimLeft(t[len(sep):], " \t")
				break
			}
		}
	}
	if t == "" {
		return score
	}
	for _, k := range defWords[t[0]] {
		if len(t) > len(k) && t[:len(k)] == k && (t[len(k)] == ' ' || t[len(k)] == '(') {
			return score + 3
		}
	}
	return score
}

// errorWords mark a line that reports an error or a warning (matched
// ignoring case).
var errorWords = [...]string{"error", "exception", "traceback", "panic", "fail", "fatal", "denied", "not found", "undefined", "cannot", "invalid", "warning"}

// defWords start a definition or a declaration in common languages, by
// their first byte.
var defWords = func() (byFirst [256][]string) {
	for _, w := range [...]string{
		"func", "def", "class", "type", "struct", "interface", "enum", "trait", "impl", "fn", "pub",
		"module", "defmodule", "defp", "defmacro", "package", "const", "var", "let", "export",
		"public", "private", "protected", "static", "async", "import", "from", "use", "alias",
		"require", "#include", "#define", "CREATE", "@spec", "@callback",
	} {
		byFirst[w[0]] = append(byFirst[w[0]], w)
	}
	return byFirst
}()

// containsFold reports whether s contains one of words (lower case, each
// starting with two letters), ignoring the case of ASCII letters in s. It
// looks at a byte only when it and the next one may start a word.
func containsFold(s string, words []string) bool {
	var second [26]uint32 // for each first letter, the second letters that follow it in words
	for _, w := range words {
		second[w[0]-'a'] |= 1 << (w[1] - 'a')
	}
	for i := 0; i+1 < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' || second[c-'a'] == 0 {
			continue
		}
		d := s[i+1] | 0x20
		if d < 'a' || d > 'z' || second[c-'a']&(1<<(d-'a')) == 0 {
			continue
		}
		for _, w := range words {
			if c == w[0] && len(s)-i >= len(w) && equalFoldASCII(s[i:i+len(w)], w) {
				return true
			}
		}
	}
	return false
}

func equalFoldASCII(s, lower string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// newTokens scores the salient words of s not seen before in the result
// (seen records them): 2 each, at most 8, and mentionScore each that a
// later message mentions, at most 3 of them; a word that a later result
// shows again scores nothing (later: see mentions.after; nil: none of
// that is known). Salient words are those a reader copies: paths, dotted,
// underscored and camelCase names, ids and hashes, error codes.
func newTokens(s string, seen map[string]bool, later func(string) int) int {
	score, mentioned := 0, 0
	salientWords(s, func(w string) {
		if seen[w] {
			return
		}
		seen[w] = true
		v := 0
		if later != nil {
			v = laterOf(w, later)
		}
		switch {
		case v < 0:
		case v > 0 && mentioned < 3:
			mentioned++
			fallthrough
		default:
			score += 2
		}
	})
	return min(score, 8) + mentioned*mentionScore
}

// chooseItems returns the items to show, in the order chosen, within room
// (EstimateText tokens): head and tail lines first up to headTail, then
// the items with the highest scores (errors, definitions, new salient
// words; earlier first among equals), then more head and tail lines.
func chooseItems(text string, items []digestItem, room, headTail int) []int {
	var order []int
	used := 0
	taken := make([]bool, len(items))
	take := func(i int) bool {
		c := itemCost(text, &items[i])
		if (i > 0 && taken[i-1]) || (i+1 < len(items) && taken[i+1]) {
			c -= gapCost // next to a line shown: no gap marker of its own
		}
		if taken[i] || used+c > room {
			return false
		}
		taken[i], used = true, used+c
		order = append(order, i)
		return true
	}
	blank := func(i int) bool { return strings.TrimSpace(text[items[i].start:items[i].end]) == "" }
	// Head and tail, alternately, skipping blank lines.
	h, t := 0, len(items)-1
	fill := func(limit int) {
		for h <= t && used < limit {
			for h <= t && blank(h) {
				h++
			}
			if h > t || !take(h) {
				break
			}
			h++
			for t >= h && blank(t) {
				t--
			}
			if t < h || used >= limit || !take(t) {
				break
			}
			t--
		}
	}
	fill(headTail)
	ranked := make([]int, 0, len(items))
	for i := range items {
		if !taken[i] && items[i].score > 0 {
			ranked = append(ranked, i)
		}
	}
	// Best value first: score per token of cost (cross-multiplied, so
	// that equal ratios keep text order).
	for _, i := range ranked {
		itemCost(text, &items[i])
	}
	slices.SortStableFunc(ranked, func(a, b int) int {
		return items[b].score*items[a].cost - items[a].score*items[b].cost
	})
	for _, i := range ranked {
		take(i)
	}
	fill(room)
	return order
}

// renderDigest writes head, then the chosen items in text order, with
// gap markers for the lines left out.
func renderDigest(text, head string, items []digestItem, order []int) string {
	chosen := slices.Clone(order)
	slices.Sort(chosen)
	var b strings.Builder
	b.WriteString(head)
	prev := -1 // the previous item shown
	for _, i := range chosen {
		it := &items[i]
		switch {
		case prev >= 0 && items[prev].line == it.line && prev == i-1:
			// the next piece of the same line: no break
		case prev >= 0 && items[prev].line == it.line:
			b.WriteString(" … ")
		default:
			from := 0
			if prev >= 0 {
				from = items[prev].line + 1
			}
			if gap := it.line - from; gap > 0 {
				b.WriteString("\n[... " + strconv.Itoa(gap) + " lines]")
			}
			b.WriteByte('\n')
			if it.piece && (i == 0 || items[i-1].line != it.line) {
				// the first piece of a long line
			} else if it.piece {
				b.WriteString("… ")
			}
		}
		b.WriteString(text[it.start:it.end])
		prev = i
	}
	if prev >= 0 {
		last := items[len(items)-1].line
		if gap := last - items[prev].line; gap > 0 {
			b.WriteString("\n[... " + strconv.Itoa(gap) + " lines]")
		}
	}
	return b.String()
}

// clipText returns s, or its first n bytes (on a rune boundary) and "…".
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !runeStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// resultText returns the text a model reads in tool result m: its
// content and its text parts, one per line.
func resultText(m *Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var b strings.Builder
	b.WriteString(m.Content)
	for _, p := range m.Parts {
		if p.Type == PartText && p.Text != "" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
