package quality

import history "github.com/histrim/history"

// Budget is a budget for every session: a share of the session's peak
// request, or a fixed number of tokens.
type Budget struct {
	Name   string
	Share  float64
	Tokens int
}

// For returns the budget for s.
func (b Budget) For(s *Session) int {
	if b.Tokens > 0 {
		return b.Tokens
	}
	return max(int(b.Share*float64(s.Peak)), 1)
}

// Policies returns the policies the table compares.
func Policies() []Policy {
	return []Policy{
		{Name: "whole turns", Options: func(*Session) []history.Option { return nil }},
		{Name: "WithElision(ElideOptions{}) + WithStepTrim()", Options: func(*Session) []history.Option {
			return []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
		}},
		{Name: "+ Cut", Options: func(*Session) []history.Option {
			return []history.Option{history.WithElision(history.ElideOptions{Cut: true}), history.WithStepTrim()}
		}},
		{Name: "+ Cut, Digest: 200", Options: func(*Session) []history.Option {
			return []history.Option{history.WithElision(history.ElideOptions{Cut: true, Digest: history.DefaultDigest}), history.WithStepTrim()}
		}},
		{Name: "WithTask(goal, ElideOptions{})", TurnStart: history.UserWritten, Goal: true, Options: func(s *Session) []history.Option {
			return []history.Option{history.WithTask(s.Goal, history.ElideOptions{})}
		}},
	}
}
