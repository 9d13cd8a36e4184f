// This file owns Calibration: what the provider's count of a request has
// been, learnt from usage reports and rejections, turned into the budget a
// trim aims for.

package history

import (
	"errors"
	"math"
	"strconv"
	"sync"

	"github.com/histrim/history/internal/refusal"
)

// Calibration learns how the provider's input-token count relates to the
// Counter's, so that a trim aims at the budget the provider will enforce.
//
// Providers count more (or less) than any local Counter: tool schemas and a
// response format the messages do not show, per-message framing, images,
// and for some providers a different tokenizer. Calibration models the
// provider's count P of a request whose messages the Counter counts as S as
//
//	P = Scale × S + Overhead
//
// fitted by least squares to the 16 most recent observations it accepted
// (Overhead may be negative, as far as the data supports it; when the sizes
// observed are too close to tell a scale from an overhead, the relation is
// fitted through the origin). [Calibration.Budget] inverts the model with a
// margin (the largest under-estimate among those observations), and never
// extrapolates below the data: priced at the smallest ratio P/S among them,
// a request of Budget(B) tokens costs at most B. A rejection for length
// ([Calibration.ObserveOverflow]) caps the budget below the size that was
// refused. See docs/calibration.md.
//
// Observations that would mislead the model are held back, and
// [Calibration.Observe] says so ([Verdict]): counts outside [1/8, 8] times
// what was sent, counts far above the model's prediction (believed after
// four in a row: the provider changed), and counts far below what was sent
// or predicted that do not grow with it (a server that silently truncated
// the prompt; these never raise the budget).
//
// The zero value is ready and changes nothing until it has observed
// something: Budget returns its argument. It is safe for concurrent use. Use
// one per model (or provider endpoint): the relation differs between
// tokenizers and tool sets. Its state can be saved and restored with
// encoding/json through a pointer (json.Marshal(&cal): [Calibration.MarshalJSON]
// and [Calibration.UnmarshalJSON] have pointer receivers, so marshalling a
// Calibration value yields {}); a restored Calibration gives the same Budget
// as the one saved.
type Calibration struct {
	mu  sync.Mutex
	obs [calibrationWindow]observation
	n   int // observations stored, at most calibrationWindow
	at  int // next slot to write
	fit calibrationFit
	// held are the latest observations held back, all of one kind, oldest
	// first; relearnAfter of them in a row may be believed (see hold).
	held     [relearnAfter]observation
	nheld    int
	heldKind Verdict
	// rej are the rejections for length still in force, oldest first.
	rej  [maxRejections]rejection
	nrej int
	// asked is the budget last passed to Budget: the size a rejection
	// that states no limit was aimed at.
	asked int
}

// Verdict says what [Calibration.Observe] made of an observation.
type Verdict int

const (
	// VerdictUsed: the observation is part of the model.
	VerdictUsed Verdict = iota
	// VerdictRestarted: the observation is part of the model, which starts
	// again from it (and the observations held with it): the provider counts
	// far more than predicted in a way no single relation explains together
	// with the older observations (it changed model, tokenizer or tool set),
	// or four held observations in a row agreed with each other.
	VerdictRestarted
	// VerdictInvalid: ignored. A count is zero or negative, or reported is
	// more than 8 times, or less than an eighth of, sent.
	VerdictInvalid
	// VerdictOutlier: held back. The provider counted more than 3 times what
	// the model predicts. Four in a row are believed (VerdictRestarted).
	VerdictOutlier
	// VerdictTruncated: held back, and never allowed to raise the budget.
	// The provider reported less than half of what was sent, or less than
	// 70% of the model's prediction without reporting more than any
	// observation before it: what a server that silently drops part of the
	// prompt and answers 200 reports (Ollama, servers that ignore a
	// truncation setting). A real lower count grows with what is sent;
	// four held observations in a row are believed only when their sizes
	// differ by at least 10% and their ratios P/S agree within 5%.
	VerdictTruncated
)

