// Package regroup maps a trim decision back onto native messages that the
// SDK adapters split into several history messages. An adapter converts
// each native message (a Gemini content, a langchaingo message, an
// Anthropic message) to one or more history messages and records a Slot for
// each; after the trim, Groups says, for each position of the output,
// whether it is a notice the core inserted or a native message, and in the
// latter case whether the message is kept whole or which of its parts the
// core removed (tool calls the orphan sweep stripped) or replaced (tool
// results history.WithElision elided, call arguments
// history.ElideOptions.ClearArguments cleared). Apply walks the groups and builds the
// native output; KeptParts picks a cut-down message's parts. OneForOne is
// the same mapping for adapters that convert each native message to one
// history message (openai, eino). The adapter
// keeps only what is specific to its SDK: rendering a notice and building
// a native message from its kept parts.
//
// Parts are whatever an adapter indexes inside a native message: Gemini
// parts, langchaingo content parts, Anthropic content blocks.
package regroup

import (
	"slices"
	"sync"

	"github.com/histrim/history"
)

// Slot records where one converted history message came from.
type Slot struct {
	// Native is the index of the native message in the caller's slice. A
	// negative Native stands for no native message (a system prompt the
	// caller passes separately): Groups leaves such messages out.
	Native int
	// Parts are the indices of the native message's parts the history
	// message stands for, in order. nil stands for every part; an empty,
	// non-nil slice for none (a message that maps to no part).
	Parts []int
	// Calls holds the part index of each of the history message's
	// ToolCalls, in order; nil when it has none.
	Calls []int
}

// Group is one position of the output of Groups: a notice the core
// inserted, or one native message as the trim kept it. The zero value
// stands for native message 0 with no part kept.
type Group struct {
	// Native is the index of the native message; -1 for a notice.
	Native int
	// Notice is the notice, the Result.Messages entry the core inserted,
	// when Native is -1; the zero Message otherwise.
	Notice history.Message
	// Slots are the slots of the native message's kept history messages,
	// in order: a clipped window onto an array all groups share, which the
	// caller must not modify.
	Slots []Slot
	// Whole reports that every history message of the native message was
	// kept unchanged (no call stripped, no result elided, no argument
	// cleared): the caller's original stands for it.
	Whole bool
	// Drop holds the parts of the tool calls the orphan sweep stripped;
	// nil when none was.
	Drop map[int]bool
	// Elided maps the part of each tool result the core elided to its
	// placeholder text; nil when none was.
	Elided map[int]string
	// Args maps the part of each tool call whose arguments the core
	// cleared (history.ElideOptions.ClearArguments) to its new arguments,
	// a JSON object; nil when none was.
	Args map[int]string
}

// Keep returns, for a native message of n parts, which parts a cut-down
// copy keeps: those the kept slots stand for, minus Drop. It is meaningful
// for a native group (Native >= 0); a part index outside [0, n) in a slot
// panics, like an index expression.
func (g *Group) Keep(n int) []bool {
	keep := make([]bool, n)
	for _, s := range g.Slots {
		if s.Parts == nil {
			for p := range keep {
				keep[p] = !g.Drop[p]
			}
			continue
		}
		for _, p := range s.Parts {
			keep[p] = !g.Drop[p]
		}
	}
	return keep
}

// Groups maps res back onto the native messages. conv are the converted
// history messages res was computed from (res.Kept indexes them), and
// slots[i] says where conv[i] came from; slots of one native message are
// consecutive. Each group is either a notice (res.Kept holds -1 at its
// position) or the run of consecutive kept history messages that came from
// one native message, in output order; kept messages of slots with a
// negative Native are left out. When res.Kept is nil every message is kept
// as it is.
//
// Groups never modifies its arguments. It panics, like an index
// expression, if res.Kept names an index outside slots or conv, or if an
// elided message's slot has no Parts.
func Groups(res history.Result, conv []history.Message, slots []Slot) []Group {
	return appendGroups(nil, res, conv, slots)
}

