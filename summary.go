// This file owns the summariser hook's API: the Summarizer, its options,
// what a Trimmer reports of its summary. At a maintenance point
// that drops whole turns, a caller-supplied Summarizer writes the summary that
// stands for them, pinned in place of the breadcrumb, incremental and never
// stacked; any failure falls back to the plain trim.

package history

import (
	"context"
	"strconv"
	"time"
)

// Summarizer writes the summary that stands for the turns a [Trimmer] drops.
// Set it with [WithSummarizer].
type Summarizer interface {
	// Summarize returns a summary of dropped, the messages that leave the
	// prompt at this maintenance point (oldest first), folding in previous,
	// the summary that stood for the turns dropped before (nil when none),
	// so that the one summary it returns covers everything dropped so far.
	// It must return within ctx's deadline. The returned message must be a
	// valid [Message] of role user, system or assistant without tool calls;
	// its Kind is set to [KindSummary].
	Summarize(ctx context.Context, dropped []Message, previous *Message) (Message, error)
}

// SummarizerFunc adapts a function to the [Summarizer] interface.
type SummarizerFunc func(ctx context.Context, dropped []Message, previous *Message) (Message, error)

// Summarize calls f.
func (f SummarizerFunc) Summarize(ctx context.Context, dropped []Message, previous *Message) (Message, error) {
	return f(ctx, dropped, previous)
}

// Defaults of [SummaryOptions].
const (
	// DefaultSummaryTokens is the summary's budget when
	// [SummaryOptions.MaxTokens] is 0.
	DefaultSummaryTokens = 1024
	// DefaultSummaryTimeout bounds a Summarizer call when
	// [SummaryOptions.Timeout] is 0.
	DefaultSummaryTimeout = 30 * time.Second
)

// SummaryOptions configures [WithSummarizer]. The zero value works.
type SummaryOptions struct {
	// MaxTokens is the summary's own budget, in the Counter's units: the
	// trim reserves it before choosing what to drop, and a longer summary
	// is not used. 0 means [DefaultSummaryTokens]; it must not be negative.
	MaxTokens int
	// Timeout bounds each call of the Summarizer, on top of the caller's
	// context. 0 means [DefaultSummaryTimeout]; it must not be negative.
	Timeout time.Duration
	// InputTokens bounds what one call of the Summarizer is handed, in the
	// Counter's units: the dropped messages and the previous summary.
	// When they are larger, the tool results among them are elided first
	// ([ElideToolResults], every one); when they are still larger, they
	// are folded in chunks, oldest first, each chunk together with the
	// summary of the chunks before it, and a message larger than a chunk
	// can hold is cut to its head and tail. Chunks end between exchanges,
	// so a tool call is never handed without its result. 0 means the
	// trim's budget (a summariser on the same model has that window); it
	// must not be negative, and a bound below MaxTokens is raised to it.
	InputTokens int
	// Background makes the Trimmer write summaries without ever making a
	// request wait. It starts the summary when the prompt crosses the
	// trigger ([WithTrigger]; or, without one, when a maintenance point
	// drops turns behind a breadcrumb), of the turns a maintenance point
	// would drop then, and keeps sending the history meanwhile, up to the
	// budget itself (a maintenance point there goes ahead with the previous
	// summary and the breadcrumb: [SummaryPending]). The next request after
	// the summary is ready swaps it in for exactly the turns it was given,
	// dropping at least those (turns dropped since are covered by the next
	// summary). [Trimmer.Close] stops a summary in flight. A background
	// summary is this replica's own: it is not part of the saved state.
	//
	// A Summarizer with a method StartSummary() Summarizer is told when a
	// background summary starts: the Trimmer calls it within the Trim that
	// starts the summary, before that Trim returns, and the Summarizer it
	// returns (when not nil) writes that summary, later, on another
	// goroutine. The ready-made Summarizers of the adapters use it to take
	// the requests recorded at that moment, so that the summary request
	// extends one that holds what it summarises however late the goroutine
	// runs.
	Background bool
}

// Summary outcomes reported in [Event.Summary].
const (
	// SummaryWritten: the summary replaced the breadcrumb.
	SummaryWritten = "written"
	// SummaryFailed: the Summarizer returned an error or an invalid
	// message; the trim went ahead with the breadcrumb.
	SummaryFailed = "failed"
	// SummaryTimeout: the Summarizer did not return in time; the trim went
	// ahead with the breadcrumb.
	SummaryTimeout = "timeout"
	// SummaryTooLarge: the summary exceeded [SummaryOptions.MaxTokens]; the
	// trim went ahead with the breadcrumb.
	SummaryTooLarge = "too_large"
	// SummaryPending: in background mode, the next summary is being
	// written; the previous one (if any) stands, and the breadcrumb for
	// what it does not cover yet.
	SummaryPending = "pending"
)