// String returns the verdict's name: "used", "restarted", "invalid",
// "outlier" or "truncated".
func (v Verdict) String() string {
	switch v {
	case VerdictUsed:
		return "used"
	case VerdictRestarted:
		return "restarted"
	case VerdictInvalid:
		return "invalid"
	case VerdictOutlier:
		return "outlier"
	case VerdictTruncated:
		return "truncated"
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Tunables of the model; docs/calibration.md explains each.
const (
	// calibrationWindow is the number of most recent observations the fit
	// uses; a rejection stays in force for as many accepted observations.
	calibrationWindow = 16
	// relearnAfter is the number of held observations in a row after which
	// they may be believed.
	relearnAfter = 4
	// maxRejections is the number of rejections remembered.
	maxRejections = 4
	// Bounds on what a sane observation can say: a provider that counts the
	// same request as more than 8 times, or less than an eighth of, the
	// Counter's count is reporting something else.
	minRatio = refusal.MinRatio
	maxRatio = refusal.MaxRatio
	// outlierFactor: an observation above this factor times the fit's
	// prediction is held as an outlier.
	outlierFactor = 3.0
	// truncRatio and truncFactor: an observation below truncRatio times
	// what was sent, or below truncFactor times the prediction without a
	// report larger than any in the window, is held as truncated.
	truncRatio  = 0.5
	truncFactor = 0.7
	// shiftFactor and shiftResidual: an observation above shiftFactor times
	// the prediction that no single relation fits together with the window
	// (some observation off by more than shiftResidual) restarts the model.
	shiftFactor   = 1.25
	shiftResidual = 0.15
	// affineSpread: sizes must span this factor (largest over smallest) to
	// fit an overhead besides the scale; closer sizes cannot tell them apart.
	affineSpread = 1.25
	// maxHeadroom caps the headroom Budget keeps for a provider whose
	// count varies with the content: half the spread of the fit's relative
	// errors, at most this share of the budget.
	maxHeadroom = 0.1
	// rejectMargin: after a rejection of sent tokens aimed at budget B,
	// Budget(B) is at most rejectMargin × sent.
	rejectMargin = 0.98
)

type observation struct{ sent, reported int }

// rejection is a request the provider refused for length: sent tokens by
// the Counter, over limit tokens by the provider's count; age counts the
// observations accepted since.
type rejection struct{ sent, limit, age int }

// ErrInvalidCalibration is returned by [Calibration.UnmarshalJSON] for a state
// it cannot read.
var ErrInvalidCalibration = errors.New("history: invalid calibration state")

// Observe records one request that the provider accepted and returns what
// it made of it: sent is the Counter's count of what was sent
// ([Result.TokensAfter] of the Result whose Messages were sent), reported is
// the provider's count of the same request's input (OpenAI
// usage.prompt_tokens; Anthropic input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens; Gemini usageMetadata.promptTokenCount).
//
// Only [VerdictUsed] and [VerdictRestarted] change the model; see [Verdict]
// for what is ignored or held back, and why. Observe is safe for concurrent
// use.
func (c *Calibration) Observe(sent, reported int) Verdict {
	if sent <= 0 || reported <= 0 {
		return VerdictInvalid
	}
	r := float64(reported) / float64(sent)
	if !(r >= minRatio && r <= maxRatio) {
		return VerdictInvalid
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := observation{sent, reported}
	if r < truncRatio {
		return c.hold(o, VerdictTruncated)
	}
	if !c.fit.ok {
		c.nheld = 0
		c.add(o)
		return VerdictUsed
	}
	q := math.Inf(1)
	if pred := c.fit.scale*float64(sent) + c.fit.overhead; pred > 0 {
		q = float64(reported) / pred
	}
	switch {
	case q > outlierFactor:
		return c.hold(o, VerdictOutlier)
	case q < truncFactor && reported <= c.fit.maxReported:
		return c.hold(o, VerdictTruncated)
	}
	c.nheld = 0
	if q > shiftFactor && !c.explains(o) {
		c.restart(o)
		return VerdictRestarted
	}
	c.add(o)
	return VerdictUsed
}

// ObserveOverflow records a request the provider rejected for length: sent
// is the Counter's count of what was sent, limit the provider's limit in
// its own units when its error states one (0 when it does not: the budget
// last passed to [Calibration.Budget] is taken as the limit the request was
// aimed at). Until the calibration has accepted 16 more observations, Budget
// then keeps a request below what was refused: after a rejection of sent
// tokens aimed at budget B, Budget(B) is at most 98% of sent.
//
// [RecoverOverflow] with [WithCalibration] calls it when the error states no
// provider count; when it does, the count is an observation ([Calibration.Observe]).
// A call with sent <= 0, with no limit known, or with limit/sent outside
// [1/8, 8] records nothing. It is safe for concurrent use.
func (c *Calibration) ObserveOverflow(sent, limit int) {
	if sent <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if limit <= 0 {
		limit = c.asked
	}
	if r := float64(limit) / float64(sent); !(r >= minRatio && r <= maxRatio) {
		return
	}
	if c.nrej == maxRejections {
		copy(c.rej[:], c.rej[1:])
		c.nrej--
	}
	c.rej[c.nrej] = rejection{sent: sent, limit: limit}
	c.nrej++
}

// hold holds o back as kind. relearnAfter held observations of one kind in a
// row are believed, and the model restarts from them, when they agree: any
// outliers; truncated ones only when they scale with what was sent.
// Otherwise the oldest is let go.
func (c *Calibration) hold(o observation, kind Verdict) Verdict {
	if c.heldKind != kind {
		c.nheld, c.heldKind = 0, kind
	}
	c.held[c.nheld] = o
	c.nheld++
	if c.nheld < relearnAfter {
		return kind
	}
	if kind == VerdictTruncated && !scales(c.held[:]) {
		copy(c.held[:], c.held[1:])
		c.nheld--
		return kind
	}
	c.n, c.at = 0, 0
	for _, h := range c.held {
		c.push(h)
	}
	c.nheld = 0
	var buf windowBuf
	c.fit = fitCalibration(c.window(&buf))
	return VerdictRestarted
}

// explains reports whether one relation fits the window and o together:
// every observation within shiftResidual of the joint fit.
func (c *Calibration) explains(o observation) bool {
	var buf windowBuf
	w := c.window(&buf)
	if !spans(w) {
		// Trimmed requests cluster at the budget: one line fits that
		// cluster and any new point exactly, and says nothing.
		return false
	}
	w = append(w, o)
	f := fitCalibration(w)
	for _, x := range w {
		pred := f.scale*float64(x.sent) + f.overhead
		if math.Abs(float64(x.reported)-pred) > shiftResidual*float64(x.reported) {
			return false
		}
	}
	return true
}

// restart forgets the window and starts the model again from o.
func (c *Calibration) restart(o observation) {
	c.n, c.at = 0, 0
	c.add(o)
}

// add accepts o into the window, ages the rejections, and refits.
func (c *Calibration) add(o observation) {
	c.push(o)
	k := 0
	for _, r := range c.rej[:c.nrej] {
		if r.age++; r.age < calibrationWindow {
			c.rej[k] = r
			k++
		}
	}
	c.nrej = k
	var buf windowBuf
	c.fit = fitCalibration(c.window(&buf))
}

// push writes o into the window's ring.
func (c *Calibration) push(o observation) {
	c.obs[c.at] = o
	c.at = (c.at + 1) % calibrationWindow
	c.n = min(c.n+1, calibrationWindow)
}

// windowBuf holds a window and one more observation (explains), on the
// caller's stack: an observation is fitted without allocating.
type windowBuf [calibrationWindow + 1]observation

// window returns the stored observations, oldest first, in buf.
func (c *Calibration) window(buf *windowBuf) []observation {
	out := buf[:0]
	start := (c.at - c.n + calibrationWindow) % calibrationWindow
	for i := range c.n {
		out = append(out, c.obs[(start+i)%calibrationWindow])
	}
	return out
}

// Budget returns the budget, in the Counter's units, that makes the
// provider's count land at or under budget.
//
// It inverts the model with its margin, (budget × (1 - headroom) -
// Overhead - margin) / Scale, where the margin is the largest
// under-estimate among the recent observations and the headroom half the
// range of the fit's relative errors (at most 10%: a provider whose count
// varies with the content, tool results counted more than text, will
// count some request more than any it has shown). Scale and the headroom
// are rounded up to a multiple of 1/256 and the overhead and margin up to
// a multiple of 16 tokens (so that jitter in the reports does not move the
// budget, and with it a [Trimmer]'s cut, on every request), and
// bounds the result by the data: at most budget divided by the smallest
// ratio P/S among the 16 most recent accepted observations (so it is at
// most budget when every one reported more than was sent), and at least
// budget divided by twice the largest (a fit that extrapolates wildly is
// not believed). After a rejection ([Calibration.ObserveOverflow]) of S
// tokens aimed at limit L, it is also at most 98% of budget × S / L.
//
// Before any observation or rejection it returns budget unchanged; it
// returns budget unchanged when budget <= 0 (the trim rejects it); otherwise
// the result lies in [1, math.MaxInt]. It remembers budget as the limit a
// later rejection that states none was aimed at.
func (c *Calibration) Budget(budget int) int {
	if budget <= 0 {
		return budget
	}
	c.mu.Lock()
	f, rej := c.fit, c.rej
	nrej := c.nrej
	c.asked = budget
	c.mu.Unlock()
	if !f.ok && nrej == 0 {
		return budget
	}
	B := float64(budget)
	b := B
	if f.ok {
		scale := math.Ceil(f.scale*256) / 256
		extra := math.Ceil((f.overhead+f.margin)/16) * 16
		headroom := math.Ceil(min(f.spread/2, maxHeadroom)*256) / 256
		b = (B*(1-headroom) - extra) / scale
		b = max(b, B/(2*f.rmax))
		b = min(b, B/(math.Ceil(f.rmin*256)/256))
	}
	for _, r := range rej[:nrej] {
		b = min(b, B*float64(r.sent)/float64(r.limit)*rejectMargin)
	}
	switch {
	case !(b >= 1): // also NaN
		return 1
	case b >= float64(math.MaxInt):
		return math.MaxInt
	}
	return int(b)
}

// Model returns the fitted relation, P = scale×S + overhead (tokens), and
// the margin Budget adds to the overhead; ok is false before the first
// observation. It is meant for logs and dashboards.
func (c *Calibration) Model() (scale, overhead, margin float64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fit.scale, c.fit.overhead, c.fit.margin, c.fit.ok
}
