package adapt

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/notice"
	"github.com/histrim/history/internal/regroup"
)

// Each is the conversion of an adapter whose native messages convert one
// for one (openai, goopenai): from it come the conversion with the
// notices recognised, its Codec, and the pairing row of its rules table.
// Each field is set.
type Each[N any] struct {
	// Name and Noun are the Codec's.
	Name, Noun string
	// To converts one native message, or says why it does not convert.
	To func(u *N) (history.Message, error)
	// Notice renders a notice the core inserted as a native message.
	Notice func(b history.Message) N
	// Elide and Calls rebuild a message the core changed (see
	// regroup.OneForOne).
	Elide, Calls func(orig N, m *history.Message) N
}

// Convert converts msgs, one history.Message each, marking as
// history.KindBreadcrumb the notices a trim with opts inserted (see
// notice.Mark). A message that does not convert is a *MessageError.
func (e *Each[N]) Convert(msgs []N, opts []history.Option) ([]history.Message, error) {
	out := make([]history.Message, len(msgs))
	for i := range msgs {
		m, err := e.To(&msgs[i])
		if err != nil {
			return nil, e.Invalid(i, err)
		}
		out[i] = m
	}
	notice.Mark(out, opts, e.read, nil)
	return out, nil
}

// read returns the notice b as Convert reads it once rendered natively.
func (e *Each[N]) read(b history.Message) []history.Message {
	u := e.Notice(b)
	m, _ := e.To(&u) // a rendered notice always converts
	return []history.Message{m}
}

// Invalid is the *MessageError for native message i, which does not
// convert for the reason err gives.
func (e *Each[N]) Invalid(i int, err error) error {
	return Invalid(e.Name, e.Noun, nil, i, err.Error())
}

// Codec returns the Codec of the adapter: Convert, mapped back with
// OneForOne.
func (e *Each[N]) Codec() *Codec[struct{}, N] {
	return &Codec[struct{}, N]{Name: e.Name, Noun: e.Noun,
		Convert: func(_ struct{}, msgs []N, opts []history.Option) (*View[N], error) {
			hist, err := e.Convert(msgs, opts)
			if err != nil {
				return nil, err
			}
			return OneForOne(msgs, hist, e.Notice, e.Elide, e.Calls), nil
		}}
}

// Pairing is the row of the pairing rule in the adapter's rules table,
// its violations wrapping sentinel (see PairingRule).
func (e *Each[N]) Pairing(sentinel error) Rule[N] {
	return PairingRule(e.Name, e.Noun, sentinel, func(msgs []N, i int) (bool, []string, error) {
		m, err := e.To(&msgs[i])
		if err != nil {
			return true, nil, e.Invalid(i, err)
		}
		results, ids := Calls(&m)
		return results, ids, nil
	})
}

// ByRole returns the native role of a notice of role r: system for
// history.RoleSystem, assistant for history.RoleAssistant, user for any
// other.
func ByRole[T any](r history.Role, system, user, assistant T) T {
	switch r {
	case history.RoleSystem:
		return system
	case history.RoleAssistant:
		return assistant
	}
	return user
}

// KeepCalls returns the tool calls of a native message that the core kept
// as m: those whose id (id of the call) m still holds, in their order,
// each given m's arguments by args (which sets them on the copy it gets,
// and may leave arguments that are already equal as they are); nil when
// none is left. calls is not written to.
func KeepCalls[C any](calls []C, m *history.Message, id func(c *C) string, args func(c *C, arguments string)) []C {
	out := make([]C, 0, len(m.ToolCalls))
	for _, c := range calls {
		for k := range m.ToolCalls {
			if m.ToolCalls[k].ID == id(&c) {
				args(&c, m.ToolCalls[k].Arguments) // c is a copy: the caller's call is untouched
				out = append(out, c)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Marked is the conversion of an adapter whose native messages convert to
// several history messages: conv(msgs), with the notices a trim with opts
// inserted marked (notice.Mark), a notice reading as conv reads
// render(b). single, when set, limits the candidates to the messages
// converted from a native message it accepts (one holding a single part).
func Marked[N any](msgs []N, opts []history.Option, conv func([]N) ([]history.Message, []regroup.Slot, error),
	render func(b history.Message) N, single func(n N) bool) ([]history.Message, []regroup.Slot, error) {
	out, slots, err := conv(msgs)
	if err != nil {
		return nil, nil, err
	}
	read := func(b history.Message) []history.Message {
		m, _, _ := conv([]N{render(b)}) // a rendered notice always converts
		return m
	}
	var eligible func(i int) bool
	if single != nil {
		eligible = func(i int) bool { return single(msgs[slots[i].Native]) }
	}
	notice.Mark(out, opts, read, eligible)
	return out, slots, nil
}

// WithNudge completes the conversion of native tool message i, out and
// slots holding one message per result: the nudge, a user message of
// history.KindNudge holding the message's other parts (at indices other),
// is appended when there are any, or when there is no result, so that
// every native message converts to one message at least.
func WithNudge(out []history.Message, slots []regroup.Slot, i int, other []int, nudge history.Message) ([]history.Message, []regroup.Slot) {
	if len(other) > 0 || len(out) == 0 {
		out = append(out, nudge)
		slots = append(slots, regroup.Slot{Native: i, Parts: other})
	}
	return out, slots
}
