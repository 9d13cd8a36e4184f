package main

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/histrim/history"
)

//go:embed report.html.tmpl
var reportTemplate string

// reportTmpl is parsed once; executing it is safe for concurrent use.
var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":   num,
	"add":   func(a, b int) int { return a + b },
	"sub":   func(a, b int) int { return a - b },
	"plotH": func() int { return plotH },
	// The layout, shared with the Go that places the marks.
	"svgW":     func() int { return svgWidth },
	"chartX":   func() int { return chartX },
	"chartEnd": func() int { return chartX + chartW },
	"chartMid": func() int { return chartX + chartW/2 },
	"labelX":   func() int { return chartX - 8 },
}).Parse(reportTemplate))

// Chart geometry, in SVG user units (CSS pixels at 100%).
const (
	svgWidth = 1200
	labelW   = 210                        // the label column, left of every chart
	rightW   = 86                         // the numbers right of the bars
	chartW   = svgWidth - labelW - rightW // the plotting width
	chartX   = labelW                     // where plotting starts
	rowH     = 22                         // a turn's bar
	rowStep  = rowH + 10                  // from one bar to the next
	stripH   = 22                         // the transcript and sent strips
	plotH    = 170                        // the replay's plotting height
	replayH  = plotH + 56                 // a replay chart
	maxTicks = 6                          // on an axis, at most
	panelGap = 46                         // between the strips and the bars
)

// page is what report.html.tmpl renders.
type page struct {
	Title   string
	Input   string
	Options string
	Fates   []legendItem
	Numbers []pair
	Event   []pair
	Chart   trimChart
	Turns   []turnRow
	Msgs    []messageRow
	Replay  *replayChart
}

// pair is a labelled figure; Key is its stable data-key.
type pair struct{ Key, Label, Value string }

// legendItem is one fate in the legend.
type legendItem struct {
	Name, Help, Color, Mark, Ink string
	Count                        int
}

// trimChart is the SVG of the trim.
type trimChart struct {
	H                                   int
	Budget, Before, After, DroppedTurns int
	// The strips: the transcript and the sent prompt, on one scale.
	Transcript, Sent []seg
	// SentNotices are the messages the trim inserted, drawn over Sent.
	SentNotices []seg
	StripW      [2]string // their drawn widths
	Lines       []vline   // budget, trigger, low-water on the strips
	StripTicks  []tick
	// The bars, one per turn, on their own scale.
	BarsY    int
	Bars     []barRow
	BarLines []vline
	BarTicks []tick
	AxisY    int
}

// seg is one message drawn in a strip or a bar.
type seg struct {
	X, W   string
	Fate   string
	Index  int
	Tokens int
	Title  string
}

// noticeW is the smallest width of a message the trim inserted: a
// breadcrumb of a few tokens would not show in a bar of thousands.
const noticeW = 4.0

// notice returns sg, a message the trim inserted at x with width w, made
// at least noticeW wide around its place.
func notice(sg seg, x, w float64) seg {
	if w < noticeW {
		sg.X = coord(float64(chartX) + x + (w-noticeW)/2)
		sg.W = coord(noticeW)
	}
	return sg
}

// barRow is one turn's bar.
type barRow struct {
	Turn, Tokens, Messages int
	Fate, Label, Sub       string
	Y, TextY, SubY         int
	W, TokensX             string
	// Segs are its input messages; Notices the messages the trim
	// inserted in it, drawn over them.
	Segs, Notices []seg
}

// vline is a labelled vertical line.
type vline struct {
	X, Label, Class string
	Y1, Y2, TextY   int
	Anchor, DX      string // the label's text-anchor and offset
}

// labelWidth is an upper estimate of the width of an SVG label.
func labelWidth(s string) float64 {
	return 7 * float64(utf8.RuneCountInString(s))
}

// tick is a labelled mark on an axis.
type tick struct {
	Pos, Label string
}

// turnRow and messageRow are the rows of the report's tables.
type turnRow struct {
	Name, Range, Fate, Breakdown string
	Turn, Tokens                 int
}

type messageRow struct {
	Index, Turn, Role, Tokens, Sent, Fate, Preview string
}

// htmlOptions are the settings the report states.
type htmlOptions struct {
	name, format, counter string
	budget                int
	trigger, lowWater     float64
	ladder                string // the ladder's flags, as the user gave them
}

