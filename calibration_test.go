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
	data, err := json.Marshal(&c)
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":1,"observations":[[50000,67000],[70000,93000]]}`, string(data))

	var restored Calibration
	require.NoError(t, json.Unmarshal(data, &restored))
	assert.Equal(t, c.Budget(100_000), restored.Budget(100_000))

	for _, bad := range []string{`{`, `{"version":2,"observations":[]}`, `[]`} {
		err := restored.UnmarshalJSON([]byte(bad))
		assert.ErrorIs(t, err, ErrInvalidCalibration, bad)
		assert.Equal(t, c.Budget(100_000), restored.Budget(100_000), "a bad state leaves the model alone")
	}
	// A tampered state is replayed through Observe's rules.
	require.NoError(t, json.Unmarshal([]byte(`{"version":1,"observations":[[100,0],[100,100000],[1000,1300]]}`), &restored))
	scale, _, _, _ := restored.Model()
	assert.InDelta(t, 1.3, scale, 0.001)
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
