package regroup

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/histrim/history"
)

// The converted history of five native messages used by the table below:
//
//	native 0: a user message (parts 0, 1)
//	native 1: an assistant message, text part 0, calls a (part 1) and b (part 2)
//	native 2: a tool message answering a (part 0) and b (part 2), a nudge (part 1)
//	native 3: an assistant message with text only
//
// plus a system prompt that is no native message.
var (
	conv = []history.Message{
		{Role: history.RoleSystem, Content: "sys"},
		{Role: history.RoleUser, Content: "q"},
		{Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a"}, {ID: "b"}}},
		{Role: history.RoleTool, ToolCallID: "a", Content: "ra"},
		{Role: history.RoleTool, ToolCallID: "b", Content: "rb"},
		{Role: history.RoleUser, Kind: history.KindNudge, Content: "n"},
		{Role: history.RoleAssistant, Content: "done"},
	}
	slots = []Slot{
		{Native: -1},
		{Native: 0},
		{Native: 1, Parts: []int{0, 1, 2}, Calls: []int{1, 2}},
		{Native: 2, Parts: []int{0}},
		{Native: 2, Parts: []int{2}},
		{Native: 2, Parts: []int{1}},
		{Native: 3, Parts: []int{0}},
	}
)

// result returns a Result keeping conv[k] for each k of kept (-1: a
// notice), with the messages at the output positions of with replaced.
func result(kept []int, with map[int]history.Message) history.Result {
	res := history.Result{Kept: kept}
	for j, k := range kept {
		switch m, ok := with[j]; {
		case ok:
			res.Messages = append(res.Messages, m)
		case k < 0:
			res.Messages = append(res.Messages, history.Message{Role: history.RoleUser, Kind: history.KindBreadcrumb, Content: "earlier turns dropped"})
		default:
			res.Messages = append(res.Messages, conv[k])
		}
	}
	return res
}

func TestGroups(t *testing.T) {
	notice := history.Message{Role: history.RoleUser, Kind: history.KindBreadcrumb, Content: "earlier turns dropped"}
	allWhole := []Group{
		{Native: 0, Slots: slots[1:2], Whole: true},
		{Native: 1, Slots: slots[2:3], Whole: true},
		{Native: 2, Slots: slots[3:6], Whole: true},
		{Native: 3, Slots: slots[6:7], Whole: true},
	}
	tests := []struct {
		name   string
		reason string
		res    history.Result
		want   []Group
	}{
		{
			name:   "all kept",
			reason: "every native message whole; the system prompt left out",
			res:    result([]int{0, 1, 2, 3, 4, 5, 6}, nil),
			want:   allWhole,
		},
		{
			name:   "nil kept",
			reason: "a nil Kept keeps every message as it is",
			res:    history.Result{Messages: conv},
			want:   allWhole,
		},
		{
			name:   "notice",
			reason: "a notice where Kept holds -1, before the whole native messages that follow",
			res:    result([]int{0, -1, 6}, nil),
			want: []Group{
				{Native: -1, Notice: notice},
				{Native: 3, Slots: slots[6:7], Whole: true},
			},
		},
		{
			name:   "stripped call",
			reason: "the sweep stripped call b: its part is dropped, and the message that lost b's answer is not whole",
			res: result([]int{0, 1, 2, 3, 5, 6}, map[int]history.Message{
				2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a"}}},
			}),
			want: []Group{
				{Native: 0, Slots: slots[1:2], Whole: true},
				{Native: 1, Slots: slots[2:3], Drop: map[int]bool{2: true}},
				{Native: 2, Slots: []Slot{slots[3], slots[5]}},
				{Native: 3, Slots: slots[6:7], Whole: true},
			},
		},
		{
			name:   "elided result",
			reason: "an elided result maps its part to the placeholder; the others stay",
			res: result([]int{0, 1, 2, 3, 4, 5, 6}, map[int]history.Message{
				4: {Role: history.RoleTool, Kind: history.KindElided, ToolCallID: "b", Content: "[elided]"},
			}),
			want: []Group{
				{Native: 0, Slots: slots[1:2], Whole: true},
				{Native: 1, Slots: slots[2:3], Whole: true},
				{Native: 2, Slots: slots[3:6], Elided: map[int]string{2: "[elided]"}},
				{Native: 3, Slots: slots[6:7], Whole: true},
			},
		},
		{
			name:   "cleared arguments",
			reason: "a call whose arguments the core cleared maps its part to them; the message is not whole",
			res: result([]int{0, 1, 2, 3, 4, 5, 6}, map[int]history.Message{
				2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a"}, {ID: "b", Arguments: `{"elided":"x"}`}}},
				4: {Role: history.RoleTool, Kind: history.KindElided, ToolCallID: "b", Content: "[elided]"},
			}),
			want: []Group{
				{Native: 0, Slots: slots[1:2], Whole: true},
				{Native: 1, Slots: slots[2:3], Args: map[int]string{2: `{"elided":"x"}`}},
				{Native: 2, Slots: slots[3:6], Elided: map[int]string{2: "[elided]"}},
				{Native: 3, Slots: slots[6:7], Whole: true},
			},
		},
		{
			name:   "stripped and cleared",
			reason: "one call stripped, the other's arguments cleared, in one message",
			res: result([]int{0, 1, 2, 4, 5, 6}, map[int]history.Message{
				2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "b", Arguments: `{}`}}},
			}),
			want: []Group{
				{Native: 0, Slots: slots[1:2], Whole: true},
				{Native: 1, Slots: slots[2:3], Drop: map[int]bool{1: true}, Args: map[int]string{2: `{}`}},
				{Native: 2, Slots: slots[4:6]},
				{Native: 3, Slots: slots[6:7], Whole: true},
			},
		},
		{
			name:   "notice between pieces",
			reason: "a notice splits the run of one native message's pieces into two groups",
			res:    result([]int{3, -1, 5}, nil),
			want: []Group{
				{Native: 2, Slots: slots[3:4]},
				{Native: -1, Notice: notice},
				{Native: 2, Slots: slots[5:6]},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Groups(tt.res, conv, slots)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s\ngot  %+v\nwant %+v", tt.reason, got, tt.want)
			}
		})
	}
	// Borrowed builds the same groups in an array given back, whatever
	// groups it held (each case after every other).
	for _, prev := range tests {
		for _, tt := range tests {
			Return(Borrowed(prev.res, conv, slots))
			got := Borrowed(tt.res, conv, slots)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s, after %s: borrowed\ngot  %+v\nwant %+v", tt.name, prev.name, got, tt.want)
			}
			Return(got)
		}
	}
}

