package beta

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/histrim/history"
)

// The server's defaults, when a request turns an edit on without a
// trigger (the API's documentation of context management).
const (
	// DefaultCompactTrigger is compact_20260112's default trigger, in
	// input tokens.
	DefaultCompactTrigger = 150_000
	// DefaultClearTrigger is clear_tool_uses_20250919's default trigger,
	// in input tokens.
	DefaultClearTrigger = 100_000
)

// Server is what the server rewrites of a request's prompt, read from its
// params (ServerOf).
type Server struct {
	// Compaction reports compact_20260112 in context_management.edits;
	// CompactTrigger is its input-token trigger.
	Compaction     bool
	CompactTrigger int
	// ClearToolUses reports clear_tool_uses_20250919; ClearTrigger is
	// its input-token trigger (0 when it triggers on tool uses).
	ClearToolUses bool
	ClearTrigger  int
	// ClearThinking reports clear_thinking_20251015.
	ClearThinking bool
	// Thread reports a request that continues a message thread
	// (thread.type "continue"): its messages are only the new ones.
	Thread bool
}

// ServerOf reads what the server rewrites from params: the edits of
// params.ContextManagement and whether params.Thread continues a thread.
func ServerOf(params anthropic.BetaMessageNewParams) Server {
	s := Server{Thread: params.Thread.OfContinue != nil}
	raw, err := json.Marshal(params.ContextManagement)
	if err != nil {
		return s
	}
	var cm struct {
		Edits []struct {
			Type    string `json:"type"`
			Trigger struct {
				Type  string `json:"type"`
				Value int    `json:"value"`
			} `json:"trigger"`
		} `json:"edits"`
	}
	_ = json.Unmarshal(raw, &cm)
	for _, e := range cm.Edits {
		switch e.Type {
		case "compact_20260112":
			s.Compaction, s.CompactTrigger = true, DefaultCompactTrigger
			if e.Trigger.Value > 0 {
				s.CompactTrigger = e.Trigger.Value
			}
		case "clear_tool_uses_20250919":
			s.ClearToolUses, s.ClearTrigger = true, DefaultClearTrigger
			switch {
			case e.Trigger.Type == "tool_uses":
				s.ClearTrigger = 0
			case e.Trigger.Value > 0:
				s.ClearTrigger = e.Trigger.Value
			}
		case "clear_thinking_20251015":
			s.ClearThinking = true
		}
	}
	return s
}

// Rewrites reports whether the server rewrites the prompt: compaction or
// context editing is on.
func (s Server) Rewrites() bool { return s.Compaction || s.ClearToolUses || s.ClearThinking }

// Trigger returns the lowest input-token trigger of the server's
// rewrites; 0 when none has one.
func (s Server) Trigger() int {
	t := 0
	for _, v := range []int{s.CompactTrigger, s.ClearTrigger} {
		if v > 0 && (t == 0 || v < t) {
			t = v
		}
	}
	return t
}

// ErrGuard is wrapped by *GuardError: the budget given to Guard does not
// leave the server's rewrites room to run.
var ErrGuard = errors.New("history/anthropicv2/beta: budget at or below the server's trigger")

// GuardError reports a budget at or below the server's trigger: the
// library would rewrite the prompt before the server does, and the cache
// would be rewritten by both. It wraps ErrGuard.
type GuardError struct {
	Budget, Trigger int
}

func (e *GuardError) Error() string {
	return "history/anthropicv2/beta: budget " + strconv.Itoa(e.Budget) + " is at or below the server's trigger " +
		strconv.Itoa(e.Trigger) + ": the library would rewrite the prompt before the server does"
}

// Unwrap returns ErrGuard.
func (e *GuardError) Unwrap() error { return ErrGuard }

// Guard returns the options that make the library the hard guard above the
// server's trigger when params turn server compaction or context editing
// on, so that each rewrite of the prompt has one owner: the server
// compacts and clears from its trigger on, and the library only keeps the
// request inside budget (the model's window), whatever the server does,
// and recovers from an overflow. Over budget, it drops whole turns first;
// when the latest turn alone does not fit (a burst of tool results
// arrived after the server's last pass), it drops the oldest steps of
// that turn (history.WithStepTrim) and, as the last rung, cuts the
// largest tool results still sent to a head and tail digest
// (history.ElideOptions.Cut; no result is elided otherwise), so that the
// request fits unless the user's own text does not. Below budget it
// changes nothing. Trim (or a Trimmer) with the options Guard returns, at
// that budget, and add no history.WithElision, history.WithSummarizer,
// history.WithLowWater or history.WithTrigger: each would rewrite the
// prompt below the server's trigger. The returned options are the guard's
// rungs, then opts (a history.WithCalibration, history.WithOnTrim, pins;
// a later option overrides what the rungs set), then
// history.WithOverhead(Overhead(params, nil)).
//
// Guard returns a *GuardError when budget is not above the server's
// trigger; with no server rewrite on, it returns the same options.
func Guard(params anthropic.BetaMessageNewParams, budget int, opts ...history.Option) ([]history.Option, error) {
	s := ServerOf(params)
	if t := s.Trigger(); s.Rewrites() && t > 0 && budget <= t {
		return nil, &GuardError{Budget: budget, Trigger: t}
	}
	return guard(opts, history.WithOverhead(Overhead(params, nil))), nil
}

