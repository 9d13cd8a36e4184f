// Package history fits an LLM conversation into a token budget without
// breaking it. Agent runtimes call it before every provider request, and
// again when a provider rejects a request as too long.
//
// # Turns
//
// A conversation is a prefix followed by turns. The prefix is the leading
// run of system messages and pinned summaries (KindSummary), plus any
// breadcrumb the library left there earlier. A turn runs from one real user
// message (RoleUser, no Kind) up to the next; everything an agent does in
// answer (assistant messages, tool calls, tool results, runtime nudges)
// belongs to that turn. Messages between the prefix and the first user
// message belong to the first turn. Turns returns the index ranges, and
// WithTurnStart changes the rule for runtimes that send tool results as user
// text.
//
// # Trimming
//
// TrimToRecentTurns keeps the prefix and the longest run of most recent
// whole turns that fits the budget, and drops the rest, oldest first. Because
// turns are dropped whole, a tool call and its result are never separated.
// The latest turn is always kept: when even the prefix and the latest turn do
// not fit, the Result holds them and the error wraps ErrLatestTurnTooLarge,
// so the caller never receives an empty or broken history.
//
// # Pairing
//
// Providers reject histories in which a tool result has no call, or a call
// has no result. The orphan sweep (SweepOrphans, on by default in every trim)
// removes such results and strips such calls before turns are chosen. Pairing
// is positional: a result answers a call of the nearest preceding assistant
// message, so tool-call IDs reused by later exchanges are handled.
//
// # Breadcrumbs and events
//
// When turns are dropped, one breadcrumb message (KindBreadcrumb) tells the
// model that earlier turns were omitted. It sits right after the prefix, its
// tokens count toward the budget, and a later trim replaces it instead of
// stacking a second one. The caller is told too: WithOnTrim receives one
// Event per trim with the numbers of the Result (tokens before and after,
// turns and messages dropped) and the caller's WithLabels attribution; Event
// implements slog.LogValuer, and LogTrims logs events to a slog.Logger.
// Result.Dropped returns every removed message for archiving.
//
// # Budgets and counting
//
// A budget is a number of input tokens; Budget derives it from a model's
// window, the reply's reserve and an operator cap. Tokens are counted by a
// Counter, once per message per trim, then summed with prefix sums, so a trim
// is linear in the length of the history. Heuristic, the default, needs no
// vocabulary; the tiktoken subpackage counts exactly, offline; NewCache
// memoizes any Counter so that a runtime trimming before every request only
// counts new messages.
//
// # Purity
//
// No function in this package modifies its input: not the slice, not the
// messages, not their Parts or ToolCalls. Results are new slices (a history
// returned unchanged is the caller's slice clipped to its length, so an
// append cannot write into the caller's array). Output depends only on input
// and options, and every function is safe for concurrent use. Errors are
// sentinel values (ErrInvalidBudget, ErrInvalidMessage,
// ErrLatestTurnTooLarge, ...) wrapped by typed errors carrying detail
// (*MessageError, *BudgetError), for errors.Is and errors.As.
//
// See the docs folder of the repository for the concepts, the measurements
// and the recovery from provider overflow errors.
package history
