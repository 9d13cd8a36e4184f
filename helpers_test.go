package history

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Test notation: one string per message.
//
//	S:text  system            U:text  user           A:text  assistant
//	A:text>c1,c2  assistant calling c1 and c2        T:c1    tool result for c1
//	B       default breadcrumb                       B:text  breadcrumb with text
//	N:text  nudge (user role)                        M:text  summary (user role)
func parse(t testing.TB, specs ...string) []Message {
	t.Helper()
	msgs := make([]Message, 0, len(specs))
	for _, s := range specs {
		msgs = append(msgs, parseOne(s))
	}
	return msgs
}

func parseOne(s string) Message {
	kind, text, _ := strings.Cut(s, ":")
	switch kind {
	case "S":
		return Message{Role: RoleSystem, Content: text}
	case "U":
		return Message{Role: RoleUser, Content: text}
	case "A":
		text, calls, ok := strings.Cut(text, ">")
		m := Message{Role: RoleAssistant, Content: text}
		if ok {
			for _, id := range strings.Split(calls, ",") {
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "fn", Arguments: `{"id":"` + id + `"}`})
			}
		}
		return m
	case "T":
		return Message{Role: RoleTool, ToolCallID: text, Content: "result of " + text}
	case "B":
		if text == "" {
			return Breadcrumb()
		}
		return Message{Role: RoleUser, Content: text, Kind: KindBreadcrumb}
	case "N":
		return Message{Role: RoleUser, Content: text, Kind: KindNudge}
	case "M":
		return Message{Role: RoleUser, Content: text, Kind: KindSummary}
	}
	panic("bad test spec " + s)
}

// render is the inverse of parse (breadcrumbs with the default text render
// as "B").
func render(msgs []Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		switch {
		case m.Role == RoleTool: // elided or not
			out = append(out, "T:"+m.ToolCallID)
		case m.Kind == KindBreadcrumb && m.Content == BreadcrumbText:
			out = append(out, "B")
		case m.Kind != "":
			out = append(out, kindSpec[m.Kind]+":"+m.Content)
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			ids := make([]string, len(m.ToolCalls))
			for i, c := range m.ToolCalls {
				ids[i] = c.ID
			}
			out = append(out, "A:"+m.Content+">"+strings.Join(ids, ","))
		default:
			out = append(out, roleSpec[m.Role]+":"+m.Content)
		}
	}
	return out
}

// The letters of the notation, by role (ordinary messages) and by kind.
var (
	roleSpec = map[Role]string{RoleSystem: "S", RoleUser: "U", RoleAssistant: "A"}
	kindSpec = map[Kind]string{KindBreadcrumb: "B", KindNudge: "N", KindSummary: "M"}
)

// unit costs 10 tokens per message, whatever it holds, so budgets in tests
// read as message counts.
var unit = CounterFunc(func(Message) int { return 10 })

// clone deep-copies msgs so tests can prove the input was not modified. It
// keeps nil slices nil and empty ones empty, so that the copy is
// reflect.DeepEqual to the original, and it does not use Message.Clone, so
// that a fault there cannot hide itself.
func clone(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if m.Parts != nil {
			m.Parts = append(make([]Part, 0, len(m.Parts)), m.Parts...)
		}
		if m.ToolCalls != nil {
			m.ToolCalls = append(make([]ToolCall, 0, len(m.ToolCalls)), m.ToolCalls...)
		}
		out[i] = m
	}
	return out
}

// isIdentity reports whether kept is 0, 1, ..., n-1.
func isIdentity(kept []int, n int) bool {
	if len(kept) != n {
		return false
	}
	for i, k := range kept {
		if k != i {
			return false
		}
	}
	return true
}

// ofKind returns the indices of the messages of msgs whose Kind is kind, in
// order (nil when there are none).
func ofKind(msgs []Message, kind Kind) []int {
	var idx []int
	for i := range msgs {
		if msgs[i].Kind == kind {
			idx = append(idx, i)
		}
	}
	return idx
}

