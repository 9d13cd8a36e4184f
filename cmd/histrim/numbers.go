package main

import (
	"math"
	"strconv"
	"strings"
)

// num writes n with thousands separators: 1,234,567.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	if len(s) <= 3 {
		if neg {
			return "-" + s
		}
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/3 + 1)
	if neg {
		b.WriteByte('-')
	}
	head := len(s) % 3
	if head > 0 {
		b.WriteString(s[:head])
	}
	for i := head; i < len(s); i += 3 {
		if b.Len() > 0 && !(neg && b.Len() == 1) {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// fnum writes f rounded to an integer, with thousands separators.
func fnum(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e18 {
		return ftoa(f, 0)
	}
	return num(int(math.Round(f)))
}

// ftoa writes f with prec decimals (-1: as few as needed).
func ftoa(f float64, prec int) string {
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// tokensBefore shows a TokensBefore with show, or "not counted" for the -1
// of a trim that did not count what it dropped (the command counts it,
// history.WithFullCount; the library's default does not).
func tokensBefore(n int, show func(int) string) string {
	if n < 0 {
		return "not counted"
	}
	return show(n)
}
