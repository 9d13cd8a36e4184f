// This file owns Calibration: what the provider's count of a request has
// been, learnt from usage reports, turned into the budget a trim aims for.

package history

import (
	"encoding/json"
	"errors"
	"math"
	"sync"
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
// and fits Scale and Overhead to the most recent observations by least
// squares (Overhead never negative; with observations of one size only, the
// whole difference is taken as Scale). [Calibration.Budget] then inverts the
// model, with a margin: the largest under-estimate among the recent
// observations is added to Overhead, so every recent request would have
// landed at or under the budget. See docs/calibration.md.
//
// The zero value is ready and changes nothing until it has observed
// something: Budget returns its argument. It is safe for concurrent use. Use
// one per model (or provider endpoint): the relation differs between
// tokenizers and tool sets. Its state can be saved and restored with
// encoding/json ([Calibration.MarshalJSON], [Calibration.UnmarshalJSON]) so
// that a runtime keeps it per model across restarts.
type Calibration struct {
	mu  sync.Mutex
	obs [calibrationWindow]observation
	n   int // observations stored, at most calibrationWindow
	at  int // next slot to write
	fit calibrationFit
	// rejected counts the outliers in a row; after relearnAfter of them the
	// provider has changed, and the model starts again from them.
	rejected int
	recent   [relearnAfter]observation
}

// relearnAfter is the number of outliers in a row after which Calibration
// believes them: the provider's count has changed (a new tokenizer, a new
// tool set), not misreported.
const relearnAfter = 4

// calibrationWindow is the number of most recent observations the fit uses.
const calibrationWindow = 16

// Bounds on what a sane observation can say: a provider that counts the same
// request as more than 8 times, or less than an eighth of, the Counter's
// count is reporting something else (a cached-only count, a different
// request), and such an observation is ignored.
const (
	minRatio = 1.0 / 8
	maxRatio = 8.0
	// outlierFactor: once a fit exists, an observation whose ratio to the
	// fit's prediction is beyond this factor either way is ignored.
	outlierFactor = 3.0
)

type observation struct{ sent, reported int }

// calibrationFit is the fitted model: P = scale×S + overhead, and margin,
// the largest under-estimate of the window (tokens).
type calibrationFit struct {
	ok       bool
	scale    float64
	overhead float64
	margin   float64
}

// ErrInvalidCalibration is returned by [Calibration.UnmarshalJSON] for a state
// it cannot read.
var ErrInvalidCalibration = errors.New("history: invalid calibration state")

// Observe records one request that the provider accepted: sent is the
// Counter's count of what was sent ([Result.TokensAfter] of the Result whose
// Messages were sent), reported is the provider's count of the same
// request's input (OpenAI usage.prompt_tokens; Anthropic input_tokens +
// cache_creation_input_tokens + cache_read_input_tokens; Gemini
// usageMetadata.promptTokenCount).
//
// An observation is ignored when either count is zero or negative, when
// reported is more than 8 times or less than an eighth of sent, or, once the
// model has a fit, when reported differs from the fit's prediction by more
// than a factor of 3: a wrong report must not derail the budget. Four such
// outliers in a row are believed (the provider changed), and the model is
// fitted again from them. Observe is safe for concurrent use.
func (c *Calibration) Observe(sent, reported int) {
	if sent <= 0 || reported <= 0 {
		return
	}
	r := float64(reported) / float64(sent)
	if r < minRatio || r > maxRatio {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	o := observation{sent, reported}
	if c.fit.ok {
		pred := c.fit.scale*float64(sent) + c.fit.overhead
		if q := float64(reported) / pred; q > outlierFactor || q < 1/outlierFactor {
			c.recent[c.rejected] = o
			c.rejected++
			if c.rejected < relearnAfter {
				return
			}
			// The outliers agree with each other more than with the
			// model: start again from them.
			c.n, c.at, c.rejected = 0, 0, 0
			for _, r := range c.recent[:relearnAfter-1] {
				c.obs[c.at] = r
				c.at++
				c.n++
			}
		}
	}
	c.rejected = 0
	c.obs[c.at] = o
	c.at = (c.at + 1) % calibrationWindow
	c.n = min(c.n+1, calibrationWindow)
	c.fit = fitCalibration(c.window())
}

// window returns the stored observations, oldest first.
func (c *Calibration) window() []observation {
	out := make([]observation, 0, c.n)
	start := (c.at - c.n + calibrationWindow) % calibrationWindow
	for i := range c.n {
		out = append(out, c.obs[(start+i)%calibrationWindow])
	}
	return out
}

// fitCalibration fits P = scale×S + overhead to obs by least squares, with
// overhead >= -scale×(smallest S)/2, and measures the margin: the largest
// amount by which the fit under-estimates an observation.
func fitCalibration(obs []observation) calibrationFit {
	if len(obs) == 0 {
		return calibrationFit{}
	}
	var sx, sy, sxx, sxy float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, o := range obs {
		x, y := float64(o.sent), float64(o.reported)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
		lo, hi = min(lo, x), max(hi, x)
	}
	n := float64(len(obs))
	f := calibrationFit{ok: true}
	// The sizes must differ by at least 5% to tell a scale from an
	// overhead; otherwise all of the difference is scale.
	if hi-lo >= 0.05*hi {
		den := n*sxx - sx*sx
		f.scale = (n*sxy - sx*sy) / den
		f.overhead = (sy - f.scale*sx) / n
	}
	// A negative overhead is real when the provider scales the messages
	// but not what WithOverhead counts (tool schemas it counts as we do):
	// P = s×S - (s-1)×tools. It is accepted only as far as the data
	// supports it: predictions over the observed sizes stay above half of
	// the scaled size, so a wrong fit cannot promise a provider count near
	// zero.
	if !(f.scale > 0) || math.IsNaN(f.overhead) || f.overhead < -0.5*f.scale*lo {
		// Through the origin: P = scale×S.
		f.scale, f.overhead = sxy/sxx, 0
	}
	for _, o := range obs {
		under := float64(o.reported) - (f.scale*float64(o.sent) + f.overhead)
		f.margin = max(f.margin, under)
	}
	return f
}

// Budget returns the budget, in the Counter's units, that makes the
// provider's count land at or under budget: (budget - Overhead - margin) /
// Scale, rounded down. Before any observation it returns budget unchanged;
// it never returns less than 1 for a positive budget, and returns budget
// unchanged when budget <= 0 (the trim rejects it). The result may exceed
// budget when the provider counts less than the Counter. Scale is rounded up
// to a multiple of 1/256 and the overhead and margin up to a multiple of 16
// tokens, so that small jitter in the observations does not move the
// budget (and with it a Trimmer's cut).
func (c *Calibration) Budget(budget int) int {
	if budget <= 0 {
		return budget
	}
	c.mu.Lock()
	f := c.fit
	c.mu.Unlock()
	if !f.ok {
		return budget
	}
	scale := math.Ceil(f.scale*256) / 256
	extra := math.Ceil((f.overhead+f.margin)/16) * 16
	b := (float64(budget) - extra) / scale
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

// calibrationState is the saved form: the observations, oldest first.
type calibrationState struct {
	Version      int      `json:"version"`
	Observations [][2]int `json:"observations"`
}

// MarshalJSON saves the observations the model is fitted to, oldest first,
// as {"version":1,"observations":[[sent,reported],...]}.
func (c *Calibration) MarshalJSON() ([]byte, error) {
	c.mu.Lock()
	w := c.window()
	c.mu.Unlock()
	st := calibrationState{Version: 1, Observations: make([][2]int, len(w))}
	for i, o := range w {
		st.Observations[i] = [2]int{o.sent, o.reported}
	}
	return json.Marshal(st)
}

// UnmarshalJSON restores a state saved by MarshalJSON, replacing c's. The
// observations are replayed through the rules of Observe, so a tampered
// state cannot install an absurd model. An unknown version or malformed
// JSON leaves c unchanged and returns an error wrapping
// [ErrInvalidCalibration].
func (c *Calibration) UnmarshalJSON(data []byte) error {
	var st calibrationState
	if err := json.Unmarshal(data, &st); err != nil {
		return errors.Join(ErrInvalidCalibration, err)
	}
	if st.Version != 1 {
		return ErrInvalidCalibration
	}
	var fresh Calibration
	for _, o := range st.Observations {
		fresh.Observe(o[0], o[1])
	}
	c.mu.Lock()
	c.obs, c.n, c.at, c.fit = fresh.obs, fresh.n, fresh.at, fresh.fit
	c.mu.Unlock()
	return nil
}
