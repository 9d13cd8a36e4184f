package main

import (
	"strconv"
	"strings"
)

// replayChart is the replay's part of the report.
type replayChart struct {
	Prices   string
	Requests int
	// Trigger reports a trigger line on the prompt chart.
	Trigger bool
	Totals  []pair
	// Prompt is the prompt against the budget, Cache the cache reads and
	// writes with the billed input, Cumulative the bill so far against no
	// cache.
	Prompt, Cache, Cumulative plot
	// Front is recall against the bill, one point per policy (nil when the
	// replay has no front).
	Front *frontChart
	Rows  []requestRow
}

// frontChart is the replay's front: each policy a dot at (billed input,
// reference recall).
type frontChart struct {
	ID, Title           string
	H, Top, Bottom      int
	YTicks              []ytick
	XTicks              []tick
	Dots                []frontDot
	XLabelY, TickLabelY int
}

// frontDot is one policy on the front; This marks the trim's options.
type frontDot struct {
	X, Y, Label, Title, Anchor, LabelX string
	This                               bool
}

// plot is one chart of the replay: requests along x.
type plot struct {
	ID, Title           string
	H, Top, Bottom      int
	YTicks              []ytick
	Levels              []hline
	Paths               []path
	Stacks              []stack
	Marks               []mark
	Hits                []hit
	XTicks              []tick
	XLabelY, TickLabelY int
}

// ytick is a labelled mark on the y axis.
type ytick struct{ Y, Label string }

// hline is a labelled horizontal line: the budget, the trigger.
type hline struct{ Y, Label, Class string }

// path is a polyline with its legend label.
type path struct{ Points, Class, Label string }

// stack is one request's cache bar: reads under writes.
type stack struct {
	N, Read, Write int
	Billed         string
	X, W           string
	ReadY, ReadH   string
	WriteY, WriteH string
}

// mark is a maintenance point: a line and a triangle above the plot.
type mark struct{ X, Path, Label string }

// hit is one request's hover column.
type hit struct {
	N       int
	X, W    string
	Rewrite bool
	Title   string
}

// requestRow is one row of the requests table.
type requestRow struct {
	N, Before, Transcript, Prompt, Share, Read, Write, Billed, Note string
	Rewrite                                                         bool
}