// eventOf returns the Event a trim that produced r must emit, for reason and
// attempt, without labels. It is written out field by field, apart from the
// library's newEvent, so that the two check each other.
func eventOf(r Result, reason string, attempt int) Event {
	return Event{Type: EventType, Reason: reason, DroppedMessages: r.DroppedMessages, DroppedTurns: r.DroppedTurns,
		KeptTurns: r.KeptTurns, DroppedSteps: r.DroppedSteps, ElidedResults: r.ElidedResults, CutResults: r.CutResults,
		OrphansRemoved: r.OrphansRemoved, DroppedInstructions: r.DroppedInstructions,
		TokensBefore: r.TokensBefore, TokensAfter: r.TokensAfter, Budget: r.Budget, Attempt: attempt}
}

// stripLabels returns e without its labels, for comparison with eventOf.
func stripLabels(e Event) Event { e.Labels = nil; return e }

// checkResult asserts the structural invariants every Result of a trim of
// in must hold: Kept parallels Messages and names, for each message, the
// input message it is (or -1 for an inserted breadcrumb); no tool pair is
// broken (when swept); inserted breadcrumbs never stack; and every input
// message is kept, listed in Dropped in input order, or a breadcrumb the
// trim replaced.
func checkResult(t testing.TB, in []Message, res Result, swept bool) {
	t.Helper()
	if len(res.Kept) != len(res.Messages) {
		t.Fatalf("len(Kept)=%d, len(Messages)=%d: Kept must parallel Messages", len(res.Kept), len(res.Messages))
	}
	kept := make(map[int]bool, len(res.Kept))
	var modified []int
	for i, k := range res.Kept {
		m := res.Messages[i]
		if k >= 0 && (!slices.Equal(m.ToolCalls, in[k].ToolCalls) || m.Kind != in[k].Kind) {
			modified = append(modified, i)
		}
		if k < 0 {
			if m.Kind != KindBreadcrumb && m.Kind != KindSummary {
				t.Fatalf("Kept[%d] = -1 but message is %+v", i, m)
			}
			continue
		}
		if k >= len(in) {
			t.Fatalf("Kept[%d] = %d, beyond the %d input messages", i, k, len(in))
		}
		if kept[k] {
			t.Fatalf("Kept names %d twice: %v", k, res.Kept)
		}
		kept[k] = true
		o := in[k]
		if !slices.Equal(m.ToolCalls, o.ToolCalls) {
			// The sweep may strip calls, and ClearArguments clear them.
			checkCalls(t, in, res, i)
			o.ToolCalls = m.ToolCalls
		}
		if m.Kind == KindElided && o.Kind != KindElided {
			o.Content, o.Parts, o.Kind = m.Content, nil, KindElided
		}
		if !reflect.DeepEqual(m, o) {
			t.Fatalf("Messages[%d] is not input[%d]", i, k)
		}
	}
	// Modified names exactly the changed messages, and ApplyFunc rebuilds
	// Messages from the input and them.
	if !reflect.DeepEqual(res.Modified, modified) {
		t.Fatalf("Modified = %v, want %v", res.Modified, modified)
	}
	if got := ApplyFunc(in, res, func(m Message) Message { return m }); !reflect.DeepEqual(got, res.Messages) && len(res.Messages) > 0 {
		t.Fatalf("ApplyFunc does not reproduce Messages:\n%v\n%v", render(got), render(res.Messages))
	}
	// No broken pairs: a second sweep finds nothing.
	if _, rep := SweepOrphans(res.Messages); swept && rep != (SweepReport{}) {
		t.Fatalf("trimmed history still has orphans: %+v\n%v", rep, render(res.Messages))
	}
	// Breadcrumbs never stack: an inserted one never sits next to another.
	for i, k := range res.Kept {
		if k >= 0 {
			continue
		}
		if (i > 0 && res.Messages[i-1].Kind == KindBreadcrumb) ||
			(i+1 < len(res.Messages) && res.Messages[i+1].Kind == KindBreadcrumb) {
			t.Fatalf("stacked breadcrumbs: %v", render(res.Messages))
		}
	}
	// Every input message is either kept or dropped (breadcrumbs the trim
	// replaced aside), and Dropped lists them in input order.
	d := 0
	for i, m := range in {
		if kept[i] {
			continue
		}
		if d < len(res.Dropped) && reflect.DeepEqual(res.Dropped[d], m) {
			d++
			continue
		}
		if m.Kind != KindBreadcrumb {
			t.Fatalf("input message %d is neither kept nor dropped: %+v", i, m)
		}
	}
	if d != len(res.Dropped) {
		t.Fatalf("Dropped has %d messages that are not input messages in order", len(res.Dropped)-d)
	}
}