// TestReturnEmpties: an array given back keeps none of its groups' memory
// (the whole array is zero, past the groups' length too).
func TestReturnEmpties(t *testing.T) {
	groups := Borrowed(result([]int{0, -1, 6}, nil), conv, slots)
	if len(groups) == 0 {
		t.Fatal("setup: no groups")
	}
	Return(groups)
	for i, g := range groups[:cap(groups)] {
		if !reflect.DeepEqual(g, Group{}) {
			t.Fatalf("group %d given back still holds %+v", i, g)
		}
	}
}

func TestKeep(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		g      Group
		n      int
		want   []bool
	}{
		{
			name:   "kept parts",
			reason: "only the parts of kept slots",
			g:      Group{Slots: []Slot{{Parts: []int{0}}, {Parts: []int{2}}}},
			n:      3,
			want:   []bool{true, false, true},
		},
		{
			name:   "nil parts",
			reason: "nil Parts stands for every part",
			g:      Group{Slots: []Slot{{}}},
			n:      2,
			want:   []bool{true, true},
		},
		{
			name:   "empty parts",
			reason: "an empty, non-nil Parts stands for none",
			g:      Group{Slots: []Slot{{Parts: []int{}}}},
			n:      2,
			want:   []bool{false, false},
		},
		{
			name:   "drop",
			reason: "parts of stripped calls are left out, also under nil Parts",
			g:      Group{Slots: []Slot{{}}, Drop: map[int]bool{1: true}},
			n:      3,
			want:   []bool{true, false, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.Keep(tt.n); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s: got %v, want %v", tt.reason, got, tt.want)
			}
		})
	}
}

func TestGroupsDoesNotModify(t *testing.T) {
	res := result([]int{0, 1, 2, 3, 5, 6}, map[int]history.Message{
		2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a"}}},
	})
	wantSlots := make([]Slot, len(slots))
	for i, s := range slots {
		wantSlots[i] = Slot{Native: s.Native, Parts: slices.Clone(s.Parts), Calls: slices.Clone(s.Calls)}
	}
	wantConv := append([]history.Message(nil), conv...)
	Groups(res, conv, slots)
	if !reflect.DeepEqual(slots, wantSlots) || !reflect.DeepEqual(conv, wantConv) {
		t.Error("Groups modified its arguments")
	}
}

