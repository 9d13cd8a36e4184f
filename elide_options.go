// This file owns the settings of elision: ElideOptions, the per-tool
// policies, their defaults and their validation.

package history

import "strconv"

// Elision defaults, used where an [ElideOptions] field is zero.
const (
	// DefaultKeepRecent is how many of the newest tool results are never
	// elided when [ElideOptions.KeepRecent] is 0.
	DefaultKeepRecent = 3
	// DefaultMinTokens is the smallest result elided when
	// [ElideOptions.MinTokens] is 0.
	DefaultMinTokens = 256
)

// ElideOptions configures tool-result elision, by [ElideToolResults] or by a
// trim under [WithElision]. The zero value works: it elides every tool
// result of at least 256 tokens except the 3 newest, with the default
// placeholder and the call's counter ([Heuristic] for ElideToolResults).
type ElideOptions struct {
	// KeepRecent is how many of the newest tool results, counted across
	// turns, are never elided. 0 means [DefaultKeepRecent] (3); a negative
	// value protects none.
	KeepRecent int
	// MinTokens is the smallest result (by Counter, framing included) that
	// is elided; smaller ones are cheap to keep. 0 means [DefaultMinTokens]
	// (256); a negative value elides any size.
	MinTokens int
	// ExcludeTools names tools whose results are never elided. The tool
	// name is the result's [Message.Name], or else the [ToolCall.Name] of the
	// call it answers. The slice is read, never modified; [WithElision]
	// copies it.
	ExcludeTools []string
	// KeepErrors keeps results that look like errors (their first line
	// mentions an error, exception, traceback, panic or failure): the model
	// usually needs them to avoid repeating a mistake.
	KeepErrors bool
	// Placeholder returns the text that replaces a result, given the
	// original message and its token count. nil means the default,
	// "[elided tool result: <name>, N tokens; re-run the tool if needed]",
	// or with a Store "[elided tool result <handle>: <name>, N tokens; call
	// recall_tool_result with id <handle> to read it]".
	// A result is elided only when its placeholder costs fewer tokens.
	Placeholder func(m Message, tokens int) string
	// Archive, if set, is called with each original result, oldest first,
	// before anything is replaced, and only for results that are elided.
	// If it returns an error, elision stops and nothing is changed: the
	// error is returned, wrapped. It must not modify the message.
	Archive func(m Message) error
	// Store, if set, keeps each elided result's original under a handle
	// ([ElisionHandle]) before it is replaced, like Archive (after it, and
	// with the same abort on error), and the default placeholder names the
	// handle and the recall tool, so that the model can get the result back
	// ([Recall], [RecallToolName]). A custom Placeholder should name
	// ElisionHandle(m) too.
	Store Store
	// ClearArguments, when positive, makes eliding a tool result also
	// clear the arguments of the call it answers, when they cost at least
	// this many tokens; and it clears such arguments on their own when the
	// result is too short to elide (a large write_file call answered
	// "wrote 40 lines"), the result then sent as it is. Results of the
	// tools ExcludeTools names keep their calls' arguments, and so do the
	// KeepRecent newest results. The call's Arguments become the JSON object
	// {"elided":"[arguments elided: N tokens]"}, valid JSON so that
	// adapters can still send it as an input object, and its ID and Name
	// stay, so pairing is untouched. The assistant message is then a
	// changed copy (listed in [Result.Modified], its Kind unchanged). The
	// arguments are measured as text with Counter (below): the count of an
	// assistant message holding only them as its Content, less that of an
	// empty one ([EstimateText] of them for [Heuristic]); N is that
	// measure. Arguments are cleared only when the replacement costs fewer
	// tokens, never twice (arguments already in that form are left as
	// they are), and never in an assistant message that holds a
	// [PartReasoning] part: providers sign reasoning together with the
	// calls that follow it (Anthropic thinking signatures, Gemini thought
	// signatures on function calls, Responses reasoning items), so such a
	// message is sent exactly as it was. The originals are not archived:
	// the caller's transcript still holds them ([Result.Kept] names it).
	// 0, the default, never changes a call; a negative value is invalid
	// (an *[OptionError]).
	ClearArguments int
	// Counter measures results for these rules (MinTokens, ClearArguments,
	// and the counts in the default placeholders); nil means the counter
	// of the call: [Heuristic] for [ElideToolResults], the trim's
	// [Counter] under [WithElision]. The budget itself is always measured
	// with the trim's Counter, and so are digests (they are paid from
	// it).
	Counter Counter
	// Digest, when positive, makes each elided result keep a digest after
	// its placeholder, so that what the agent is most likely to use again
	// stays in view: the target of its call (the path it read, the
	// command it ran), its first and last lines, and the lines that
	// report errors, define things or carry identifiers, paths and ids
	// not seen earlier in the result (first those that later messages of
	// the history went on to mention, in their text or their calls'
	// arguments; no credit for those a later tool result shows again), in
	// their order, with the gaps marked ("[… 12 lines …]"; a line longer
	// than 160 bytes is shown in pieces). The digest costs at most Digest
	// tokens, and at most half of what eliding the result saves, as the
	// budget's Counter counts the elided result (the trim's, or Counter
	// for [ElideToolResults]). It is a function of the result, its call,
	// these options and the messages after it, so the same history always
	// gives the same digest; a [Trimmer] keeps it until its next
	// maintenance point, where later mentions may change it. It counts
	// against the budget. A custom Placeholder
	// is followed by the digest too, after a newline. A trim builds
	// digests only for the results it elides. 0 or less: no digest, the
	// placeholder alone.
	Digest int
	// Tools sets rules per tool, by name (the result's [Message.Name], or
	// the [ToolCall.Name] of the call it answers; the first rule naming a
	// tool applies). The slice is read, never modified; [WithElision]
	// copies it.
	Tools []ToolPolicy
	// Cut adds a last rung to a trim under [WithElision], below step
	// trimming: when the history still does not fit the budget (the
	// budget itself: not a trigger or low-water mark) once every eligible
	// result is elided, and every turn and step that may go is gone, the
	// largest tool results still sent (the newest step's too, and those
	// KeepRecent, MinTokens, ExcludeTools, KeepErrors or a [ToolPolicy]
	// keep from elision) are cut, down to a common size, to a head and
	// tail digest (see Digest) that fits; and when cutting every result
	// to its marker is not enough, the arguments of the calls still sent
	// are cleared, largest first, as ClearArguments clears them (never in
	// a message that holds reasoning). The text that replaces a cut
	// result starts with "[cut tool result", names the tool and the
	// tokens it had, and says how to get the rest (with a Store, the
	// recall tool and the handle); the original goes to Archive and
	// Store first, as an elided result's does, and the copy carries
	// [KindElided], so no later trim cuts or elides it again. Nothing but
	// tool results and calls' arguments is cut: not the user's request, a
	// pinned message, a summary, an assistant's text, reasoning or
	// thinking. So a request fails with [ErrLatestTurnTooLarge] only when
	// those, with the notices and markers, exceed the budget. With Cut,
	// the last result a trim elides to reach its target is cut instead,
	// to a digest that fills the room left. [ElideToolResults] ignores
	// Cut.
	Cut bool
}

