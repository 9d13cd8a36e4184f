package adapt

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
)

// geminiOverflow is Gemini's refusal stating both sizes.
func geminiOverflow(used, limit int) error {
	return errors.New("Error 400, Message: The input token count (" + strconv.Itoa(used) +
		") exceeds the maximum number of tokens allowed (" + strconv.Itoa(limit) + ").")
}

// warmCalibration returns a Calibration warm from 8 observations of a
// provider counting 1.3 times the library.
func warmCalibration() *history.Calibration {
	c := new(history.Calibration)
	for i := range 8 {
		c.Observe(1000+100*i, 1300+130*i)
	}
	return c
}

func TestLimits(t *testing.T) {
	cases := []struct {
		name           string
		err            error
		budget, target int
		cal            *history.Calibration
		want           int // Bound("m", 1_000_000) after Learn
		why            string
	}{
		{"stated limit, calibrated", geminiOverflow(20_000, 16_000), 1_000_000, 12_000, warmCalibration(), 16_000,
			"with a Calibration the budget is in the provider's units: the stated limit"},
		{"stated limit, no Calibration", geminiOverflow(20_000, 16_000), 1_000_000, 12_000, nil, 12_000,
			"without, the budget is in the counter's units: the recovery's target"},
		{"no overflow", errors.New("rate limited"), 1_000_000, 12_000, warmCalibration(), 1_000_000,
			"an error that is no overflow says nothing of the window"},
		{"limit above the budget", geminiOverflow(20_000, 2_000_000), 1_000_000, 12_000, warmCalibration(), 1_000_000,
			"a limit the budget is already below bounds nothing (the Calibration learns the count)"},
		{"no budget", geminiOverflow(20_000, 16_000), 0, 12_000, warmCalibration(), 1_000_000,
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

// TestLimitsAsTrimmer: from the same refusal, Limits bounds a later
// budget where a history.Trimmer's RecoverOverflow bounds its next Trim's
// (one rule, refusal.Ratio and refusal.Allowed): the stated limit with a
// Calibration, the Calibration's conversion of the recovery's target
// when nothing is stated, and the target without a Calibration. The
// figures may differ by the rounding of the Trimmer's share of the
// budget.
func TestLimitsAsTrimmer(t *testing.T) {
	var msgs []history.Message
	for i := range 40 {
		msgs = append(msgs, history.Message{Role: history.RoleUser, Content: "Task " + strconv.Itoa(i) + ": " + strings.Repeat("read the module and fix it ", 40)},
			history.Message{Role: history.RoleAssistant, Content: strings.Repeat("done with the module as asked ", 40)})
	}
	const budget = 1_000_000 // above the transcript: the first trim keeps it whole
	cases := []struct {
		name string
		err  error
		cal  *history.Calibration
	}{
		{"calibrated, limit and count stated: the limit", geminiOverflow(30_000, 16_000), warmCalibration()},
		{"calibrated, nothing stated: the target in the provider's units", errors.New("prompt is too long"), warmCalibration()},
		{"no Calibration, limit stated: the target", geminiOverflow(30_000, 16_000), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []history.Option
			if c.cal != nil {
				opts = append(opts, history.WithCalibration(c.cal))
			}
			tr := history.NewTrimmer(opts...)
			if _, err := tr.Trim(msgs, budget); err != nil {
				t.Fatal(err)
			}
			rec, err := tr.RecoverOverflow(msgs, c.err, 1)
			if err != nil {
				t.Fatal(err)
			}
			var l Limits
			l.Learn("m", c.err, budget, rec.Budget, c.cal)
			bound := l.Bound("m", budget)
			if bound >= budget {
				t.Fatalf("Limits learnt nothing from %v", c.err)
			}
			next, err := tr.Trim(msgs, budget)
			if err != nil {
				t.Fatal(err)
			}
			want := bound
			if c.cal != nil {
				want = c.cal.Budget(bound) // the counter's units, as Result.Budget
			}
			if d := next.Budget - want; d < -2 || d > 2 {
				t.Errorf("the Trimmer's next budget is %d, Limits' %d (bound %d in the budget's units)", next.Budget, want, bound)
			}
		})
	}
}