func TestUnchanged(t *testing.T) {
	identity := []int{0, 1, 2, 3, 4, 5, 6}
	tests := []struct {
		name   string
		res    history.Result
		want   bool
		reason string
	}{
		{"nil kept", history.Result{Messages: conv}, true, "a nil Kept means nothing changed"},
		{"identity", result(identity, nil), true, "an identity Kept over unchanged messages means nothing changed"},
		{"dropped", result([]int{0, 1, 2, 3, 4, 6}, nil), false, "a message is missing"},
		{"notice", result([]int{0, -1, 1, 2, 3, 4, 5, 6}, nil), false, "a notice was inserted"},
		{"reordered", result([]int{0, 1, 2, 4, 3, 5, 6}, nil), false, "the order changed"},
		{"stripped call", result(identity, map[int]history.Message{
			2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a"}}},
		}), false, "the sweep stripped a call"},
		{"elided", result(identity, map[int]history.Message{
			4: {Role: history.RoleTool, Kind: history.KindElided, ToolCallID: "b", Content: "[elided]"},
		}), false, "a result was elided"},
		{"cleared arguments", result(identity, map[int]history.Message{
			2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a", Arguments: `{"elided":"x"}`}, {ID: "b"}}},
		}), false, "a call's arguments were cleared"},
		{"short messages", history.Result{Kept: identity, Messages: conv[:3]}, false, "Messages does not cover conv"},
	}
	for _, tc := range tests {
		if got := Unchanged(tc.res, conv); got != tc.want {
			t.Errorf("%s: Unchanged = %v, want %v (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
}

// native are the native messages conv stands for, as part lists.
var native = [][]string{{"q0", "q1"}, {"t", "call a", "call b"}, {"result a", "nudge", "result b"}, {"done"}}

func TestApply(t *testing.T) {
	notice := func(b history.Message, next *Group) []string {
		after := "end"
		if next != nil {
			after = strconv.Itoa(next.Native)
		}
		return []string{"notice before " + after}
	}
	cut := func(orig []string, g *Group) ([]string, bool) {
		parts := KeptParts(g, orig, func(p, placeholder string) string { return placeholder })
		return parts, len(parts) > 0
	}
	tests := []struct {
		name   string
		res    history.Result
		want   [][]string
		reason string
	}{
		{"unchanged", history.Result{Messages: conv}, native, "native itself"},
		{"notice and whole", result([]int{0, -1, 6}, nil), [][]string{{"notice before 3"}, {"done"}},
			"a notice rendered with the group after it, then the caller's message"},
		{"notice at the end", result([]int{0, 1, -1}, nil), [][]string{{"q0", "q1"}, {"notice before end"}}, "no group after the notice"},
		{"cut down", result([]int{0, 1, 2, 3, 5, 6}, map[int]history.Message{
			2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a"}}},
		}), [][]string{native[0], {"t", "call a"}, {"result a", "nudge"}, native[3]}, "the stripped call and its orphaned result are gone"},
		{"elided", result([]int{0, 1, 2, 3, 4, 5, 6}, map[int]history.Message{
			4: {Role: history.RoleTool, Kind: history.KindElided, ToolCallID: "b", Content: "[elided]"},
		}), [][]string{native[0], native[1], {"result a", "nudge", "[elided]"}, native[3]}, "an elided result replaced in place"},
	}
	for _, tc := range tests {
		got, _ := Apply(native, conv, slots, tc.res, notice, cut)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Apply = %q, want %q (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
	none := func([]string, *Group) ([]string, bool) { return nil, false }
	stripped := result([]int{0, 1, 2, 3, 5, 6}, map[int]history.Message{
		2: {Role: history.RoleAssistant, Content: "t", ToolCalls: []history.ToolCall{{ID: "a"}}},
	})
	if got, _ := Apply(native, conv, slots, stripped, notice, none); !reflect.DeepEqual(got, [][]string{native[0], native[3]}) {
		t.Errorf("Apply = %q: a message cut reports empty must be left out", got)
	}
	if got, _ := Apply(native, conv, slots, history.Result{Messages: conv}, notice, cut); &got[0] != &native[0] || cap(got) != len(native) {
		t.Error("unchanged: want native itself, clipped")
	}
}

func TestKeptParts(t *testing.T) {
	g := &Group{Slots: []Slot{{Parts: []int{0}}, {Parts: []int{2}}}, Elided: map[int]string{2: "[x]"}}
	elide := func(p, placeholder string) string { return p + "->" + placeholder }
	if got := KeptParts(g, []string{"a", "b", "c"}, elide); !slices.Equal(got, []string{"a", "c->[x]"}) {
		t.Errorf("KeptParts = %q, want the kept parts with the elided one replaced", got)
	}
	if got := KeptParts(&Group{Slots: []Slot{{Parts: []int{}}}}, []string{"a"}, elide); got != nil {
		t.Errorf("KeptParts = %q, want nil when no part is kept", got)
	}
}

func TestWithArgs(t *testing.T) {
	parts := []string{"t", "call a", "call b"}
	args := func(p, a string) string { return p + " " + a }
	if got := WithArgs(&Group{Args: map[int]string{2: "{}"}}, parts, args); !slices.Equal(got, []string{"t", "call a", "call b {}"}) {
		t.Errorf("WithArgs = %q, want call b's arguments replaced", got)
	}
	if parts[2] != "call b" {
		t.Error("WithArgs modified its parts")
	}
	if got := WithArgs(&Group{}, parts, args); &got[0] != &parts[0] {
		t.Error("WithArgs without arguments to clear: want parts itself")
	}
}

func TestOneForOne(t *testing.T) {
	conv := []history.Message{
		{Role: history.RoleUser, Content: "q"},
		{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "a"}, {ID: "b"}}},
		{Role: history.RoleTool, ToolCallID: "a", Content: "ra"},
		{Role: history.RoleTool, ToolCallID: "z", Content: "[old]", Kind: history.KindElided},
	}
	native := []string{"q", "calls a b", "result a", "elided z"}
	notice := func(b history.Message) string { return "<" + b.Content + ">" }
	elide := func(orig string, m *history.Message) string { return orig + " -> " + m.Content }
	strip := func(orig string, m *history.Message) string {
		return orig + " -> " + strconv.Itoa(len(m.ToolCalls)) + " calls"
	}
	stripped := conv[1]
	stripped.ToolCalls = stripped.ToolCalls[:1]
	cleared := conv[1]
	cleared.ToolCalls = []history.ToolCall{{ID: "a", Arguments: "{}"}, {ID: "b"}}
	elided := conv[2]
	elided.Kind, elided.Content = history.KindElided, "[gone]"
	tests := []struct {
		name   string
		res    history.Result
		want   []string
		reason string
	}{
		{"unchanged", history.Result{Kept: []int{0, 1, 2, 3}, Messages: conv}, native, "an identity Kept over unchanged messages"},
		{"notices", history.Result{Kept: []int{0, -1, 2, -1}, Messages: []history.Message{conv[0], {Content: "turns"}, conv[2], {Content: "steps"}}},
			[]string{"q", "<turns>", "result a", "<steps>"}, "each notice from its own entry"},
		{"changed", history.Result{Kept: []int{0, 1, 2, 3}, Messages: []history.Message{conv[0], stripped, elided, conv[3]}},
			[]string{"q", "calls a b -> 1 calls", "result a -> [gone]", "elided z"}, "stripped and elided rebuilt; an old elision kept as it is"},
		{"cleared", history.Result{Kept: []int{0, 1, 2, 3}, Messages: []history.Message{conv[0], cleared, elided, conv[3]}},
			[]string{"q", "calls a b -> 2 calls", "result a -> [gone]", "elided z"}, "a message whose arguments were cleared goes to calls too"},
	}
	for _, tc := range tests {
		if got, _ := OneForOne(native, conv, tc.res, notice, elide, strip); !slices.Equal(got, tc.want) {
			t.Errorf("%s: OneForOne = %q, want %q (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
	if got, _ := OneForOne(native, conv, history.Result{}, notice, elide, strip); &got[0] != &native[0] || cap(got) != len(native) {
		t.Error("nil Kept: want native itself, clipped")
	}
}

// TestArrays: Make gives empty arrays of at least the size asked (nil for
// none asked of none); Give keeps a conversion's arrays emptied over their
// whole capacity, for the next Make of no more than it holds.
func TestArrays(t *testing.T) {
	var none *Arrays
	if h, s := none.Make(0, 0); h != nil || s != nil {
		t.Fatal("nothing asked of no arrays: not nil")
	}
	a := new(Arrays)
	h, s := a.Make(3, 2)
	if len(h) != 0 || cap(h) < 3 || len(s) != 0 || cap(s) < 2 {
		t.Fatalf("Make(3, 2): %d/%d messages, %d/%d slots", len(h), cap(h), len(s), cap(s))
	}
	h = append(h, conv[:5]...) // grown past the array made
	s = append(s, slots[:2]...)
	a.Give(h, s)
	h2, s2 := a.Make(4, 1)
	if cap(h2) != cap(h) || &h2[:1][0] != &h[:1][0] || &s2[:1][0] != &s[:1][0] {
		t.Fatal("the arrays given back are not the ones made next")
	}
	for i, m := range h2[:cap(h2)] {
		if !reflect.DeepEqual(m, history.Message{}) {
			t.Fatalf("message %d given back still holds %+v", i, m)
		}
	}
	for i, sl := range s2[:cap(s2)] {
		if !reflect.DeepEqual(sl, Slot{}) {
			t.Fatalf("slot %d given back still holds %+v", i, sl)
		}
	}
	if h3, _ := a.Make(cap(h)+1, 0); cap(h3) == cap(h) {
		t.Fatal("Make asked for more than the array holds gave the array")
	}
}
