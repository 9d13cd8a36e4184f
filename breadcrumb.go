package history

// BreadcrumbText is the content of the default breadcrumb.
const BreadcrumbText = "[earlier turns omitted to fit the context window]"

// Breadcrumb returns the default omission notice: a RoleUser message of
// KindBreadcrumb with BreadcrumbText as its content. TrimToRecentTurns
// inserts it after the prefix whenever it drops turns, so the model knows
// the conversation did not start where its context does.
func Breadcrumb() Message {
	return Message{Role: RoleUser, Content: BreadcrumbText, Kind: KindBreadcrumb}
}

// InsertBreadcrumb returns a copy of msgs with b placed after the prefix
// (the leading system messages and pinned summaries), replacing every
// breadcrumb already in that leading block, so breadcrumbs never stack. b's
// Kind is forced to KindBreadcrumb. Breadcrumbs elsewhere in msgs are left
// alone. The result never shares memory with msgs.
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

// checkBreadcrumb validates a breadcrumb given through WithBreadcrumb: it
// must be a plain user, system or assistant message, never part of a tool
// exchange.
func checkBreadcrumb(b Message) error {
	switch {
	case b.Role != RoleUser && b.Role != RoleSystem && b.Role != RoleAssistant:
		return &MessageError{Index: -1, Reason: "breadcrumb role must be user, system or assistant, not " + quote(string(b.Role))}
	case len(b.ToolCalls) > 0:
		return &MessageError{Index: -1, Reason: "breadcrumb must not carry tool calls"}
	case b.ToolCallID != "":
		return &MessageError{Index: -1, Reason: "breadcrumb must not carry a tool call id"}
	}
	return nil
}

// Breadcrumbs returns the notices a trim with opts would insert: turn after
// the prefix when turns are dropped (WithBreadcrumb, or Breadcrumb()), and
// step after the latest turn's opening message when steps are dropped
// (WithStepBreadcrumb, or StepBreadcrumbText in the turn notice's role).
// enabled is false under WithoutBreadcrumb. Adapters use it to recognise,
// in a native history they trimmed before, the notices they inserted, so
// that the next trim replaces them instead of keeping them as turns.
func Breadcrumbs(opts ...Option) (turn, step Message, enabled bool) {
	o := newOptions(opts)
	defer o.release()
	return o.breadcrumb, o.stepBreadcrumb(), !o.noBreadcrumb
}