// writeHTML renders the report of the trim in v, and of the replay rv when
// it is not nil, to w.
func writeHTML(w io.Writer, o htmlOptions, r *report, v *trimView, rv *replayView) error {
	p := page{
		Title: o.name,
		Input: strconv.Itoa(r.Messages) + " messages (" + o.format + "), counter " + o.counter,
	}
	p.Options = "budget " + num(o.budget)
	if o.trigger > 0 {
		p.Options += " · trigger " + ftoa(o.trigger, -1) + " (" + num(share(o.budget, o.trigger)) + ")"
	}
	if o.lowWater > 0 {
		p.Options += " · low-water " + ftoa(o.lowWater, -1) + " (" + num(share(o.budget, o.lowWater)) + ")"
	}
	if o.ladder != "" {
		p.Options += " · " + o.ladder
	}
	for i, f := range fates {
		p.Fates = append(p.Fates, legendItem{Name: f.Name, Help: f.Help, Color: f.Color, Mark: f.Mark, Ink: f.Ink, Count: v.Fates[i]})
	}
	p.Numbers = trimNumbers(r)
	p.Event = eventPairs(r.Event)
	p.Chart = newTrimChart(o, r, v)
	p.Turns, p.Msgs = tables(v)
	if rv != nil {
		p.Replay = newReplayChart(o, rv)
	}
	return reportTmpl.Execute(w, &p)
}

// trimNumbers are the figures of the trim.
func trimNumbers(r *report) []pair {
	outcome := "fits: nothing dropped"
	switch {
	case r.OverBudget:
		outcome = "over budget: the prefix and the latest turn alone do not fit"
	case r.Trimmed:
		outcome = "trimmed"
	}
	return []pair{
		{"outcome", "outcome", outcome},
		{"budget", "budget", num(r.Budget)},
		{"tokens_before", "tokens before", tokensBefore(r.TokensBefore, num)},
		{"tokens_after", "tokens sent", num(r.TokensAfter)},
		{"kept_turns", "turns kept", num(r.KeptTurns)},
		{"dropped_turns", "turns dropped", num(r.DroppedTurns)},
		{"dropped_messages", "messages dropped", num(r.DroppedMsgs)},
		{"orphans_removed", "orphans removed", num(r.OrphansRemoved)},
	}
}

// eventPairs are the event's figures, nil when there is no event.
func eventPairs(e *history.Event) []pair {
	if e == nil {
		return nil
	}
	ps := []pair{
		{"reason", "reason", e.Reason},
		{"dropped_turns", "dropped turns", num(e.DroppedTurns)},
		{"dropped_messages", "dropped messages", num(e.DroppedMessages)},
		{"dropped_steps", "dropped steps", num(e.DroppedSteps)},
		{"elided_results", "elided results", num(e.ElidedResults)},
		{"tokens_before", "tokens before", tokensBefore(e.TokensBefore, num)},
		{"tokens_after", "tokens after", num(e.TokensAfter)},
		{"budget", "budget", num(e.Budget)},
	}
	if b, err := json.Marshal(e); err == nil {
		ps = append(ps, pair{"json", "as JSON", string(b)})
	}
	return ps
}

// lay lays the messages idx of v out in a row from chartX, sx pixels a
// token (their tokens as sent when sent is true): the segments of the
// transcript's messages, those of the notices, and the row's width. long
// asks for the segments' long titles.
func lay(v *trimView, idx []int, sx float64, sent, long bool) (segs, notices []seg, x float64) {
	segs = make([]seg, 0, len(idx))
	for _, i := range idx {
		m := &v.Msgs[i]
		tokens := m.Tokens
		if sent {
			tokens = m.SentTokens
		}
		w := float64(tokens) * sx
		sg := seg{X: coord(float64(chartX) + x), W: coord(w), Fate: fateName(m.Fate), Index: m.Index, Tokens: tokens, Title: segTitle(m, long)}
		if m.Index < 0 {
			notices = append(notices, notice(sg, x, w))
		} else {
			segs = append(segs, sg)
		}
		x += w
	}
	return segs, notices, x
}

