package history

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// provider counts a request the Counter counts as s as scale×s + overhead,
// with a relative noise of up to jitter either way.
type provider struct {
	scale, overhead, jitter float64
	r                       *rand.Rand
}

func (p provider) count(s int) int {
	noise := 1.0
	if p.jitter > 0 {
		noise += (p.r.Float64()*2 - 1) * p.jitter
	}
	return int((p.scale*float64(s) + p.overhead) * noise)
}

// relErr is how far the model's prediction for s is from the provider's
// true (noise-free) count.
func relErr(c *Calibration, p provider, s int) float64 {
	scale, overhead, _, ok := c.Model()
	if !ok {
		scale, overhead = 1, 0
	}
	truth := p.scale*float64(s) + p.overhead
	return math.Abs(scale*float64(s)+overhead-truth) / truth
}

func TestCalibrationZeroValue(t *testing.T) {
	var c Calibration
	assert.Equal(t, 1000, c.Budget(1000), "changes nothing before an observation")
	assert.Equal(t, 0, c.Budget(0), "a non-positive budget is left for the trim to reject")
	_, _, _, ok := c.Model()
	assert.False(t, ok)
}

func TestCalibrationLearns(t *testing.T) {
	tests := []struct {
		name   string
		p      provider
		reason string
	}{
		{"scale and schemas", provider{scale: 1.3, overhead: 2_000}, "a provider that counts 1.3x plus tool schemas"},
		{"scale only", provider{scale: 1.25}, "a different tokenizer"},
		{"counts less", provider{scale: 0.8}, "a provider that counts less: the budget grows"},
		{"noisy", provider{scale: 1.3, overhead: 2_000, jitter: 0.005}, "half a percent of noise either way"},
		{"scales messages, not schemas", provider{scale: 1.3, overhead: -0.3 * 3_000}, "WithOverhead counts 3,000 tokens of schemas the provider counts 1x: a negative intercept"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.r = rand.New(rand.NewPCG(1, 2))
			sizes := rand.New(rand.NewPCG(3, 4))
			var c Calibration
			for i := 1; i <= 10; i++ {
				s := 60_000 + sizes.IntN(20_000)
				c.Observe(s, tc.p.count(s))
				if i >= 3 {
					assert.LessOrEqual(t, relErr(&c, tc.p, 70_000), 0.02, "%s: within 2%% after %d observations", tc.reason, i)
				}
			}
			const budget = 100_000
			b := c.Budget(budget)
			truth := tc.p.scale*float64(b) + tc.p.overhead
			assert.LessOrEqual(t, truth, budget*(1+tc.p.jitter), "%s: the provider's count lands under the budget", tc.reason)
			assert.GreaterOrEqual(t, truth, budget*0.95, "%s: no over-trimming", tc.reason)
		})
	}
}

func TestCalibrationIgnoresAbsurdObservations(t *testing.T) {
	var c Calibration
	c.Observe(10_000, 13_000)
	before := c.Budget(100_000)
	for _, o := range []struct {
		sent, reported int
		reason         string
	}{
		{10_000, 0, "a report of zero"},
		{0, 13_000, "nothing sent"},
		{-5, 13_000, "a negative count"},
		{10_000, 1_000_000, "100x the count"},
		{10_000, 100, "a hundredth of the count"},
		{10_000, 40_000, "3x what the model predicts"},
	} {
		c.Observe(o.sent, o.reported)
		assert.Equal(t, before, c.Budget(100_000), o.reason)
	}
	// Outliers in a row that agree with each other are a changed provider.
	for range relearnAfter {
		c.Observe(10_000, 40_000)
	}
	scale, _, _, _ := c.Model()
	assert.InDelta(t, 4.0, scale, 0.01, "after %d agreeing outliers the model follows them", relearnAfter)
}

// TestCalibrationStable: jitter in the observations must not move the budget
// on every request, or a Trimmer's cut would move with it.
func TestCalibrationStable(t *testing.T) {
	p := provider{scale: 1.3, overhead: 2_000, jitter: 0.002, r: rand.New(rand.NewPCG(5, 6))}
	var c Calibration
	for range 5 {
		c.Observe(70_000, p.count(70_000))
	}
	budgets := map[int]bool{}
	for range 30 {
		c.Observe(70_000, p.count(70_000))
		budgets[c.Budget(100_000)] = true
	}
	lo, hi := math.MaxInt, 0
	for b := range budgets {
		lo, hi = min(lo, b), max(hi, b)
	}
	assert.LessOrEqual(t, float64(hi-lo)/float64(hi), 0.01, "the budget moves by at most 1%%: %v", budgets)
}