// summarizer is the option's value.
type summarizer struct {
	s    Summarizer
	opts SummaryOptions
}

// WithSummarizer makes a [Trimmer] summarise the turns it drops, at the
// maintenance points where it must drop whole turns (the history no longer
// fits, and eliding tool results under [WithElision] is not enough: elision
// comes first, as it is free). The summary is a pinned [KindSummary]
// message placed where the breadcrumb would be; it replaces the previous
// summary (never stacked), which the Summarizer receives to fold in, so it
// covers every turn dropped so far; and it stays in the prompt unchanged
// until the next maintenance point. The trim reserves
// [SummaryOptions.MaxTokens] for it.
//
// A request is never lost because of the Summarizer: when it fails, times
// out ([SummaryOptions.Timeout], or the context passed to
// [Trimmer.TrimContext]) or returns a summary that is invalid or too large,
// the trim goes ahead with the breadcrumb, within budget, and the [Event]
// says what happened ([Event.Summary]). By default the request waits for
// the Summarizer at the maintenance point that drops turns; with
// [SummaryOptions.Background] it never does. The Summarizer is never
// handed more than [SummaryOptions.InputTokens], and the summary starts
// with a line saying what it replaced (turns, messages, tokens);
// [Trimmer.Summary] returns it with what it covers. Only a Trimmer calls the
// Summarizer; [TrimToRecentTurns] and [RecoverOverflow] ignore it. A nil s
// turns summarising off; negative options make the call return an
// *[OptionError].
func WithSummarizer(s Summarizer, opts SummaryOptions) Option {
	var err error
	switch {
	case opts.MaxTokens < 0:
		err = &OptionError{Option: "WithSummarizer", Reason: "MaxTokens " + strconv.Itoa(opts.MaxTokens) + " is negative"}
	case opts.Timeout < 0:
		err = &OptionError{Option: "WithSummarizer", Reason: "Timeout " + opts.Timeout.String() + " is negative"}
	case opts.InputTokens < 0:
		err = &OptionError{Option: "WithSummarizer", Reason: "InputTokens " + strconv.Itoa(opts.InputTokens) + " is negative"}
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = DefaultSummaryTokens
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultSummaryTimeout
	}
	return func(o *options) {
		if err != nil {
			o.fail(err)
			return
		}
		if s == nil {
			o.summarizer = nil
			return
		}
		o.summarizer = &summarizer{s: s, opts: opts}
	}
}

// summaryState is what a Trimmer remembers of its summary.
type summaryState struct {
	msg *Message // the summary in the prompt, nil when none
	// upTo is the transcript index up to which (exclusive) msg covers the
	// dropped messages; from is where they start (the end of the prefix).
	from, upTo int
	// What the summary stands for, in all: turns, messages and their
	// tokens as the Counter counts them.
	turns, messages, tokens int
	// covered is the hash (rangeSum) of the transcript's messages of
	// [from, upTo) when the summary was made: a restored summary is used
	// only for a transcript that holds the very messages it covers.
	covered uint64
}

// SummaryInfo is the summary a [Trimmer] sends and what it stands for, for
// a runtime that persists or shows it ([Trimmer.Summary]).
type SummaryInfo struct {
	// Message is the summary, as sent ([KindSummary]).
	Message Message
	// From and UpTo delimit the transcript indices it covers: the messages
	// of [From, UpTo) that the Trimmer dropped (it sends the others).
	From, UpTo int
	// Turns, Messages and Tokens count what it stands for, in all (a
	// summary folds in the one before it): the turns and messages dropped,
	// and their tokens as the Counter counted them.
	Turns, Messages, Tokens int
}

// Summary returns the summary the Trimmer's last prompt holds and what it
// covers; false when the prompt holds none. A runtime can persist it (the
// Trimmer's whole state is also saved by [Trimmer.MarshalBinary]) or show
// it to the user. A summary restored by [Trimmer.UnmarshalBinary] is
// returned as restored until the next Trim checks it against the
// transcript (and drops it if it covers other messages).
func (t *Trimmer) Summary() (SummaryInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sum
	if s.msg == nil {
		return SummaryInfo{}, false
	}
	return SummaryInfo{Message: s.msg.Clone(), From: s.from, UpTo: s.upTo, Turns: s.turns, Messages: s.messages, Tokens: s.tokens}, true
}