// newTrimChart lays out the trim: two strips (the transcript and what was
// sent, on the scale of the larger of them and the budget, with the budget
// line), then one bar per turn, on the scale of the largest bar.
func newTrimChart(o htmlOptions, r *report, v *trimView) trimChart {
	c := trimChart{Budget: r.Budget, Before: v.Before, After: v.After, DroppedTurns: r.DroppedTurns}
	const top = 32 // the strips' top, as report.html.tmpl draws them; the lines' labels are above
	sMax := max(v.Before, v.After, o.budget, 1)
	sx := float64(chartW) / float64(sMax)
	var x float64
	c.Transcript = make([]seg, 0, len(v.Msgs))
	for i := range v.Msgs {
		m := &v.Msgs[i]
		if m.Index < 0 {
			continue
		}
		w := float64(m.Tokens) * sx
		c.Transcript = append(c.Transcript, seg{X: coord(float64(chartX) + x), W: coord(w), Fate: fateName(m.Fate), Index: m.Index, Tokens: m.Tokens, Title: segTitle(m, false)})
		x += w
	}
	c.StripW[0] = coord(x)
	c.Sent, c.SentNotices, x = lay(v, v.Sent, sx, true, false)
	c.StripW[1] = coord(x)
	stripBottom := top + 2*stripH + 6
	type level struct {
		class, name string
		at          int
	}
	marks := []level{{"budget", "budget", o.budget}}
	if o.trigger > 0 {
		marks = append(marks, level{"trigger", "trigger", share(o.budget, o.trigger)})
	}
	if o.lowWater > 0 {
		t := share(o.budget, o.lowWater)
		if o.trigger > 0 {
			t = min(t, share(o.budget, o.trigger)) // the core caps it at the trigger
		}
		marks = append(marks, level{"lowwater", "low-water", t})
	}
	slices.SortStableFunc(marks, func(a, b level) int { return cmp.Compare(a.at, b.at) })
	// Labels go above the strips, in up to three lanes so that close
	// lines do not write over each other.
	var lanes [3]float64 // where the last label of each lane ends
	for _, m := range marks {
		lx := float64(chartX) + float64(m.at)*sx
		l := vline{X: coord(lx), Label: m.name + " " + num(m.at), Class: m.class, Y2: stripBottom, Anchor: "start", DX: "4"}
		w := labelWidth(l.Label)
		if lx+w > svgWidth {
			l.Anchor, l.DX = "end", "-4"
		}
		lane := 0
		for lane < len(lanes)-1 && lanes[lane] > lx-4 {
			lane++
		}
		lanes[lane] = lx + w
		l.TextY = 10 + lane*11
		l.Y1 = l.TextY + 2
		c.Lines = append(c.Lines, l)
	}
	c.StripTicks = ticks(sMax, sx)

	c.BarsY = stripBottom + panelGap
	bMax := 1
	for _, b := range v.Bars {
		bMax = max(bMax, b.Drawn)
	}
	bx := float64(chartW) / float64(bMax)
	for n := range v.Bars {
		b := &v.Bars[n]
		y := c.BarsY + n*rowStep
		row := barRow{Turn: b.Turn, Tokens: b.Tokens, Messages: b.End - b.Start, Fate: b.Fate, Y: y, TextY: y + 10, SubY: y + 21, Segs: make([]seg, 0, len(b.Msgs))}
		row.Label = "turn " + strconv.Itoa(b.Turn)
		if b.Turn == 0 {
			row.Label = "prefix"
		}
		row.Sub = msgRange(b.Start, b.End) + " · " + b.Fate
		row.Segs, row.Notices, x = lay(v, b.Msgs, bx, false, true)
		row.W = coord(x)
		row.TokensX = coord(float64(chartX) + x + 6)
		c.Bars = append(c.Bars, row)
	}
	end := c.BarsY + len(v.Bars)*rowStep
	if o.budget <= bMax {
		c.BarLines = append(c.BarLines, vline{X: coord(float64(chartX) + float64(o.budget)*bx), Label: "budget", Class: "budget", Y1: c.BarsY - 14, Y2: end, TextY: c.BarsY - 6, Anchor: "start", DX: "4"})
	}
	c.AxisY = end + 4
	c.BarTicks = ticks(bMax, bx)
	c.H = c.AxisY + 24
	return c
}

