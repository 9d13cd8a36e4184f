// This file owns WithTask, the goal-keeping preset, and its defaults.

package history

// DefaultDigest is the digest size, in tokens, that [WithTask] gives
// elided results when [ElideOptions.Digest] is 0.
const DefaultDigest = 200

// taskClearArguments is WithTask's ClearArguments when the caller's is 0.
const taskClearArguments = 32

// WithTask is the recommended policy for an agent working on a long task,
// in one option: what it keeps is what the agent goes on to use, and
// every request fits when the prefix and the user's request do. goal is
// the index of the task's opening request in the history being trimmed
// (the runtime knows which message started the task it is working on),
// or -1 when there is none to pin: then only [WithPin]'s pins are pinned,
// and the latest request is kept as every latest turn is (a task that is
// the latest request needs no goal). It sets:
//
//   - [WithTurnStart]([UserWritten]): messages the runtime injects in the
//     user role (system reminders, task notifications, interrupt markers,
//     tool-output echoes) do not open turns, so the latest turn is the
//     user's request, not a notification;
//   - [WithElision](elide), with [ElideOptions.Cut] on, a digest of
//     [DefaultDigest] tokens when elide.Digest is 0 (negative: the bare
//     placeholders), and the arguments of calls from 32 tokens cleared
//     when elide.ClearArguments is 0 (negative: none): superseded results
//     are elided first, then the arguments of old calls on their own, then
//     the results that show nothing a later message mentions, then the
//     oldest, each keeping a digest of what is most likely to be used
//     again (old call arguments, a file the agent wrote, go with them),
//     the last one elided is cut to fill the room left, and as a last rung
//     the largest results still sent are cut to a head and tail digest;
//   - [WithStepTrim]: the oldest steps of a long task go before the trim
//     gives up; where a trim aims below its budget ([WithLowWater],
//     [WithTrigger]: a [Trimmer]'s maintenance point), those whose results
//     show nothing a later message of the history mentions go first;
//   - the goal pinned, in addition to [WithPin]'s pins: users complain
//     that agents lose the task after compaction, and a pinned goal is
//     never dropped (it is lifted after the breadcrumb when its turn
//     goes). A goal that names no message, a tool result or a message
//     with tool calls makes the trim return an *[OptionError], as
//     WithPin's would; carry it over with [Result.Positions] when the
//     output is trimmed again, like a pin.
//
// Options given after it override what it sets (a later [WithElision]
// replaces its elision options whole). See docs/degradation.md for what
// it keeps, measured on the shared corpus.
func WithTask(goal int, elide ElideOptions) Option {
	if elide.Digest == 0 {
		elide.Digest = DefaultDigest
	}
	switch {
	case elide.ClearArguments == 0:
		elide.ClearArguments = taskClearArguments
	case elide.ClearArguments < 0:
		elide.ClearArguments = 0
	}
	elide.Cut = true
	el := WithElision(elide)
	return func(o *options) {
		o.turnStart = UserWritten
		el(o)
		o.stepTrim = true
		o.byMention = true
		o.goal, o.goalSet = goal, true
	}
}
