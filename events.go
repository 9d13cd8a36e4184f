// This file owns the trim Event: its fields, its log form, and LogTrims.

package history

import (
	"log/slog"
	"maps"
	"slices"
)

// EventType is the Type of every [Event].
const EventType = "history_trimmed"

// notCounted is how an Event's log group shows a TokensBefore of -1: the
// trim counts newest first and stops once it knows what to keep, so by
// default it does not count what it drops (WithFullCount counts it).
const notCounted = "not counted"

// Reasons an [Event] can carry.
const (
	// ReasonBudget: [TrimToRecentTurns] or [Trimmer.Trim] trimmed to fit the
	// budget.
	ReasonBudget = "budget"
	// ReasonOverflow: [RecoverOverflow] trimmed after a provider rejected a
	// request for its length.
	ReasonOverflow = "overflow"
	// ReasonColdResume: a [Trimmer] elided stale tool results on the first
	// request after an idle gap longer than the provider's cache retention
	// ([WithColdAfter]), when the cached prefix is gone anyway.
	ReasonColdResume = "cold_resume"
)

// Event describes one trim, for logs and metrics; [WithOnTrim] receives it
// whenever a trim drops or elides something, or the orphan sweep removes
// something (a [Trimmer] that reuses its plan reports nothing: it dropped
// nothing new).
// Its numbers are the numbers of the [Result] it belongs to: TokensBefore is
// -1 when the trim did not count the dropped part (see [Result.TokensBefore]
// and [WithFullCount]). It is a plain value: the Labels map is a fresh copy
// for every event, so a callback may keep or modify it.
//
// Its JSON form is {"type":"history_trimmed","reason":"budget",...} with
// snake_case fields, and it implements [slog.LogValuer] so that
// slog.Any("trim", ev) logs it as a group (see [LogTrims]).
type Event struct {
	// Type is always [EventType], so that events can be told apart in a
	// mixed log or stream.
	Type string `json:"type"`
	// Reason is [ReasonBudget], [ReasonOverflow] or [ReasonColdResume].
	Reason string `json:"reason"`
	// DroppedMessages, DroppedTurns, KeptTurns, DroppedSteps,
	// ElidedResults, TokensBefore, TokensAfter and Budget are the
	// same-named figures of the [Result].
	DroppedMessages int `json:"dropped_messages"`
	DroppedTurns    int `json:"dropped_turns"`
	KeptTurns       int `json:"kept_turns"`
	DroppedSteps    int `json:"dropped_steps"`
	ElidedResults   int `json:"elided_results"`
	// CutResults is the Result's: of ElidedResults, the results cut to a
	// head and tail digest ([ElideOptions.Cut]); omitted from the JSON
	// and the log group when 0.
	CutResults int `json:"cut_results,omitempty"`
	// OrphansRemoved and DroppedInstructions are the same-named figures of
	// the Result: tool results and calls the orphan sweep removed (an
	// event fires for them alone too), and system messages given
	// mid-conversation that were dropped with their turns or steps.
	OrphansRemoved      int `json:"orphans_removed"`
	DroppedInstructions int `json:"dropped_instructions"`
	// TokensBefore is -1 when the trim did not count the dropped part, as
	// it does not by default: the log group says "not counted" then, and
	// the JSON form keeps -1, a number as elsewhere ([WithFullCount]
	// counts it).
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	Budget       int `json:"budget"`
	// Attempt is the attempt number of a [RecoverOverflow] call (1 or
	// more), and 0 for a trim to a budget.
	Attempt int `json:"attempt"`
	// Summary is what became of the summary at a [Trimmer]'s maintenance
	// point under [WithSummarizer]: [SummaryWritten], [SummaryFailed],
	// [SummaryTimeout] or [SummaryTooLarge]; empty when no Summarizer was
	// called.
	Summary string `json:"summary,omitempty"`
	// Rewritten is, at a [Trimmer]'s maintenance point, the tokens of the
	// prompt from its first message that differs from the previous
	// request's prompt: what the provider processes and writes to its
	// cache again (the whole prompt on the first request). 0 elsewhere.
	Rewritten int `json:"rewritten_tokens,omitempty"`
	// Billed is, at a Trimmer's maintenance point under [WithPrices], the
	// request's expected input bill in uncached-token units: the part
	// shared with the previous prompt at the cache-read price, the rest
	// ([Event.Rewritten], or everything after a cold resume or on the
	// first request) at the write price. 0 without prices.
	Billed float64 `json:"billed_tokens,omitempty"`
	// State says, for a trim by [Conversations], where the Trimmer's state
	// came from: [StateNew], [StateLocal], [StateRestored],
	// [StateUnavailable], [StateRefused] or [StateConflict]. Empty
	// elsewhere.
	State string `json:"state,omitempty"`
	// Labels are the caller's [WithLabels], copied; nil without them.
	Labels map[string]string `json:"labels,omitempty"`
}

