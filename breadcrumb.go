// This file owns the omission notices: the default turn and step
// breadcrumbs and InsertBreadcrumb.

package history

// BreadcrumbText is the content of the default breadcrumb, [Breadcrumb].
const BreadcrumbText = "[earlier turns omitted to fit the context window]"

// StepBreadcrumbText is the content of the breadcrumb that marks steps
// dropped inside the latest turn (see [WithStepTrim]).
const StepBreadcrumbText = "[earlier steps of this task omitted to fit the context window]"

// Breadcrumb returns the default omission notice: a [RoleUser] message of
// [KindBreadcrumb] with [BreadcrumbText] as its content. [TrimToRecentTurns]
// inserts it after the prefix whenever it drops turns, so the model knows
// the conversation did not start where its context does; [WithBreadcrumb]
// replaces it and [WithoutBreadcrumb] turns it off.
func Breadcrumb() Message {
	return Message{Role: RoleUser, Content: BreadcrumbText, Kind: KindBreadcrumb}
}

// InsertBreadcrumb returns a copy of msgs with b placed after the prefix
// (the leading system messages and pinned summaries), replacing every
// breadcrumb already in that leading block, so breadcrumbs never stack. b's
// Kind is forced to [KindBreadcrumb]. Breadcrumbs elsewhere in msgs are left
// alone. The result is a new slice; its messages are shallow copies, as in a
// [Result]. b is not validated.
func InsertBreadcrumb(msgs []Message, b Message) []Message {
	b.Kind = KindBreadcrumb
	lead := leadEnd(msgs)
	out := make([]Message, 0, len(msgs)+1)
	for i := range lead {
		if msgs[i].Kind != KindBreadcrumb {
			out = append(out, msgs[i])
		}
	}
	out = append(out, b)
	return append(out, msgs[lead:]...)
}