// newReplayChart lays out the replay.
func newReplayChart(o htmlOptions, rv *replayView) *replayChart {
	c := &replayChart{
		Prices:   rv.Prices + " (a cache read costs " + ftoa(rv.Read, -1) + "×, a cache write " + ftoa(rv.Write, -1) + "× an uncached input token)",
		Requests: len(rv.Requests),
	}
	t := &rv.Totals
	saving := "–"
	if t.NoCache > 0 {
		saving = ftoa(100*(t.Billed/t.NoCache-1), 1) + "%"
	}
	c.Totals = []pair{
		{"requests", "requests", num(t.Requests)},
		{"at_limit", "transcript over the budget", num(t.AtLimit)},
		{"trims", "prompts trimmed", num(t.Trims)},
		{"rewrites", "maintenance points (prefix rewritten)", num(t.Rewrites)},
		{"over_budget", "prompts over the budget", num(t.OverBudget)},
		{"cache_read", "cache read", num(t.Read)},
		{"cache_write", "cache write", num(t.Write)},
		{"billed", "billed input", fnum(t.Billed)},
		{"no_cache", "without a cache", fnum(t.NoCache)},
		{"vs_no_cache", "billed vs no cache", saving},
		{"mean_prompt_at_limit", "mean prompt at the limit", ftoa(t.MeanAtLimit, 2) + "× budget"},
		{"min_prompt_at_limit", "smallest prompt at the limit", num(t.MinAtLimit)},
		{"references", "references (tokens of a tool result the reply uses)", num(t.References)},
		{"recall", "reference recall", ftoa(ratio(t.Kept, t.References), 3)},
	}
	if len(rv.Requests) == 0 {
		return c
	}
	n := len(rv.Requests)
	step := float64(chartW) / float64(n)
	xOf := func(r int) float64 { return float64(chartX) + (float64(r)+0.5)*step }
	barW := coord(max(step*0.7, 0.6))

	// Hover columns and their text, shared by the charts.
	hits := make([]hit, n)
	for r := range rv.Requests {
		q := &rv.Requests[r]
		hits[r] = hit{N: q.N, X: coord(float64(chartX) + float64(r)*step), W: coord(step), Rewrite: q.Rewrite, Title: requestTitle(q, o.budget)}
	}

	// The prompt against the budget.
	pMax := o.budget
	for _, q := range rv.Requests {
		pMax = max(pMax, q.Prompt)
	}
	pr := newPlot("replay-prompt", "Prompt tokens per request against the budget", pMax, n)
	var pts strings.Builder
	for r, q := range rv.Requests {
		point(&pts, xOf(r), pr.y(float64(q.Prompt), pMax))
	}
	pr.Paths = []path{{Points: pts.String(), Class: "prompt", Label: "prompt"}}
	pr.Levels = append(pr.Levels, hline{Y: coord(pr.y(float64(o.budget), pMax)), Label: "budget " + num(o.budget), Class: "budget"})
	if o.trigger > 0 {
		tr := share(o.budget, o.trigger)
		pr.Levels = append(pr.Levels, hline{Y: coord(pr.y(float64(tr), pMax)), Label: "trigger " + num(tr), Class: "trigger"})
		c.Trigger = true
	}
	pr.Hits = hits
	for r, q := range rv.Requests {
		if q.Rewrite {
			x := xOf(r)
			pr.Marks = append(pr.Marks, mark{X: coord(x), Path: "M" + coord(x-5) + "," + strconv.Itoa(pr.Top-10) + " h10 l-5,8 z",
				Label: "request " + strconv.Itoa(q.N) + ": prefix rewritten"})
		}
	}
	pr.XTicks = requestTicks(n, xOf)
	c.Prompt = pr

	// Cache reads and writes, and the bill.
	cMax := 1
	for _, q := range rv.Requests {
		cMax = max(cMax, q.Prompt, int(q.Billed+0.5))
	}
	cp := newPlot("replay-cache", "Cache reads and writes per request, and the billed input", cMax, n)
	pts.Reset()
	cp.Stacks = make([]stack, n)
	for r, q := range rv.Requests {
		x := xOf(r) - max(step*0.7, 0.6)/2
		ry := cp.y(float64(q.Read), cMax)
		wy := cp.y(float64(q.Read+q.Write), cMax)
		cp.Stacks[r] = stack{N: q.N, Read: q.Read, Write: q.Write, Billed: ftoa(q.Billed, 2), X: coord(x), W: barW,
			ReadY: coord(ry), ReadH: coord(float64(cp.Bottom) - ry), WriteY: coord(wy), WriteH: coord(ry - wy)}
		point(&pts, xOf(r), cp.y(q.Billed, cMax))
	}
	cp.Paths = []path{{Points: pts.String(), Class: "billed", Label: "billed input (" + rv.Prices + ")"}}
	cp.Marks = pr.Marks
	cp.Hits = hits
	cp.XTicks = pr.XTicks
	c.Cache = cp

	// The bill so far against the same prompts without a cache.
	var billed, plain float64
	pts.Reset()
	var nocache strings.Builder
	cuMax := max(int(t.NoCache+0.5), int(t.Billed+0.5), 1)
	cu := newPlot("replay-cumulative", "Billed input so far, against the same prompts without a cache", cuMax, n)
	for r, q := range rv.Requests {
		billed += q.Billed
		plain += float64(q.Prompt)
		point(&pts, xOf(r), cu.y(billed, cuMax))
		point(&nocache, xOf(r), cu.y(plain, cuMax))
	}
	cu.Paths = []path{
		{Points: nocache.String(), Class: "nocache", Label: "without a cache"},
		{Points: pts.String(), Class: "billed", Label: "billed (" + rv.Prices + ")"},
	}
	cu.Marks = pr.Marks
	cu.XTicks = pr.XTicks
	c.Cumulative = cu

	c.Front = newFrontChart(rv.Front)

	c.Rows = make([]requestRow, n)
	for r, q := range rv.Requests {
		c.Rows[r] = requestRow{
			N: strconv.Itoa(q.N), Before: strconv.Itoa(q.Before), Transcript: num(q.Transcript), Prompt: num(q.Prompt),
			Share: ftoa(100*float64(q.Prompt)/float64(max(o.budget, 1)), 0) + "%",
			Read:  num(q.Read), Write: num(q.Write), Billed: fnum(q.Billed), Note: requestNote(&q), Rewrite: q.Rewrite,
		}
	}
	return c
}