func TestCalibrationJSON(t *testing.T) {
	var c Calibration
	c.Observe(50_000, 67_000)
	c.Observe(70_000, 93_000)
	c.Observe(70_000, 400_000) // held as an outlier
	c.ObserveOverflow(80_000, 100_000)
	data, err := json.Marshal(&c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":2,"observations":[[50000,67000],[70000,93000]],"held":[[70000,400000]],"held_kind":"outlier","rejections":[[80000,100000,0]]}`, string(data))

	var restored Calibration
	require.NoError(t, json.Unmarshal(data, &restored))
	again, err := json.Marshal(&restored)
	require.NoError(t, err)
	assert.JSONEq(t, string(data), string(again), "the whole state comes back")
	assert.Equal(t, c.Budget(100_000), restored.Budget(100_000))

	want := c.Budget(100_000)
	for _, bad := range []struct{ state, reason string }{
		{`{`, "truncated JSON"},
		{`[]`, "not an object"},
		{`{"version":3,"observations":[]}`, "unknown version"},
		{`{"version":2,"observations":[[100,0]]}`, "a zero count"},
		{`{"version":2,"observations":[[100,100000]]}`, "a ratio above 8"},
		{`{"version":2,"observations":[],"held":[[100,130]],"held_kind":"used"}`, "an unknown held kind"},
		{`{"version":2,"observations":[],"rejections":[[100,130,16]]}`, "a rejection older than the window"},
		{`{"version":2,"observations":[],"asked":-1}`, "a negative budget"},
	} {
		err := restored.UnmarshalJSON([]byte(bad.state))
		assert.ErrorIs(t, err, ErrInvalidCalibration, bad.reason)
		assert.Equal(t, want, restored.Budget(100_000), "%s: a bad state leaves the model alone", bad.reason)
	}
	// A version 1 state (observations only) is replayed through Observe's
	// rules, so a tampered one cannot install an absurd model.
	require.NoError(t, json.Unmarshal([]byte(`{"version":1,"observations":[[100,0],[100,100000],[1000,1300]]}`), &restored))
	scale, _, _, _ := restored.Model()
	assert.InDelta(t, 1.3, scale, 0.001)
}

// TestCalibrationJSONRoundTrips: a restored Calibration gives the same
// Budget as the one saved, and goes on to give the same Budget as it after
// the same further observations, whatever the sequence (outliers held,
// truncations, rejections, restarts).
func TestCalibrationJSONRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for seq := range 2_000 {
		var c Calibration
		steps := 1 + r.IntN(40)
		for range steps {
			s := 1_000 + r.IntN(60_000)
			switch k := r.IntN(10); {
			case k == 0:
				c.ObserveOverflow(s, r.IntN(80_000))
			case k == 1:
				c.Observe(s, s*(1+r.IntN(12))) // some far above the model
			case k == 2:
				c.Observe(s, s/(2+r.IntN(6))) // some truncated
			default:
				c.Observe(s, int(float64(s)*(0.7+r.Float64())))
			}
			_ = c.Budget(50_000 + r.IntN(100_000))
		}
		data, err := json.Marshal(&c)
		require.NoError(t, err)
		var back Calibration
		require.NoError(t, json.Unmarshal(data, &back), string(data))
		for _, b := range []int{1, 8_000, 16_000, 100_000, math.MaxInt} {
			require.Equal(t, c.Budget(b), back.Budget(b), "sequence %d, Budget(%d) after %s", seq, b, data)
		}
		for range 5 {
			s := 1_000 + r.IntN(60_000)
			p := int(float64(s) * (0.5 + r.Float64()*3))
			require.Equal(t, c.Observe(s, p), back.Observe(s, p), "sequence %d", seq)
			require.Equal(t, c.Budget(100_000), back.Budget(100_000), "sequence %d: the same future", seq)
		}
	}
}

