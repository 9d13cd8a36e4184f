// Package history fits an LLM conversation into a token budget without
// breaking it. Agent runtimes call it before every provider request, and
// again when a provider rejects a request as too long.
//
// # Turns
//
// A conversation is a prefix followed by turns. The prefix is the leading
// run of system messages and pinned summaries ([KindSummary]), plus any
// breadcrumb the library left there earlier. A turn runs from one real user
// message ([RoleUser], no [Kind]) up to the next; everything an agent does in
// answer (assistant messages, tool calls, tool results, runtime nudges)
// belongs to that turn. Messages between the prefix and the first user
// message belong to the first turn. [Turns] returns the index ranges, and
// [WithTurnStart] changes the rule for runtimes that send tool results as
// user text.
//
// # Trimming
//
// [TrimToRecentTurns] keeps the prefix and the longest run of most recent
// whole turns that fits the budget, and drops the rest, oldest first. Because
// turns are dropped whole, a tool call and its result are never separated.
// The latest turn is always kept: when even the prefix and the latest turn do
// not fit, the [Result] holds them and the error wraps
// [ErrLatestTurnTooLarge], so the caller never receives an empty or broken
// history. [WithElision] and [WithStepTrim] add rungs to this ladder: old
// tool results become placeholders (with digests, [ElideOptions.Digest])
// before turns go, the oldest steps of the latest turn go next, and with
// [ElideOptions.Cut] the largest results still sent are cut to a head and
// tail digest before the trim gives up. [WithTask] is all of it in one
// option, for an agent working on a task.
//
// A runtime that keeps its full transcript and trims a view of it before
// every request uses a [Trimmer], which holds its plan across requests so
// that the provider's cached prompt prefix survives. After a provider
// rejects a request for its length, [RecoverOverflow] trims further, to a
// target derived from the provider's error.
//
// # Results
//
// A [Result] carries the history to send ([Result.Messages]), what was
// removed ([Result.Dropped], for archiving) and the figures of the trim.
// [Result.Kept] always parallels Messages: for each message it gives the
// index of the input message it is, or -1 for a breadcrumb the library
// inserted, and it is 0, 1, 2, ... when nothing changed. (Only a Result
// returned with an error that stopped the call before any decision, such as
// invalid input, has no Kept.) [Apply] uses it to map the decision back onto
// the caller's own message type.
//
// When nothing was removed or changed, Messages is the input slice itself,
// clipped to its length, so that appending to it cannot write into the
// caller's array; otherwise it is a new slice. Either way its messages are
// shallow copies that share their Parts and ToolCalls with the caller's
// messages: treat them as read-only, or [Message.Clone] one before editing
// its parts or calls.
//
// # Pairing
//
// Providers reject histories in which a tool result has no call, or a call
// has no result. The orphan sweep ([SweepOrphans], on by default in every
// trim) removes such results and strips such calls before turns are chosen.
// Pairing is positional: a result answers a call of the nearest preceding
// assistant message, so tool-call IDs reused by later exchanges are handled.
//
// # Breadcrumbs and events
//
// When turns are dropped, one breadcrumb message ([KindBreadcrumb], see
// [Breadcrumb]) tells the model that earlier turns were omitted. It sits
// right after the prefix, its tokens count toward the budget, and a later
// trim replaces it instead of stacking a second one. The caller is told too:
// [WithOnTrim] receives one [Event] per trim with the numbers of the Result
// (tokens before and after, turns and messages dropped) and the caller's
// [WithLabels] attribution; Event implements [slog.LogValuer], and
// [LogTrims] logs events to a [slog.Logger].
//
// # Budgets and counting
//
// A budget is a number of input tokens; [Budget] derives it from a model's
// window, the reply's reserve and an operator cap. Tokens are counted by a
// [Counter], at most once per message per trim, newest first: a trim stops
// counting as soon as it knows what to keep, so it costs what it keeps, not
// what it drops ([Result.TokensBefore] is then -1; [WithFullCount] counts
// everything). The default Counter is [Heuristic](), which needs no
// vocabulary; [WithCounter] sets another. The
// [github.com/histrim/history/tiktoken] package counts exactly, offline;
// [NewCache] memoizes any Counter so that a runtime trimming before every
// request only counts new messages. Providers count differently from any
// local Counter: a [Calibration], fed the usage of every response and passed
// with [WithCalibration], makes trims aim at the budget the provider counts.
//
// # Options and errors
//
// Every entry point takes [Option] values. An Option is an immutable value:
// one built once may be shared by any number of goroutines and calls. Its
// value is checked when the call that uses it starts: a value out of its
// domain (a [WithLowWater] fraction outside (0, 1), a [WithBreadcrumb]
// notice that is not a valid message) makes the call return an
// *[OptionError] wrapping [ErrInvalidOption] before it does anything else.
//
// Errors are sentinel values ([ErrInvalidBudget], [ErrInvalidMessage],
// [ErrInvalidOption], [ErrLatestTurnTooLarge], ...) wrapped by typed errors
// carrying detail (*[MessageError], *[BudgetError], *[OptionError]), for
// [errors.Is] and [errors.As]. Messages are lowercase and start with
// "history:". No function panics on caller data.
//
// # Purity
//
// No function in this package modifies its input: not the slice, not the
// messages, not their Parts or ToolCalls. Output depends only on input and
// options (no clock, no randomness, no global state), and every function is
// safe for concurrent use as long as the caller's Counter and callbacks are.
//
// See the docs folder of the repository for the concepts, the measurements
// and the recovery from provider overflow errors.
package history