// checkCalls asserts what may differ between the calls of res.Messages[i]
// and those of the input message it keeps: calls stripped by the sweep,
// and arguments cleared under ClearArguments. Each call is the input's call
// of the same ID and Name; its Arguments are the input's or the cleared
// form, a JSON object, and only in a message without reasoning whose
// result, in Messages, this trim elided.
func checkCalls(t testing.TB, in []Message, res Result, i int) {
	t.Helper()
	m, o := res.Messages[i], in[res.Kept[i]]
	for _, c := range m.ToolCalls {
		j := slices.IndexFunc(o.ToolCalls, func(oc ToolCall) bool { return oc.ID == c.ID })
		if j < 0 || o.ToolCalls[j].Name != c.Name {
			t.Fatalf("Messages[%d] has call %+v, not a call of input[%d]", i, c, res.Kept[i])
		}
		if o.ToolCalls[j].Arguments == c.Arguments {
			continue
		}
		if !isClearedArguments(c.Arguments) || !json.Valid([]byte(c.Arguments)) || c.Arguments[0] != '{' {
			t.Fatalf("Messages[%d]: call %s has arguments %q: neither the input's nor cleared ones", i, c.ID, c.Arguments)
		}
		if hasReasoning(o) {
			t.Fatalf("Messages[%d]: arguments cleared in a message holding reasoning", i)
		}
		// Arguments are cleared with the result they produced (elided or,
		// when too short to elide, sent as it is), never on a call that is
		// not answered here.
		answered := false
		for j := i + 1; j < len(res.Messages) && (res.Messages[j].Role == RoleTool || res.Messages[j].Kind == KindNudge); j++ {
			if r := res.Messages[j]; r.Role == RoleTool && r.ToolCallID == c.ID {
				answered = true
			}
		}
		if !answered {
			t.Fatalf("Messages[%d]: call %s cleared, but no result answering it is sent: %v", i, c.ID, render(res.Messages))
		}
	}
}

// The tests below pin what the helpers compute, so that a fault in a helper
// cannot hide a fault in the library.

func TestParseRender(t *testing.T) {
	fnCall := func(id string) ToolCall { return ToolCall{ID: id, Name: "fn", Arguments: `{"id":"` + id + `"}`} }
	tests := []struct {
		spec   string
		want   Message
		reason string
	}{
		{"S:sys", Message{Role: RoleSystem, Content: "sys"}, "a system message"},
		{"U:q", Message{Role: RoleUser, Content: "q"}, "a real user message has no Kind"},
		{"A:a", Message{Role: RoleAssistant, Content: "a"}, "assistant text without calls"},
		{"A:>c1", Message{Role: RoleAssistant, ToolCalls: []ToolCall{fnCall("c1")}}, "a call without text"},
		{"A:let me see>c1,c2", Message{Role: RoleAssistant, Content: "let me see", ToolCalls: []ToolCall{fnCall("c1"), fnCall("c2")}},
			"text, then parallel calls in order"},
		{"T:c1", Message{Role: RoleTool, ToolCallID: "c1", Content: "result of c1"}, "a tool result names its call"},
		{"B", Breadcrumb(), "B alone is the library's default breadcrumb"},
		{"B:notice", Message{Role: RoleUser, Content: "notice", Kind: KindBreadcrumb}, "a breadcrumb with other text"},
		{"N:hurry", Message{Role: RoleUser, Content: "hurry", Kind: KindNudge}, "a nudge"},
		{"M:so far", Message{Role: RoleUser, Content: "so far", Kind: KindSummary}, "a summary"},
	}
	for _, tc := range tests {
		got := parse(t, tc.spec)
		assert.Equal(t, []Message{tc.want}, got, tc.reason)
		assert.Equal(t, []string{tc.spec}, render(got), "render inverts parse: %s", tc.reason)
	}
	assert.Equal(t, []string{"T:c1"}, render([]Message{elided(parseOne("T:c1"), "gone")}), "an elided result renders as its call")
	assert.Panics(t, func() { parse(t, "X:typo") }, "a mistyped spec must not pass silently")
}