// recentRatios returns the smallest and largest ratio P/S among the
// observations the model is fitted to.
func recentRatios(c *Calibration) (lo, hi float64, n int) {
	lo = math.Inf(1)
	var buf windowBuf
	for _, o := range c.window(&buf) {
		r := float64(o.reported) / float64(o.sent)
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo, hi, c.n
}

// checkBudgetRule fails t unless Budget(B), priced at the smallest recent
// ratio, is at most B (and so at most B when every recent observation
// reported more than was sent).
func checkBudgetRule(t testing.TB, c *Calibration, budget int, what string) {
	t.Helper()
	lo, _, n := recentRatios(c)
	b := c.Budget(budget)
	if n == 0 {
		return
	}
	if float64(b)*lo > float64(budget)*(1+1e-12) {
		t.Fatalf("%s: Budget(%d) = %d, priced at the smallest recent ratio %.4f is %.0f, over the budget", what, budget, b, lo, float64(b)*lo)
	}
	if lo > 1 && b > budget {
		t.Fatalf("%s: every recent observation reported more than was sent (smallest ratio %.4f), yet Budget(%d) = %d", what, lo, budget, b)
	}
}

// TestCalibrationNeverAboveData: the fits the issue reported, which aimed
// far above anything observed.
func TestCalibrationNeverAboveData(t *testing.T) {
	tests := []struct {
		name   string
		obs    [][2]int
		budget int
		reason string
	}{
		{"fixed schema on small requests", [][2]int{{200, 1200}, {210, 1201}, {220, 1202}}, 100_000,
			"a tool schema dominating the first requests fitted scale 0.1 + overhead 1180 and Budget(100000) = 972,957"},
		{"mixed provider", [][2]int{{14_100, 15_950}, {14_600, 19_900}, {13_900, 16_200}, {15_050, 18_100}, {14_400, 17_600}, {3_000, 3_400}, {6_100, 8_200}}, 16_000,
			"tool results counted 1.6x and text 0.9x: every ratio 1.13-1.37, and the fit once gave Budget(16000) = 20,301"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Calibration
			for _, o := range tc.obs {
				c.Observe(o[0], o[1])
				checkBudgetRule(t, &c, tc.budget, tc.reason)
			}
			assert.Less(t, c.Budget(tc.budget), tc.budget, tc.reason)
		})
	}
}

// TestCalibrationBudgetRuleProperty: for any sequence of observations
// within the documented bounds, Budget(B) obeys the rule of
// TestCalibrationNeverAboveData, and stays within [B/16, 8B].
func TestCalibrationBudgetRuleProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	lo, hi := math.Inf(1), 0.0
	for seq := range 20_000 {
		var c Calibration
		for range 1 + r.IntN(30) {
			s := 1 + r.IntN(200_000)
			ratio := math.Exp(math.Log(minRatio) + r.Float64()*math.Log(maxRatio/minRatio))
			c.Observe(s, max(1, int(float64(s)*ratio)))
			checkBudgetRule(t, &c, 100_000, "sequence "+itoa(seq))
		}
		f := float64(c.Budget(100_000)) / 100_000
		lo, hi = min(lo, f), max(hi, f)
	}
	t.Logf("Budget(100000)/100000 over 20,000 random sequences: %.4f-%.4f", lo, hi)
	assert.GreaterOrEqual(t, lo, 1.0/16)
	assert.LessOrEqual(t, hi, 8.0)
}

// FuzzCalibration: any sequence of observations, rejections and budgets
// keeps the rule, never panics, and round-trips through JSON.
func FuzzCalibration(f *testing.F) {
	f.Add([]byte{0, 200, 0, 176, 4, 0, 210, 0, 177, 4, 0, 220, 0, 178, 4}, 100_000)
	f.Add([]byte{1, 50, 0, 60, 0}, 16_000)
	f.Fuzz(func(t *testing.T, data []byte, budget int) {
		var c Calibration
		for len(data) >= 5 {
			s := int(data[1])<<8 | int(data[2])
			p := int(data[3])<<8 | int(data[4])
			switch data[0] % 3 {
			case 0, 1:
				c.Observe(s, p)
			case 2:
				c.ObserveOverflow(s, p)
			}
			data = data[5:]
			if budget > 0 {
				checkBudgetRule(t, &c, budget, "fuzz")
			}
		}
		b := c.Budget(budget)
		if budget > 0 && (b < 1) {
			t.Fatalf("Budget(%d) = %d", budget, b)
		}
		state, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		var back Calibration
		if err := json.Unmarshal(state, &back); err != nil {
			t.Fatalf("%v: %s", err, state)
		}
		if back.Budget(budget) != b {
			t.Fatalf("restored Budget(%d) = %d, want %d", budget, back.Budget(budget), b)
		}
	})
}