// appendGroups is Groups appending to out.
func appendGroups(out []Group, res history.Result, conv []history.Message, slots []Slot) []Group {
	n := 0
	for _, s := range slots {
		n = max(n, s.Native+1)
	}
	count := make([]int, n) // history messages per native message
	for _, s := range slots {
		if s.Native >= 0 {
			count[s.Native]++
		}
	}
	sel := history.Apply(slots, res, func() Slot { return Slot{Native: -1} })
	out = slices.Grow(out, len(sel))
	for j := 0; j < len(sel); {
		if res.Kept != nil && res.Kept[j] < 0 {
			out = append(out, Group{Native: -1, Notice: res.Messages[j]})
			j++
			continue
		}
		s := sel[j]
		if s.Native < 0 {
			j++
			continue
		}
		end := j + 1
		for end < len(sel) && sel[end].Native == s.Native { // a notice's slot has Native -1
			end++
		}
		g := Group{Native: s.Native, Slots: sel[j:end:end], Whole: end-j == count[s.Native]}
		for p := j; p < end; p++ {
			m := &res.Messages[p]
			if m.Kind == history.KindElided {
				g.Whole = false
				if g.Elided == nil {
					g.Elided = make(map[int]string)
				}
				g.Elided[sel[p].Parts[0]] = m.Content
			}
			k := p
			if res.Kept != nil {
				k = res.Kept[p]
			}
			orig, now := conv[k].ToolCalls, m.ToolCalls
			if slices.Equal(now, orig) {
				continue
			}
			g.Whole = false
			left := make(map[string]string, len(now)) // arguments by call ID
			for _, c := range now {
				left[c.ID] = c.Arguments
			}
			for c := range orig {
				args, ok := left[orig[c].ID]
				switch {
				case !ok:
					if g.Drop == nil {
						g.Drop = make(map[int]bool)
					}
					g.Drop[sel[p].Calls[c]] = true
				case args != orig[c].Arguments:
					if g.Args == nil {
						g.Args = make(map[int]string)
					}
					g.Args[sel[p].Calls[c]] = args
				}
			}
		}
		out = append(out, g)
		j = end
	}
	return out
}

// Unchanged reports whether res leaves conv, the converted history it was
// computed from, as it is, so that an adapter can return the caller's
// messages themselves: res.Kept is nil, or it keeps every message of conv
// in order and the core changed none of them (no tool call stripped or
// its arguments cleared, no result elided, no kind or content changed).
// Both forms of "nothing to do" are accepted: a nil Kept and an identity
// Kept.
func Unchanged(res history.Result, conv []history.Message) bool {
	if res.Kept == nil {
		return true
	}
	if len(res.Kept) != len(conv) || len(res.Messages) != len(conv) {
		return false
	}
	for i, k := range res.Kept {
		m, c := &res.Messages[i], &conv[i]
		if k != i || m.Kind != c.Kind || m.Content != c.Content || !slices.Equal(m.ToolCalls, c.ToolCalls) {
			return false
		}
	}
	return true
}

// Apply maps res back onto native, the caller's messages that conv (with
// slots saying where each came from) was converted from: native itself,
// clipped to its length, when res leaves conv unchanged (see Unchanged);
// otherwise, for each group of Groups in order, notice(b, next) for a
// notice b the core inserted (next is the group that follows it, nil at
// the end), the caller's message for a whole one, and cut(orig, g) for one
// the trim cut down or elided in, left out when cut reports false (no part
// left). from gives, for each message of the output, the index in native
// of the message it is or was cut from, -1 for a notice. Apply never
// modifies its arguments; notice and cut must not modify theirs either,
// nor keep the *Group they are given past their call.
func Apply[N any](native []N, conv []history.Message, slots []Slot, res history.Result,
	notice func(b history.Message, next *Group) N, cut func(orig N, g *Group) (N, bool)) (out []N, from []int) {
	if Unchanged(res, conv) {
		return native[:len(native):len(native)], identity(len(native))
	}
	// The groups are done with when Apply returns (notice and cut keep
	// none of them): their array goes to the next call.
	groups := Borrowed(res, conv, slots)
	defer Return(groups)
	out = make([]N, 0, len(groups))
	from = make([]int, 0, len(groups))
	for j := range groups {
		g := &groups[j]
		switch {
		case g.Native < 0:
			var next *Group
			if j+1 < len(groups) {
				next = &groups[j+1]
			}
			out = append(out, notice(g.Notice, next))
		case g.Whole:
			out = append(out, native[g.Native])
		default:
			m, ok := cut(native[g.Native], g)
			if !ok {
				continue
			}
			out = append(out, m)
		}
		from = append(from, g.Native)
	}
	return out, from
}

// Borrowed is Groups built in an array that an earlier call gave back
// with Return, when one is there: a request of 100k tokens through the
// wire maps back some 800 groups, hundreds of bytes each, for the time of
// one call. The caller gives the groups back with Return once it reads
// none of them (nor any *Group into them) any more.
func Borrowed(res history.Result, conv []history.Message, slots []Slot) []Group {
	var out []Group
	if p, _ := groupArrays.Get().(*[]Group); p != nil {
		out = (*p)[:0]
	}
	return appendGroups(out, res, conv, slots)
}

// Return gives groups, from Borrowed and no longer read, to a later
// Borrowed, emptied (so that the array keeps no message's memory alive).
func Return(groups []Group) {
	if cap(groups) == 0 || cap(groups) > maxGroupArray {
		return
	}
	clear(groups)
	groups = groups[:0]
	groupArrays.Put(&groups)
}

