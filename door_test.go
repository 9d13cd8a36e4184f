package history

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/histrim/history/models"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFit(t *testing.T) {
	msgs := trSession(40, 44)
	m := models.Model{Name: "m", Window: 4000, Output: 1000, CacheRetention: 5 * time.Minute}
	var cal Calibration
	tr := NewTrimmer(WithModel(m), WithCalibration(&cal))
	res, err := tr.Fit(context.Background(), msgs)
	require.NoError(t, err)
	assert.Equal(t, 4000-1000-200, res.Budget, "window less output, less the margin while the calibration is cold")
	assert.LessOrEqual(t, res.TokensAfter, res.Budget)

	assert.Equal(t, VerdictUsed, tr.Observe(res.TokensAfter+10), "the provider's count of what was sent")
	res, err = tr.Fit(context.Background(), msgs)
	require.NoError(t, err)
	assert.Equal(t, cal.Budget(3000), res.Budget, "warm: no margin, and the budget is the Calibration's")

	o := newOptions([]Option{WithModel(m)})
	assert.Equal(t, 5*time.Minute, o.retention(), "the model's cache retention decides a cold resume")
	o.release()
	o = newOptions([]Option{WithModel(m), WithColdAfter(time.Hour)})
	assert.Equal(t, time.Hour, o.retention(), "unless WithColdAfter says otherwise")
	o.release()
}

func TestFitErrors(t *testing.T) {
	msgs := []Message{{Role: RoleUser, Content: "hi"}}
	tests := []struct {
		opts   []Option
		reason string
	}{
		{nil, "no model: a budget is never guessed"},
		{[]Option{WithModel(models.Model{Name: "m"})}, "a model with no window"},
		{[]Option{WithModel(models.Model{Name: "m", Window: 100, Output: 100})}, "an output room that leaves no input"},
		{[]Option{WithModel(models.Model{Name: "m", Window: 100, Output: -1})}, "a negative output room"},
	}
	for _, tc := range tests {
		_, err := NewTrimmer(tc.opts...).Fit(context.Background(), msgs)
		var oe *OptionError
		assert.True(t, errors.As(err, &oe) && oe.Option == "WithModel", "%s: %v", tc.reason, err)
	}
	tr := NewTrimmer(WithModel(models.Model{Name: "m", Window: 1000}))
	assert.Equal(t, VerdictInvalid, tr.Observe(100), "no Calibration")
	tr = NewTrimmer(WithModel(models.Model{Name: "m", Window: 1000}), WithCalibration(new(Calibration)))
	assert.Equal(t, VerdictInvalid, tr.Observe(100), "nothing sent yet")
	_, err := tr.Fit(context.Background(), msgs)
	require.NoError(t, err)
	assert.Equal(t, VerdictInvalid, tr.Observe(0), "no count")
}