// newFrontChart lays out the front: recall from 0 to 1 up, the bill from 0
// to the largest along x.
func newFrontChart(pts []frontPoint) *frontChart {
	if len(pts) == 0 {
		return nil
	}
	f := &frontChart{ID: "replay-front", Title: "What each policy keeps of what the agent goes on to use, against what it bills", Top: 14, Bottom: 14 + plotH, H: replayH}
	f.TickLabelY, f.XLabelY = f.Bottom+16, f.Bottom+34
	y := func(r float64) float64 { return float64(f.Bottom) - r*plotH }
	for r := 0.0; r <= 1.0001; r += 0.25 {
		f.YTicks = append(f.YTicks, ytick{Y: coord(y(r)), Label: ftoa(r, 2)})
	}
	bMax := 1.0
	for _, p := range pts {
		bMax = max(bMax, p.Billed)
	}
	step := niceStep(bMax / 4)
	bMax = step * float64(int(bMax/step)+1)
	x := func(b float64) float64 { return float64(chartX) + b/bMax*float64(chartW) }
	for v := 0.0; v <= bMax+step/2; v += step {
		f.XTicks = append(f.XTicks, tick{Pos: coord(x(v)), Label: short(v)})
	}
	for i, p := range pts {
		px := x(p.Billed)
		d := frontDot{X: coord(px), Y: coord(y(p.Recall)), Label: p.Policy, This: i == 0, Anchor: "start", LabelX: coord(px + 7),
			Title: p.Policy + ": recall " + ftoa(p.Recall, 3) + " of " + num(p.References) + " references, billed " + fnum(p.Billed) + ", " + num(p.Rewrites) + " prefix rewrites"}
		if px > float64(chartX)+0.7*float64(chartW) {
			d.Anchor, d.LabelX = "end", coord(px-7)
		}
		f.Dots = append(f.Dots, d)
	}
	return f
}

// newPlot returns an empty plot with its y axis from 0 to maxV.
func newPlot(id, title string, maxV, n int) plot {
	p := plot{ID: id, Title: title, Top: 14, Bottom: 14 + plotH, H: replayH}
	p.TickLabelY = p.Bottom + 16
	p.XLabelY = p.Bottom + 34
	step := niceStep(float64(maxV) / 4)
	for v := 0.0; v <= float64(maxV); v += step {
		p.YTicks = append(p.YTicks, ytick{Y: coord(p.y(v, maxV)), Label: short(v)})
	}
	return p
}

// y is the y coordinate of v on a plot whose axis ends at maxV.
func (p *plot) y(v float64, maxV int) float64 {
	return float64(p.Bottom) - v/float64(max(maxV, 1))*plotH
}

// ratio returns a/b, 0 when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// point appends "x,y " to a polyline's points.
func point(b *strings.Builder, x, y float64) {
	b.WriteString(coord(x))
	b.WriteByte(',')
	b.WriteString(coord(y))
	b.WriteByte(' ')
}

// requestTicks marks request numbers along x at round steps.
func requestTicks(n int, xOf func(int) float64) []tick {
	step := int(niceStep(float64(n) / 8))
	out := []tick{{Pos: coord(xOf(0)), Label: "1"}}
	for k := step; k <= n; k += step {
		out = append(out, tick{Pos: coord(xOf(k - 1)), Label: strconv.Itoa(k)})
	}
	return out
}

// requestTitle is the hover text of a request.
func requestTitle(q *requestView, budget int) string {
	var b strings.Builder
	b.WriteString("request ")
	b.WriteString(strconv.Itoa(q.N))
	b.WriteString(" (before message ")
	b.WriteString(strconv.Itoa(q.Before))
	b.WriteString("): prompt ")
	b.WriteString(num(q.Prompt))
	b.WriteString(" of ")
	b.WriteString(num(budget))
	b.WriteString(" tokens, transcript ")
	b.WriteString(num(q.Transcript))
	b.WriteString("\ncache read ")
	b.WriteString(num(q.Read))
	b.WriteString(", write ")
	b.WriteString(num(q.Write))
	b.WriteString(", billed ")
	b.WriteString(fnum(q.Billed))
	if note := requestNote(q); note != "" {
		b.WriteByte('\n')
		b.WriteString(note)
	}
	return b.String()
}
