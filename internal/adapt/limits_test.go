package adapt

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/histrim/history"
)

// geminiOverflow is Gemini's refusal stating both sizes.
func geminiOverflow(used, limit int) error {
	return errors.New("Error 400, Message: The input token count (" + strconv.Itoa(used) +
		") exceeds the maximum number of tokens allowed (" + strconv.Itoa(limit) + ").")
}

func TestLimits(t *testing.T) {
	warm := func() *history.Calibration {
		c := new(history.Calibration)
		for i := range 8 {
			c.Observe(1000+100*i, 1300+130*i)
		}
		return c
	}
	cases := []struct {
		name           string
		err            error
		budget, target int
		cal            *history.Calibration
		want           int // Bound("m", 1_000_000) after Learn
		why            string
	}{
		{"stated limit, calibrated", geminiOverflow(20_000, 16_000), 1_000_000, 12_000, warm(), 16_000,
			"with a Calibration the budget is in the provider's units: the stated limit"},
		{"stated limit, no Calibration", geminiOverflow(20_000, 16_000), 1_000_000, 12_000, nil, 12_000,
			"without, the budget is in the counter's units: the recovery's target"},
		{"no overflow", errors.New("rate limited"), 1_000_000, 12_000, warm(), 1_000_000,
			"an error that is no overflow says nothing of the window"},
		{"limit above the budget", geminiOverflow(20_000, 2_000_000), 1_000_000, 12_000, warm(), 1_000_000,
			"a limit the budget is already below bounds nothing (the Calibration learns the count)"},
		{"no budget", geminiOverflow(20_000, 16_000), 0, 12_000, warm(), 1_000_000,
			"a refusal of an invalid budget teaches nothing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l Limits
			l.Learn("m", c.err, c.budget, c.target, c.cal)
			if got := l.Bound("m", 1_000_000); got != c.want {
				t.Errorf("Bound = %d, want %d: %s", got, c.want, c.why)
			}
			if got := l.Bound("other", 1_000_000); got != 1_000_000 {
				t.Errorf("another model's Bound = %d: a limit is per model", got)
			}
			if got := l.Bound("m", 100); got != 100 {
				t.Errorf("Bound of a smaller budget = %d, want it unchanged", got)
			}
		})
	}
}

// TestLimitsOnlyFall: a later, higher figure does not raise the bound;
// the zero value is safe for concurrent use; past maxLimits names it
// stays bounded.
func TestLimitsOnlyFall(t *testing.T) {
	var l Limits
	l.Learn("m", geminiOverflow(20_000, 16_000), 100_000, 1, new(history.Calibration))
	l.Learn("m", geminiOverflow(40_000, 32_000), 100_000, 1, new(history.Calibration))
	if got := l.Bound("m", 100_000); got != 16_000 {
		t.Errorf("Bound = %d, want the lowest refusal's 16000", got)
	}
	var wg sync.WaitGroup
	for i := range 2 * maxLimits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := strconv.Itoa(i)
			l.Learn(name, geminiOverflow(20_000, 16_000), 100_000, 1, new(history.Calibration))
			l.Bound(name, 100_000)
		}()
	}
	wg.Wait()
	l.mu.Lock()
	n := len(l.m)
	l.mu.Unlock()
	if n > maxLimits {
		t.Errorf("%d model names held, want at most %d", n, maxLimits)
	}
}