func TestClone(t *testing.T) {
	orig := []Message{
		{Role: RoleAssistant, Content: "a", ToolCalls: []ToolCall{{ID: "c1", Name: "f"}}, Parts: []Part{{Type: PartText, Text: "p"}}},
		{Role: RoleUser, Parts: []Part{}}, // empty, not nil
	}
	c := clone(orig)
	require.Equal(t, orig, c, "a deep copy is equal")
	require.NotNil(t, c[1].Parts, "empty slices stay empty, not nil")
	require.Nil(t, c[1].ToolCalls, "nil slices stay nil")
	c[0].ToolCalls[0].Name = "changed"
	c[0].Parts[0].Text = "changed"
	assert.Equal(t, "f", orig[0].ToolCalls[0].Name, "tool calls are copied")
	assert.Equal(t, "p", orig[0].Parts[0].Text, "parts are copied")
	assert.Nil(t, clone(nil))
}

func TestIsIdentity(t *testing.T) {
	tests := []struct {
		kept   []int
		n      int
		want   bool
		reason string
	}{
		{[]int{0, 1, 2}, 3, true, "0..n-1"},
		{[]int{}, 0, true, "empty"},
		{nil, 0, true, "nil is the empty identity"},
		{[]int{0, 1}, 3, false, "too short"},
		{[]int{0, 2, 1}, 3, false, "out of order"},
		{[]int{0, -1, 1}, 3, false, "an inserted breadcrumb"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, isIdentity(tc.kept, tc.n), tc.reason)
	}
}

func TestOfKind(t *testing.T) {
	msgs := parse(t, "S:sys", "B", "U:q", "N:n1", "A:a", "N:n2")
	assert.Equal(t, []int{3, 5}, ofKind(msgs, KindNudge))
	assert.Equal(t, []int{1}, ofKind(msgs, KindBreadcrumb))
	assert.Nil(t, ofKind(msgs, KindSummary))
}

// TestEventOf sets every field of a Result that an Event mirrors to a
// distinct value and checks that eventOf copies each one, so that a field
// added to both cannot be forgotten by the helper.
func TestEventOf(t *testing.T) {
	var r Result
	rv := reflect.ValueOf(&r).Elem()
	ev := reflect.TypeFor[Event]()
	mirrored := 0
	for i := range ev.NumField() {
		f := rv.FieldByName(ev.Field(i).Name)
		if f.IsValid() && f.Kind() == reflect.Int {
			mirrored++
			f.SetInt(int64(100 + i))
		}
	}
	got := reflect.ValueOf(eventOf(r, "why", 7))
	for i := range ev.NumField() {
		name := ev.Field(i).Name
		if f := rv.FieldByName(name); f.IsValid() && f.Kind() == reflect.Int {
			assert.Equal(t, f.Int(), got.Field(i).Int(), "Event.%s", name)
		}
	}
	assert.Equal(t, 11, mirrored, "Event mirrors eleven Result figures")
	e := eventOf(r, "why", 7)
	assert.Equal(t, []any{EventType, "why", 7}, []any{e.Type, e.Reason, e.Attempt})
	e.Labels = map[string]string{"k": "v"}
	assert.Nil(t, stripLabels(e).Labels)
}

// TestGenerators checks the shape of the synthetic histories the tests and
// benchmarks are built on: valid, well paired, deterministic, and the size
// each promises.
func TestGenerators(t *testing.T) {
	users := func(msgs []Message) int {
		n := 0
		for _, m := range msgs {
			if m.Role == RoleUser && m.Kind == "" {
				n++
			}
		}
		return n
	}
	wellFormed := func(name string, msgs []Message) {
		t.Helper()
		require.NoError(t, validate(msgs), name)
		_, rep := SweepOrphans(msgs)
		assert.Equal(t, SweepReport{}, rep, "%s: every call answered, every result paired", name)
		assert.Equal(t, RoleSystem, msgs[0].Role, "%s: starts with a system prompt", name)
	}

	s := trSession(30, 1)
	wellFormed("trSession", s)
	assert.Equal(t, 30, users(s), "trSession: one user message per turn")
	assert.Equal(t, s, trSession(30, 1), "trSession: the same seed gives the same session")
	assert.NotEqual(t, Estimate(s, nil), Estimate(trSession(30, 2), nil), "trSession: the seed varies sizes")
	parallel := 0
	for _, m := range s {
		if len(m.ToolCalls) > 1 {
			parallel++
		}
	}
	assert.Positive(t, parallel, "trSession: some steps make parallel calls")

	for _, n := range []int{1, 100, 1003} {
		m := synth(n, 50)
		wellFormed("synth", m)
		assert.True(t, len(m) >= n && len(m) < n+5, "synth(%d): %d messages, want n to n+4", n, len(m))
		for i := range m {
			if m[i].Role != RoleAssistant || len(m[i].ToolCalls) == 0 {
				assert.Len(t, m[i].Content, 50, "synth: contents are size bytes")
			}
		}
	}

	task := agentTask(4, 100)
	wellFormed("agentTask", task)
	assert.Len(t, task, 2+2*4+1, "agentTask: system, request, a call and result per step, answer")
	assert.Equal(t, 1, users(task), "agentTask: one turn")
	assert.Equal(t, big("cb", 100), task[5], "agentTask: step results answer their calls")

	h := agentHistory(5)
	wellFormed("agentHistory", h)
	assert.Len(t, h, 1+4*5, "agentHistory: four messages per turn")
	assert.Equal(t, 5, users(h))
}

