// Package refusal holds the rule by which a provider's refusal of a
// request for its length bounds the later requests to the same model,
// which history.Trimmer (RecoverOverflow, then every later budget) and
// internal/adapt's Limits (the door of the wrappers that trim each call
// with the package functions) share, so that both learn the same figure
// from the same refusal. It imports nothing of the module, so that the
// core can import it.
package refusal

// MinRatio and MaxRatio bound the provider's count of one of the
// library's tokens: a provider that counts the same request as more than
// 8 times, or less than an eighth of, the Counter's count is reporting
// something else. history.Calibration bounds what it observes the same.
const (
	MinRatio = 1.0 / 8
	MaxRatio = 8.0
)

// Ratio returns the provider's count of one of the library's tokens in
// a request it refused for its length, as a trimmer with a Calibration
// knows it before the Calibration learns from the refusal: used / sent,
// when the provider stated the count it refused (used) and the trim's
// count of what was sent is known (sent); else planned / budget(planned),
// the budget the refused request was planned for over the Calibration's
// conversion of it (budget is the Calibration's Budget; one of zero or
// less reads as MaxRatio); else, with neither, 1. It lies in [MinRatio,
// MaxRatio].
func Ratio(used, sent, planned int, budget func(int) int) float64 {
	r := 1.0
	switch {
	case used > 0 && sent > 0:
		r = float64(used) / float64(sent)
	case planned > 0:
		r = MaxRatio
		if b := budget(planned); b > 0 {
			r = float64(planned) / float64(b)
		}
	}
	return min(max(r, MinRatio), MaxRatio)
}

// Allowed returns what a refusal allows of a later request to the same
// model, in the units of the budgets the trimmer is given: with a
// Calibration (calibrated: the budgets are then in the provider's units,
// which the Calibration converts, keeping its own margin below them), the
// limit the provider stated (limit, when positive), which needs no margin
// of its own; otherwise target, the budget the recovery that followed the
// refusal aimed at in the counter's units, times ratio (Ratio with a
// Calibration; 1 without one, the budgets being in the counter's units).
func Allowed(target int, ratio float64, limit int, calibrated bool) float64 {
	if calibrated && limit > 0 {
		return float64(limit)
	}
	return float64(target) * ratio
}