// TestCalibrationRejection: a rejection teaches even without numbers: after
// an overflow of S tokens aimed at B, Budget(B) is below S.
func TestCalibrationRejection(t *testing.T) {
	var c Calibration
	for range 5 {
		c.Observe(15_000, 15_000)
	}
	b := c.Budget(16_000)
	c.ObserveOverflow(b, 0) // the Responses API states no sizes
	assert.Less(t, c.Budget(16_000), b, "the next budget is below the size that failed")

	var fresh Calibration
	fresh.ObserveOverflow(12_000, 10_000) // the error stated the limit only
	assert.Less(t, fresh.Budget(10_000), 12_000)
	assert.LessOrEqual(t, fresh.Budget(10_000), 11_760)

	// Through RecoverOverflow: the Responses API's body has no numbers.
	msgs := longChatForCalibration()
	var rc Calibration
	budget := Estimate(msgs, nil) + 10
	res, err := TrimToRecentTurns(msgs, budget, WithCalibration(&rc))
	require.NoError(t, err)
	providerErr := errors.New(`{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`)
	_, err = RecoverOverflow(res.Messages, providerErr, 1, WithCalibration(&rc))
	require.NoError(t, err)
	assert.Less(t, rc.Budget(budget), res.TokensAfter, "the next trim aims below what was refused")

	// The rejection ages out with the window.
	for range calibrationWindow {
		c.Observe(15_000, 15_000)
	}
	assert.Equal(t, b, c.Budget(16_000))
}

// TestCalibrationTruncation: a server that silently truncates the prompt
// reports far fewer tokens than were sent; that must never raise the budget.
func TestCalibrationTruncation(t *testing.T) {
	var warm Calibration
	for i := range 8 {
		s := 10_000 + 500*i
		warm.Observe(s, s*13/10)
	}
	before := warm.Budget(16_000)
	tests := []struct {
		sent, reported int
		reason         string
	}{
		{16_000, 4_096, "an Ollama default window: a quarter of what was sent"},
		{16_000, 7_000, "under half of what was sent"},
		{14_000, 12_000, "below 70% of the prediction, and no larger than any report before"},
	}
	for _, tc := range tests {
		assert.Equal(t, VerdictTruncated, warm.Observe(tc.sent, tc.reported), tc.reason)
		assert.LessOrEqual(t, warm.Budget(16_000), before, tc.reason)
		var fresh Calibration
		if v := fresh.Observe(tc.sent, tc.reported); v != VerdictUsed {
			assert.Equal(t, VerdictTruncated, v, tc.reason)
			assert.Equal(t, 16_000, fresh.Budget(16_000), "%s: a fresh calibration keeps the budget", tc.reason)
		}
	}
	// The same truncated count, again and again at the same size: never
	// believed, however often.
	for range 20 {
		assert.Equal(t, VerdictTruncated, warm.Observe(16_000, 9_000))
	}
	assert.LessOrEqual(t, warm.Budget(16_000), before)

	// A real lower count grows with what is sent: four in a row that scale
	// are believed.
	var v Verdict
	for i := range relearnAfter {
		s := 10_000 + 1_500*i
		v = warm.Observe(s, s*8/10)
	}
	assert.Equal(t, VerdictRestarted, v)
	scale, _, _, _ := warm.Model()
	assert.InDelta(t, 0.8, scale, 0.01)
}

// TestCalibrationDrift: when the provider starts counting 1.4x instead of
// 1x, one observation of it is enough.
func TestCalibrationDrift(t *testing.T) {
	var c Calibration
	for i := range 16 {
		c.Observe(14_000+50*i, 14_000+50*i)
	}
	assert.Equal(t, VerdictRestarted, c.Observe(15_000, 21_000))
	b := c.Budget(16_000)
	assert.LessOrEqual(t, float64(b)*1.4, 16_000.0, "the next request fits at the new ratio")
	assert.GreaterOrEqual(t, float64(b)*1.4, 0.95*16_000, "and fills the window")
}

