//go:build unix

package main

import (
	"bytes"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/histrim/history"
)

// docsScreenshot is the screenshot docs/cli.md shows; go test -update
// rewrites it from the largest corpus session.
const docsScreenshot = "../../docs/histrim-report.png"

// browserArgs are the flags of the report the browser opens, and of the
// screenshot in docs/cli.md.
var browserArgs = []string{"-budget", "40000", "-elide", "-clear", "64", "-steptrim", "-lowwater", "0.7", "-replay"}

// chromium returns the Chromium binary named by HISTRIM_CHROMIUM, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("HISTRIM_CHROMIUM")
	if path == "" {
		t.Skip("HISTRIM_CHROMIUM is not set: the browser test needs a Chromium binary, e.g. HISTRIM_CHROMIUM=/usr/bin/chromium (.ci/run installs Debian's chromium and sets it)")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("HISTRIM_CHROMIUM=%s: %v", path, err)
	}
	return path
}

// TestBrowser opens the report of the largest corpus session (or of
// testdata/agent.jsonl when the corpus is absent) in headless Chromium and
// checks what a reader would see: no console or load errors, one bar per
// turn in the SVG, and a chart that is not blank in the screenshot. Run it
// with -update to rewrite docs/histrim-report.png.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	shotPath, err := filepath.Abs(docsScreenshot)
	if err != nil {
		t.Fatal(err)
	}
	session := "testdata/agent.jsonl"
	args := []string{"-budget", "2000", "-elide", "-clear", "32", "-steptrim", "-lowwater", "0.7", "-replay"}
	if files, _ := filepath.Glob(filepath.Join(corpusDir, "*.jsonl")); len(files) > 0 {
		// From the corpus, so that the report names the session as a
		// user would.
		session, args = filepath.Base(largestSession(t)), browserArgs
		t.Chdir(corpusDir)
	} else {
		t.Log("the shared corpus is absent (" + corpusDir + "): opening the report of " + session)
		if *update {
			t.Fatal("-update rewrites docs/histrim-report.png from the largest corpus session, which is absent")
		}
	}
	dir := t.TempDir()
	report := filepath.Join(dir, "report.html")
	var stderr bytes.Buffer
	if code := run(append(append([]string{"-html", report}, args...), session), strings.NewReader(""), io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	msgs := readSession(t, session)
	turns := history.Turns(msgs, history.WithTurnStart(history.UserWritten)) // the command's default rule (-userturns)
	bars := len(turns)
	if len(turns) == 0 || turns[0].Start > 0 {
		bars++ // the prefix
	}

	b := startBrowser(t, bin)
	b.open("file://"+report, 1400, 1000)
	for _, p := range b.problems() {
		t.Errorf("the report has an error in the browser: %s", p)
	}
	var dom struct {
		Bars, Turns, Segs, Requests int
		Chart                       struct{ X, Y, Width, Height float64 }
		Height                      float64
	}
	b.eval(`(() => {
		const c = document.getElementById('trim-chart');
		const r = c.getBoundingClientRect();
		return {
			bars: c.querySelectorAll('g.bar').length,
			turns: new Set([...c.querySelectorAll('g.bar')].map(g => g.dataset.turn)).size,
			segs: c.querySelectorAll('g.bar rect.seg').length,
			requests: document.querySelectorAll('#replay-cache g.req').length,
			chart: {x: r.x, y: r.y + window.scrollY, width: r.width, height: r.height},
			height: document.documentElement.scrollHeight,
		};
	})()`, &dom)
	if dom.Bars != bars || dom.Turns != bars {
		t.Errorf("the SVG has %d bars for %d distinct turns, want one per turn: %d", dom.Bars, dom.Turns, bars)
	}
	if dom.Segs < len(msgs) {
		t.Errorf("the bars hold %d message blocks, fewer than the %d messages", dom.Segs, len(msgs))
	}
	if dom.Requests == 0 {
		t.Error("the replay draws no request")
	}

	shot := b.screenshot(nil)
	if err := os.WriteFile(filepath.Join(dir, "report.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	frac, err := inkIn(shot, dom.Chart.X, dom.Chart.Y, dom.Chart.Width, dom.Chart.Height)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s: %.1f%% of the chart area is drawn", filepath.Join(dir, "report.png"), 100*frac)
	if frac < 0.05 {
		t.Errorf("the chart area is blank in the screenshot: %.2f%% of its pixels differ from the background", 100*frac)
	}

	if *update {
		// The top of the report: the trim, the legend, the numbers and
		// the replay's charts.
		var bottom float64
		b.eval(`(() => { const r = document.getElementById('replay-cumulative').closest('figure').getBoundingClientRect(); return r.bottom + window.scrollY + 12; })()`, &bottom)
		full := b.screenshot(map[string]float64{"x": 0, "y": 0, "width": 1400, "height": min(bottom, dom.Height)})
		if err := os.WriteFile(shotPath, full, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", shotPath, len(full))
	}
}

// TestBrowserChecksFail shows that the browser test's checks can fail: a
// page with a script error and a missing image has errors, and an empty
// chart area is blank.
func TestBrowserChecksFail(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "bad.html")
	if err := os.WriteFile(page, []byte(`<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>bad</title></head><body>
<svg id="trim-chart" width="800" height="300"></svg>
<img src="missing.png" alt="">
<script>console.error("boom"); undefinedFunction();</script>
</body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t, bin)
	b.open("file://"+page, 1400, 1000)
	probs := strings.Join(b.problems(), "\n")
	for _, want := range []string{"console.error: boom", "undefinedFunction", "missing.png"} {
		if !strings.Contains(probs, want) {
			t.Errorf("the errors found do not mention %q:\n%s", want, probs)
		}
	}
	var r struct{ X, Y, Width, Height float64 }
	b.eval(`(() => { const r = document.getElementById('trim-chart').getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; })()`, &r)
	frac, err := inkIn(b.screenshot(nil), r.X, r.Y, r.Width, r.Height)
	if err != nil {
		t.Fatal(err)
	}
	if frac != 0 {
		t.Errorf("an empty chart area has %.2f%% of its pixels drawn, want none", 100*frac)
	}
}

// inkIn decodes a PNG and returns the share of the pixels in the rectangle
// (CSS pixels at scale 1) that differ from the page's background, read at
// the image's top-left corner.
func inkIn(data []byte, x, y, w, h float64) (float64, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	bounds := img.Bounds()
	bg := img.At(bounds.Min.X, bounds.Min.Y)
	br, bgG, bb, _ := bg.RGBA()
	area := image.Rect(int(x), int(y), int(x+w), int(y+h)).Intersect(bounds)
	if area.Empty() {
		return 0, nil
	}
	ink := 0
	for py := area.Min.Y; py < area.Max.Y; py++ {
		for px := area.Min.X; px < area.Max.X; px++ {
			r, g, b, _ := img.At(px, py).RGBA()
			if diff(r, br)+diff(g, bgG)+diff(b, bb) > 3*0x0800 {
				ink++
			}
		}
	}
	return float64(ink) / float64(area.Dx()*area.Dy()), nil
}

func diff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