// tables returns the rows of the turn and message tables.
func tables(v *trimView) ([]turnRow, []messageRow) {
	turns := make([]turnRow, 0, len(v.Bars))
	counts := make([]int, len(fates))
	for n := range v.Bars {
		b := &v.Bars[n]
		clear(counts)
		for _, i := range b.Msgs {
			if f := v.Msgs[i].Fate; f >= 0 {
				counts[f]++
			}
		}
		var bd strings.Builder
		for f, k := range counts {
			if k == 0 {
				continue
			}
			if bd.Len() > 0 {
				bd.WriteString(", ")
			}
			bd.WriteString(strconv.Itoa(k))
			bd.WriteByte(' ')
			bd.WriteString(fates[f].Name)
		}
		name := "turn " + strconv.Itoa(b.Turn)
		if b.Turn == 0 {
			name = "prefix"
		}
		turns = append(turns, turnRow{Name: name, Range: msgRange(b.Start, b.End), Fate: b.Fate, Breakdown: bd.String(), Turn: b.Turn, Tokens: b.Tokens})
	}
	msgs := make([]messageRow, 0, len(v.Msgs))
	for n := range v.Bars {
		for _, i := range v.Bars[n].Msgs {
			m := &v.Msgs[i]
			row := messageRow{Index: "new", Turn: turns[n].Name, Role: m.Role, Tokens: num(m.Tokens), Sent: "–", Fate: fateName(m.Fate), Preview: m.Preview}
			if m.Index >= 0 {
				row.Index = strconv.Itoa(m.Index)
			}
			if m.SentTokens >= 0 {
				row.Sent = num(m.SentTokens)
			}
			msgs = append(msgs, row)
		}
	}
	return turns, msgs
}

// segTitle is the hover text of a message: index, role, tokens, fate, and
// with long, the preview.
func segTitle(m *msgView, long bool) string {
	var b strings.Builder
	if m.Index >= 0 {
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(m.Index))
	} else {
		b.WriteString("inserted")
	}
	b.WriteByte(' ')
	b.WriteString(m.Role)
	b.WriteString(" · ")
	b.WriteString(num(m.Tokens))
	b.WriteString(" tokens · ")
	b.WriteString(fateName(m.Fate))
	if m.SentTokens >= 0 && m.SentTokens != m.Tokens {
		b.WriteString(", sent as ")
		b.WriteString(num(m.SentTokens))
	}
	if long {
		b.WriteByte('\n')
		b.WriteString(m.Preview)
	}
	return b.String()
}

// fateName is the name of fates[f], "unknown" for -1.
func fateName(f int) string {
	if f < 0 {
		return "unknown"
	}
	return fates[f].Name
}

// msgRange is "messages a–b" for the input indices [start, end).
func msgRange(start, end int) string {
	switch {
	case end <= start:
		return "no messages"
	case end-start == 1:
		return "message " + strconv.Itoa(start)
	}
	return "messages " + strconv.Itoa(start) + "–" + strconv.Itoa(end-1)
}

// share is a mark of the trim, fraction of budget, as the core computes
// it: rounded down, at least 1 and at most budget.
func share(budget int, fraction float64) int {
	t := float64(budget) * fraction
	if !(t < float64(math.MaxInt)) {
		return budget - 1
	}
	return min(max(int(t), 1), budget)
}

// ticks returns the marks of an axis from 0 to maxV drawn at scale s per
// unit: round steps (1, 2 or 5 times a power of ten), at most maxTicks.
func ticks(maxV int, s float64) []tick {
	step := niceStep(float64(maxV) / maxTicks)
	out := make([]tick, 0, maxTicks+1)
	for v := 0.0; v <= float64(maxV) && len(out) <= maxTicks; v += step {
		out = append(out, tick{Pos: coord(float64(chartX) + v*s), Label: short(v)})
	}
	return out
}

// niceStep returns the smallest of 1, 2 and 5 times a power of ten that is
// at least x (and at least 1).
func niceStep(x float64) float64 {
	if x <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// short writes an axis label: 950, 12k, 1.5M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return ftoa(v/1e6, -1) + "M"
	case v >= 1e3:
		return ftoa(v/1e3, -1) + "k"
	}
	return ftoa(v, -1)
}

// coord writes an SVG coordinate with one decimal at most.
func coord(f float64) string {
	s := strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}