// TestCalibrationLoops simulates the loops of a runtime against providers
// that are not steady, with the budget set to the window: requests fill what
// Budget allows, an overflow is recovered from (with or without the
// provider's numbers) and every accepted request is observed. At most one
// overflow per loop (two with a drift), a mean fill of trimmed requests of
// at least 0.85, and, once warm, no swing of the budget larger than 5% from
// one request to the next.
func TestCalibrationLoops(t *testing.T) {
	const window = 16_000
	// A mixed provider counts tool results 1.6x and text 0.9x, so the
	// ratio follows the share f of tool results in each request, which
	// moves a little from one request to the next (as in the adapters'
	// loop matrix: a spread of 6-9% within 16 requests at 8k).
	f := 0.5
	mixed := func(_ int, r *rand.Rand) float64 {
		f = min(max(f+(r.Float64()-0.5)*0.08, 0.3), 0.67)
		return 0.9 + 0.7*f
	}
	drift := func(req int, _ *rand.Rand) float64 {
		if req >= 60 {
			return 1.4
		}
		return 1.0
	}
	tests := []struct {
		name      string
		ratio     func(req int, r *rand.Rand) float64
		numbers   bool
		overflows int
		steady    bool // the swing is measured on a steady mix only
	}{
		{"skew 1.35", func(int, *rand.Rand) float64 { return 1.35 }, true, 1, true},
		{"skew 0.75", func(int, *rand.Rand) float64 { return 0.75 }, true, 1, true},
		{"drift 1.0 to 1.4", drift, true, 2, false},
		{"drift 1.0 to 1.4, no numbers", drift, false, 2, false},
		{"mixed content", mixed, true, 1, true},
		{"mixed content, no numbers", mixed, false, 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			f = 0.5
			var c Calibration
			overflows, fill, trimmed, swing := 0, 0.0, 0, 0.0
			prev := 0
			for req := range 150 {
				natural := 300 * (req + 1) // the history grows
				b := c.Budget(window)
				if prev > 0 && req > 30 && tc.steady {
					swing = max(swing, math.Abs(float64(b-prev))/float64(prev))
				}
				prev = b
				s := min(natural, int(float64(b)*(0.93+0.06*r.Float64())))
				for attempt := 1; ; attempt++ {
					p := int(float64(s) * tc.ratio(req, r))
					if p <= window {
						c.Observe(s, p)
						if s < natural {
							fill += float64(p) / window
							trimmed++
						}
						break
					}
					require.Less(t, attempt, 4, "request %d does not recover", req)
					overflows++
					if tc.numbers {
						c.Observe(s, p)
						s = int(float64(s) * window / float64(p) * 0.9)
					} else {
						c.ObserveOverflow(s, 0)
						s = s * 3 / 4
					}
				}
			}
			fill /= float64(trimmed)
			t.Logf("%d overflows, mean fill of %d trimmed requests %.3f, largest swing once warm %.3f", overflows, trimmed, fill, swing)
			assert.LessOrEqual(t, overflows, tc.overflows)
			assert.GreaterOrEqual(t, fill, 0.85)
			assert.LessOrEqual(t, swing, 0.05)
		})
	}
}

func TestCalibrationConcurrent(t *testing.T) {
	var c Calibration
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				s := 10_000 + 100*g + i
				c.Observe(s, s*13/10)
				_ = c.Budget(50_000)
			}
		}()
	}
	wg.Wait()
	scale, _, _, ok := c.Model()
	require.True(t, ok)
	assert.InDelta(t, 1.3, scale, 0.01)
}

func TestWithCalibration(t *testing.T) {
	msgs := longChatForCalibration()
	var c Calibration
	c.Observe(1_000, 2_000) // the provider counts twice as much
	res, err := TrimToRecentTurns(msgs, 400, WithCalibration(&c))
	require.NoError(t, err)
	assert.Equal(t, c.Budget(400), res.Budget, "the trim aims at the calibrated budget")
	assert.LessOrEqual(t, res.TokensAfter, 200)

	tr := NewTrimmer(WithCalibration(&c))
	res, err = tr.Trim(msgs, 400)
	require.NoError(t, err)
	assert.LessOrEqual(t, res.TokensAfter, 200, "the Trimmer too")

	// RecoverOverflow records what the provider said about the request.
	var rc Calibration
	sent := Estimate(msgs, nil)
	providerErr := errors.New("This model's maximum context length is 1000 tokens. However, your messages resulted in " +
		itoa(sent*3/2) + " tokens. Please reduce the length of the messages.")
	_, err = RecoverOverflow(msgs, providerErr, 1, WithCalibration(&rc))
	require.NoError(t, err)
	scale, _, _, ok := rc.Model()
	require.True(t, ok, "the overflow's sizes were observed")
	assert.InDelta(t, 1.5, scale, 0.01)
}

func longChatForCalibration() []Message {
	msgs := []Message{{Role: RoleSystem, Content: "sys"}}
	for i := range 20 {
		msgs = append(msgs,
			Message{Role: RoleUser, Content: "question " + itoa(i) + " about the code base and its tests"},
			Message{Role: RoleAssistant, Content: "answer " + itoa(i) + " with some detail about the code"},
		)
	}
	return msgs
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// BenchmarkCalibrationObserve measures one observation and refit.
func BenchmarkCalibrationObserve(b *testing.B) {
	var c Calibration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		c.Observe(60_000+i%1000, 80_000+i%1300)
	}
}