// ToolPolicy is how elision treats the results of one tool (see
// [ElideOptions.Tools]). The zero value, with a Name, changes nothing.
type ToolPolicy struct {
	// Name is the tool's name.
	Name string
	// Keep: its results are never elided, as if ExcludeTools named the
	// tool (a todo list, a plan the agent keeps current). The cut rung
	// ([ElideOptions.Cut]) may still cut one that alone does not fit.
	Keep bool
	// First: its results are elided before the others (but after the
	// superseded reads of a file), oldest first: results that are cheap
	// to get again and rarely used twice, such as a search or a listing.
	First bool
	// Digest replaces [ElideOptions.Digest] for its results: 0 keeps
	// ElideOptions.Digest, a negative value means no digest.
	Digest int
}

// tool returns the policy of the tool named name (zero when none).
func (opts *ElideOptions) tool(name string) ToolPolicy {
	for _, t := range opts.Tools {
		if t.Name == name {
			return t
		}
	}
	return ToolPolicy{}
}

// digestSize returns the digest size for the results of a tool under
// policy tp: 0 for none.
func (opts *ElideOptions) digestSize(tp ToolPolicy) int {
	d := opts.Digest
	if tp.Digest != 0 {
		d = tp.Digest
	}
	return max(d, 0)
}

// check returns the *OptionError for options that are invalid, naming
// option ("WithElision", "ElideOptions"), or nil.
func (opts *ElideOptions) check(option string) error {
	if opts.ClearArguments < 0 {
		return &OptionError{Option: option, Reason: "ClearArguments " + strconv.Itoa(opts.ClearArguments) + " is negative"}
	}
	return nil
}