// guard returns the guard's rungs, opts, then overhead: step trimming,
// and the cut rung of elision with no result eligible for elision itself
// (none is large enough), so that only a request over budget once every
// turn and step that may go is gone has results cut.
func guard(opts []history.Option, overhead history.Option) []history.Option {
	out := make([]history.Option, 0, len(opts)+3)
	out = append(out, history.WithStepTrim(), history.WithElision(history.ElideOptions{MinTokens: math.MaxInt, Cut: true}))
	out = append(out, opts...)
	return append(out, overhead)
}

// InputTokens returns the size of the prompt the client sent, as the API
// counted it before its own edits: input_tokens plus the cache reads and
// writes (with prompt caching, input_tokens alone is the uncached part)
// plus what context editing cleared (context_management.applied_edits[]
// .cleared_input_tokens). ok is false when a compaction ran in the
// request (a "compaction" entry in usage.iterations): the counts then
// describe the compacted prompt, not the one the library measured, and a
// history.Calibration must not learn from them.
func InputTokens(m *anthropic.BetaMessage) (n int, ok bool) {
	for _, it := range m.Usage.Iterations {
		if it.Type == "compaction" {
			return 0, false
		}
	}
	u := m.Usage
	n = int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
	for _, e := range m.ContextManagement.AppliedEdits {
		n += int(e.ClearedInputTokens)
	}
	return n, true
}

// Observe teaches cal the API's count of the request whose trim returned
// res, from its reply m (see InputTokens); it reports false, learning
// nothing, for a request in which a compaction ran.
func Observe(cal *history.Calibration, res history.Result, m *anthropic.BetaMessage) bool {
	n, ok := InputTokens(m)
	if ok {
		cal.Observe(res.TokensAfter, n)
	}
	return ok
}

// ErrThread is wrapped by *ThreadError: the request continues a message
// thread, whose history the server holds.
var ErrThread = errors.New("history/anthropicv2/beta: the request continues a message thread")

// ThreadError reports a request that continues a message thread
// (params.Thread.OfContinue): its messages are only the new ones, and the
// history the server holds cannot be pruned from the client. It wraps
// ErrThread.
type ThreadError struct {
	// PreviousMessageID is the thread's message the request continues.
	PreviousMessageID string
}

func (e *ThreadError) Error() string {
	return "history/anthropicv2/beta: the request continues thread message " + strconv.Quote(e.PreviousMessageID) +
		": the server holds its history; trim the thread's client copy (TrimThread), which is what the SDK sends to create or replay it"
}

// Unwrap returns ErrThread.
func (e *ThreadError) Unwrap() error { return ErrThread }

// TrimRequest trims params.Messages as [Trim] does, with the system prompt
// params.System, and returns params with the trimmed messages; it refuses
// a request that continues a message thread with a *ThreadError, since
// the history the server holds cannot be pruned from the client. params
// is not modified.
func TrimRequest(params anthropic.BetaMessageNewParams, budget int, opts ...history.Option) (anthropic.BetaMessageNewParams, history.Result, error) {
	if c := params.Thread.OfContinue; c != nil {
		return params, history.Result{Budget: budget}, &ThreadError{PreviousMessageID: c.PreviousMessageID}
	}
	out, res, err := Trim(params.System, params.Messages, budget, opts...)
	if out != nil {
		params.Messages = out
	}
	return params, res, err
}

// TrimThread trims the client's copy of a message thread before its next
// Send: what the SDK sends to create the thread, and replays when the
// server lost it (404 thread_not_found). Append the new messages to the
// thread first (thread.Append), then call TrimThread, then
// thread.Send(ctx, anthropic.BetaMessageThreadSendParams{}). The system
// prompt is thread.Params.System.
//
// Under a thread the library trims only what is sent. The copy is the
// history as it was last sent, so [Trim] with history.WithLowWater keeps
// its prefix stable: while it fits, TrimThread leaves it as it is and the
// thread continues on the server; when it no longer fits, the trimmed
// copy (down to the low-water mark) replaces it, and the SDK, seeing a
// history other than the one it sent, starts a new thread with it: the
// prompt is rewritten once, by the library, at a maintenance point.
// changed reports that. Errors are Trim's; on an error other than a
// *history.BudgetError the copy is left as it is.
func TrimThread(thread *anthropic.BetaMessageThread, budget int, opts ...history.Option) (res history.Result, changed bool, err error) {
	msgs := thread.Messages()
	out, res, err := Trim(thread.Params.System, msgs, budget, opts...)
	if out == nil || (len(out) == len(msgs) && (len(out) == 0 || &out[0] == &msgs[0])) {
		return res, false, err
	}
	thread.Params.Messages = out
	return res, true, err
}