func TestCountingCounter(t *testing.T) {
	c := &countingCounter{}
	a, b := Message{Role: RoleUser, Content: "hello"}, Message{Role: RoleAssistant, Content: "hi there"}
	assert.Equal(t, Heuristic().CountMessage(a), c.CountMessage(a), "counts like Heuristic")
	c.CountMessage(b)
	assert.Equal(t, []Message{a, b}, c.reset(), "records every message asked about, in order")
	assert.Empty(t, c.reset(), "reset empties the record")
}

func TestIsPrefixAndFirstKept(t *testing.T) {
	m := parse(t, "S:sys", "U:q", "A:a")
	assert.True(t, isPrefix(m[:2], m))
	assert.True(t, isPrefix(nil, m))
	assert.False(t, isPrefix(m, m[:2]), "longer than b")
	assert.False(t, isPrefix(parse(t, "S:other"), m), "a different first message")

	assert.Equal(t, 4, firstKept(Result{Kept: []int{0, -1, 4, 5}}, 1), "the breadcrumb and the prefix are skipped")
	assert.Equal(t, -1, firstKept(Result{Kept: []int{0}}, 1), "nothing after the prefix")
}

func TestLadderFloor(t *testing.T) {
	est := func(specs ...string) int { return Estimate(parse(t, specs...), nil) }
	tests := []struct {
		name   string
		in     []string
		want   int
		reason string
	}{
		{"prefix only", []string{"S:sys", "B"}, est("S:sys", "B"),
			"with no turn there is nothing to trim: the history is sent as it is"},
		{"old breadcrumb", []string{"S:sys", "B:older", "U:q1", "A:a1", "U:q2"}, est("S:sys", "B", "U:q2"),
			"an old breadcrumb is replaced by the new one"},
		{"one turn, one step", []string{"S:sys", "U:q", "A:>c1", "T:c1"}, est("S:sys", "U:q", "A:>c1", "T:c1"),
			"nothing can be dropped"},
		{"older turns and steps", []string{"S:sys", "U:q1", "A:a1", "U:q2", "A:>c1", "T:c1", "A:>c2", "T:c2", "A:done"},
			est("S:sys", "B", "U:q2", "B:"+StepBreadcrumbText, "A:done"),
			"both breadcrumbs, the opening message and the newest step"},
		{"orphans swept first", []string{"S:sys", "U:q", "T:ghost", "A:a"}, est("S:sys", "U:q", "A:a"),
			"an orphan result is not something the ladder must keep"},
	}
	for _, tc := range tests {
		in := parse(t, tc.in...)
		floor := ladderFloor(in)
		assert.Equal(t, tc.want, floor, "%s: %s", tc.name, tc.reason)
		_, err := TrimToRecentTurns(in, floor, WithElision(ElideOptions{}), WithStepTrim())
		assert.NoError(t, err, "%s: the ladder fits its floor", tc.name)
		_, err = TrimToRecentTurns(in, floor-1, WithElision(ElideOptions{}), WithStepTrim())
		assert.ErrorIs(t, err, ErrLatestTurnTooLarge, "%s: and nothing less", tc.name)
	}
}