// LogValue returns the event as a slog group: its numbers, then its labels
// in sorted key order (so log lines are deterministic). A TokensBefore the
// trim did not count is logged as tokens_before="not counted".
func (e Event) LogValue() slog.Value {
	before := slog.Int("tokens_before", e.TokensBefore)
	if e.TokensBefore < 0 {
		before = slog.String("tokens_before", notCounted)
	}
	attrs := make([]slog.Attr, 0, 13+len(e.Labels))
	attrs = append(attrs,
		slog.String("type", e.Type),
		slog.String("reason", e.Reason),
		slog.Int("dropped_messages", e.DroppedMessages),
		slog.Int("dropped_turns", e.DroppedTurns),
		slog.Int("kept_turns", e.KeptTurns),
		slog.Int("dropped_steps", e.DroppedSteps),
		slog.Int("elided_results", e.ElidedResults),
		slog.Int("orphans_removed", e.OrphansRemoved),
		slog.Int("dropped_instructions", e.DroppedInstructions),
		before,
		slog.Int("tokens_after", e.TokensAfter),
		slog.Int("budget", e.Budget),
		slog.Int("attempt", e.Attempt),
	)
	if e.CutResults != 0 {
		attrs = append(attrs, slog.Int("cut_results", e.CutResults))
	}
	if e.Summary != "" {
		attrs = append(attrs, slog.String("summary", e.Summary))
	}
	if e.Rewritten != 0 {
		attrs = append(attrs, slog.Int("rewritten_tokens", e.Rewritten))
	}
	if e.Billed != 0 {
		attrs = append(attrs, slog.Float64("billed_tokens", e.Billed))
	}
	if e.State != "" {
		attrs = append(attrs, slog.String("state", e.State))
	}
	for _, k := range sortedKeys(e.Labels) {
		attrs = append(attrs, slog.String(k, e.Labels[k]))
	}
	return slog.GroupValue(attrs...)
}

// LogTrims returns a callback for [WithOnTrim] that logs every event to l at
// Info level, as the message "history trimmed" with the event as a group
// named "trim". A nil l means the default logger at the time of each event
// ([slog.Default] is read on every call, so a later [slog.SetDefault] takes
// effect). The callback writes to nothing but the logger and is safe for
// concurrent use.
func LogTrims(l *slog.Logger) func(Event) {
	return func(e Event) {
		logger := l
		if logger == nil {
			logger = slog.Default()
		}
		logger.Info("history trimmed", slog.Any("trim", e))
	}
}

// newEvent returns the Event of res, a trim made for reason on the given
// attempt, with a fresh copy of labels.
func newEvent(res *Result, reason string, attempt int, labels map[string]string) Event {
	return Event{
		Type:                EventType,
		Reason:              reason,
		DroppedMessages:     res.DroppedMessages,
		DroppedTurns:        res.DroppedTurns,
		KeptTurns:           res.KeptTurns,
		DroppedSteps:        res.DroppedSteps,
		ElidedResults:       res.ElidedResults,
		CutResults:          res.CutResults,
		OrphansRemoved:      res.OrphansRemoved,
		DroppedInstructions: res.DroppedInstructions,
		TokensBefore:        res.TokensBefore,
		TokensAfter:         res.TokensAfter,
		Budget:              res.Budget,
		Attempt:             attempt,
		Labels:              maps.Clone(labels),
	}
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