// groupArrays holds the arrays Return was given (*[]Group), each of at
// most maxGroupArray groups (the bound of Arrays too).
var groupArrays sync.Pool

const maxGroupArray = 1 << 16

// Arrays are the arrays a conversion builds its history messages and
// their slots in, kept from one conversion to the next by a caller that
// reads neither once the decision is mapped back (the wire, whose output
// is bytes): at 100k tokens, a fifth of what a request allocated.
type Arrays struct {
	hist  []history.Message
	slots []Slot
}

// TakeArrays returns the arrays a conversion gave back (Give), or none.
func TakeArrays() *Arrays {
	if a, _ := conversionArrays.Get().(*Arrays); a != nil {
		return a
	}
	return new(Arrays)
}

// Make returns a's arrays, empty, of at least hist messages and slots
// slots: new ones where a's are smaller (a nil a has none; a minimum of 0
// with none gives nil).
func (a *Arrays) Make(hist, slots int) ([]history.Message, []Slot) {
	var h []history.Message
	var s []Slot
	if a != nil {
		h, s = a.hist[:0], a.slots[:0]
	}
	if cap(h) < hist {
		h = make([]history.Message, 0, hist)
	}
	if cap(s) < slots {
		s = make([]Slot, 0, slots)
	}
	return h, s
}

// Give keeps hist and slots, a conversion's (in a's arrays or grown past
// them) that nothing reads any more, emptied (so that they keep no
// message's memory alive), in a, and gives a to a later TakeArrays.
// Arrays of more than maxGroupArray elements are left to the collector.
func (a *Arrays) Give(hist []history.Message, slots []Slot) {
	if cap(hist) > maxGroupArray || cap(slots) > maxGroupArray {
		return
	}
	clear(hist[:cap(hist)])
	clear(slots[:cap(slots)])
	a.hist, a.slots = hist[:0], slots[:0]
	conversionArrays.Put(a)
}

// conversionArrays holds the Arrays given back (Give).
var conversionArrays sync.Pool

// identity returns 0, 1, ..., n-1.
func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// KeptParts returns the parts of a native message that g keeps (see
// Keep), in their original order, each tool result g elided replaced by
// elide(part, placeholder); nil when none is left. parts is not modified.
// Calls whose arguments g.Args clears are returned as they are: the
// adapter replaces their arguments (see WithArgs).
func KeptParts[P any](g *Group, parts []P, elide func(part P, placeholder string) P) []P {
	var out []P
	for p, ok := range g.Keep(len(parts)) {
		if !ok {
			continue
		}
		if text, ok := g.Elided[p]; ok {
			out = append(out, elide(parts[p], text))
			continue
		}
		out = append(out, parts[p])
	}
	return out
}

// WithArgs returns parts with the arguments of each call g.Args names
// replaced by args(part, arguments), in a new slice; parts itself when g
// clears none. parts is not modified. An adapter calls it before KeptParts.
func WithArgs[P any](g *Group, parts []P, args func(part P, arguments string) P) []P {
	if len(g.Args) == 0 {
		return parts
	}
	out := slices.Clone(parts)
	for p, a := range g.Args {
		out[p] = args(out[p], a)
	}
	return out
}

// OneForOne is Apply for an adapter that converts each native message to
// exactly one history message, so that res.Kept indexes native itself and
// needs no slots: native itself, clipped to its length, when res leaves
// conv unchanged (see Unchanged); otherwise, for each entry of res.Kept,
// notice(b) for a notice b the core inserted there (its own entry of
// res.Messages: a trim may insert two, one for dropped turns and one for
// dropped steps), elide(orig, m) for a result the core elided to m (one
// already elided in conv is kept as it is), calls(orig, m) for a message
// whose tool calls the core changed (m holds those left by the orphan
// sweep, by ID, each with the arguments to send: the caller's, or those
// history.ElideOptions.ClearArguments cleared), and the caller's message
// otherwise. from is as for Apply: res.Kept itself. OneForOne never
// modifies its arguments; notice, elide and calls must not modify theirs
// either.
func OneForOne[N any](native []N, conv []history.Message, res history.Result,
	notice func(b history.Message) N, elide, calls func(orig N, m *history.Message) N) (out []N, from []int) {
	if Unchanged(res, conv) {
		return native[:len(native):len(native)], identity(len(native))
	}
	out = make([]N, len(res.Kept))
	for j, k := range res.Kept {
		m := &res.Messages[j]
		switch {
		case k < 0:
			out[j] = notice(*m)
		case m.Kind == history.KindElided && conv[k].Kind != history.KindElided:
			out[j] = elide(native[k], m)
		case !slices.Equal(m.ToolCalls, conv[k].ToolCalls):
			out[j] = calls(native[k], m)
		default:
			out[j] = native[k]
		}
	}
	return out, res.Kept
}
