package history

// Tests of the task preset's choice of steps by what later messages
// mention (plan_salient.go).

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history/internal/rules"
)

// usedTurn is one task of four steps: a listing that shows a path the
// agent then reads (step 0), a build log nothing later mentions (step 1),
// the read of that path (step 2), and the answer.
func usedTurn() []Message {
	pad := func(s string) string { return s + strings.Repeat(" x", 300) }
	call := func(id, name, args string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: args}}}
	}
	return []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "fix the failing test"},
		call("c0", "ls", `{"dir":"."}`), {Role: RoleTool, ToolCallID: "c0", Content: pad("src/parser_state.go")},
		call("c1", "make", `{}`), {Role: RoleTool, ToolCallID: "c1", Content: pad("built 7f3a9c21e8 in 3s")},
		call("c2", "read", `{"path":"src/parser_state.go"}`), {Role: RoleTool, ToolCallID: "c2", Content: pad("package parser")},
		{Role: RoleAssistant, Content: "The state is reset twice."},
	}
}

// TestTaskDropsUnusedStepsFirst: when a step of the latest turn must go at
// a maintenance point (a trim down to a low-water mark), the task preset
// drops the one whose result no later message mentions (the build log),
// not the oldest (the listing whose path the agent read next). Step
// trimming alone, and the task preset planning up to its budget, still
// drop the oldest. Before the choice by mentions, the task preset dropped
// the listing there too.
func TestTaskDropsUnusedStepsFirst(t *testing.T) {
	in := usedTurn()
	all := Estimate(in, Heuristic())
	step := Estimate(in[4:6], Heuristic())
	// Over the budget by one token, and down to a mark where one of the
	// three steps must go, and one is enough.
	budget := all - 1
	mark := WithLowWater(float64(all-step/2) / float64(budget))
	never := ElideOptions{MinTokens: 1 << 20, ClearArguments: -1}
	cases := []struct {
		name       string
		opts       []Option
		keep, drop int // the result kept, the result dropped
	}{
		{"task preset, low-water mark: the unused build log goes", []Option{WithTask(-1, never), mark}, 3, 5},
		{"step trimming alone: the oldest step goes", []Option{WithStepTrim(), mark}, 5, 3},
		{"task preset up to its budget: the oldest step goes", []Option{WithTask(-1, never)}, 5, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := TrimToRecentTurns(in, budget, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(res.Kept, tc.keep) || slices.Contains(res.Kept, tc.drop) || res.DroppedSteps != 1 {
				t.Fatalf("kept %v, %d steps dropped; want %d kept, %d dropped, one step", res.Kept, res.DroppedSteps, tc.keep, tc.drop)
			}
			checkResult(t, in, res, false)
			again, err := TrimToRecentTurns(res.Messages, budget, tc.opts...)
			if err != nil || !isIdentity(again.Kept, len(res.Messages)) {
				t.Fatalf("trimming the output again: kept %v, %v", again.Kept, err)
			}
		})
	}
}

// genUsedTurn builds from data an older turn and a latest turn of 2 to 12
// steps: each step's call reads a file named by data, perhaps one that an
// earlier result listed, and its result, of a size from data, shows paths
// that later calls may read; some steps make two calls, some think.
func genUsedTurn(data []byte) []Message {
	next := byteSource(data)
	name := func(b int) string { return "src/mod_" + strconv.Itoa(b%7) + "/file_" + strconv.Itoa(b%5) + ".go" }
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "earlier"}, {Role: RoleAssistant, Content: "ok"},
		{Role: RoleUser, Content: "fix it"},
	}
	steps := 2 + next()%11
	for s := range steps {
		id := "c" + strconv.Itoa(s)
		a := Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "read", Arguments: `{"path":"` + name(next()) + `"}`}}}
		two := next()%4 == 0
		if two {
			a.ToolCalls = append(a.ToolCalls, ToolCall{ID: id + "b", Name: "ls", Arguments: `{}`})
		}
		if next()%5 == 0 {
			a.Parts = []Part{{Type: PartReasoning, Text: "thinking"}}
		}
		msgs = append(msgs, a)
		body := name(next()) + " " + name(next()) + strings.Repeat(" line", next()%60)
		msgs = append(msgs, Message{Role: RoleTool, ToolCallID: id, Content: body})
		if two {
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: id + "b", Content: name(next())})
		}
	}
	return append(msgs, Message{Role: RoleAssistant, Content: "done with " + name(next())})
}

// FuzzSalientSteps: the task preset's choice of steps by mentions, at any
// budget and low-water mark, keeps every invariant of a trim (a valid,
// well-paired result within the budget unless a typed error says why, the
// latest request kept), and trimming its output again changes nothing; a
// Trimmer fed the session request by request too, its prompt growing only
// at its end between two plans; with reasoning kept loose as well.
func FuzzSalientSteps(f *testing.F) {
	f.Add([]byte{6, 1, 3, 9, 2, 4, 40, 7, 5, 0, 8, 11, 3, 50, 2, 1, 6}, uint16(200), uint8(50))
	f.Add([]byte{11, 4, 4, 1, 1, 9, 59, 3, 3, 2, 2, 8, 30, 6, 6, 4, 1, 20, 9, 9}, uint16(120), uint8(36))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, mark uint8) {
		in := genUsedTurn(data)
		b := 20 + int(budget)%600
		lw := WithLowWater(0.2 + float64(mark%80)/100)
		for _, opts := range [][]Option{
			{WithTask(-1, ElideOptions{}), lw},
			{WithTask(-1, ElideOptions{KeepRecent: 1, MinTokens: 8}), lw, rules.LooseReasoning().(Option)},
		} {
			res, err := TrimToRecentTurns(in, b, opts...)
			if err != nil && !isTooLarge(err) {
				t.Fatalf("unexpected error %v", err)
			}
			checkResult(t, in, res, false)
			if err == nil && res.TokensAfter > b {
				t.Fatalf("%d tokens over the budget %d without an error", res.TokensAfter, b)
			}
			if !slices.Contains(res.Kept, 3) {
				t.Fatalf("the latest request went: kept %v", res.Kept)
			}
			again, _ := TrimToRecentTurns(res.Messages, b, opts...)
			if !reflect.DeepEqual(render(again.Messages), render(res.Messages)) {
				t.Fatalf("trimming the output again changed it:\n%v\n%v", render(res.Messages), render(again.Messages))
			}
			// A Trimmer fed the session request by request: every prompt
			// valid, within budget unless a typed error says why, and
			// between two plans (no event) extending the previous one.
			plans := 0
			tr := NewTrimmer(append(slices.Clip(opts), WithOnTrim(func(Event) { plans++ }))...)
			var prev Result
			var prevIn []Message
			for n := 4; n <= len(in); n++ {
				if in[n-1].Role == RoleTool && n < len(in) && in[n].Role == RoleTool {
					continue // mid-exchange
				}
				before := plans
				r, err := tr.Trim(in[:n], b)
				if err != nil && !isTooLarge(err) {
					t.Fatalf("Trimmer, %d messages: unexpected error %v", n, err)
				}
				checkResult(t, in[:n], r, false)
				if r.Trimmed && plans == before && prevIn != nil {
					checkExtends(t, prevIn, in[:n], prev, r)
				}
				prev, prevIn = r, in[:n]
				if err == nil && r.TokensAfter > b {
					t.Fatalf("Trimmer, %d messages: %d tokens over the budget %d without an error", n, r.TokensAfter, b)
				}
			}
		}
	})
}

// elisionTask is one task whose oldest results are a listing that shows a
// path the agent reads later (3), a build log nothing later mentions (5), a
// write whose call carries a whole file (6: its result is one word), then
// seven reads; under the task preset the three newest results are never
// elided, and the three before them count as used.
func elisionTask() []Message {
	pad := func(s string) string { return s + strings.Repeat(" x", 300) }
	call := func(id, name, args string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: args}}}
	}
	res := func(id, s string) Message { return Message{Role: RoleTool, ToolCallID: id, Content: s} }
	msgs := []Message{
		{Role: RoleSystem, Content: "sys"},
		{Role: RoleUser, Content: "fix the failing test"},
		call("c0", "ls", `{"dir":"."}`), res("c0", pad("src/parser_state.go")),
		call("c1", "make", `{}`), res("c1", pad("built 7f3a9c21e8 in 3s")),
		call("c2", "write", `{"path":"notes.txt","content":"`+strings.Repeat("y ", 600)+`"}`), res("c2", "ok"),
	}
	for i, f := range []string{"src/parser_state.go", "a.go", "b.go", "c.go", "d.go", "e.go", "f.go"} {
		id := "r" + strconv.Itoa(i)
		msgs = append(msgs, call(id, "read", `{"path":"`+f+`"}`), res(id, pad("package parser")))
	}
	return msgs
}

// TestTaskElidesFirst: planning up to its budget, the task preset clears
// the arguments of an old call before it elides any result (no reference
// is in a call's arguments: the result of a read is), and elides a result
// whose words no later message mentions before one whose path the agent
// went on to read. Before, it elided the oldest results first: the listing,
// then the build log.
func TestTaskElidesFirst(t *testing.T) {
	in := elisionTask()
	all := Estimate(in, Heuristic())
	opts := []Option{WithTask(-1, ElideOptions{Digest: -1, MinTokens: 50})}
	sent := func(res Result, i int) Message {
		return res.Messages[slices.Index(res.Kept, i)]
	}
	cases := []struct {
		name   string
		budget int
		whole  []int // results sent whole
		elided []int // results elided
		clear  bool  // the write's arguments cleared
	}{
		{"a little over: the write's arguments go, every result stays whole", all - 100, []int{3, 5}, nil, true},
		{"one result more: the build log goes, not the listing the agent used", all - 250, []int{3}, []int{5}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := TrimToRecentTurns(in, tc.budget, opts...)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, in, res, false)
			for _, i := range tc.whole {
				if m := sent(res, i); m.Content != in[i].Content {
					t.Errorf("result %d not sent whole: %.60q", i, m.Content)
				}
			}
			for _, i := range tc.elided {
				if m := sent(res, i); m.Kind != KindElided {
					t.Errorf("result %d not elided: %.60q", i, m.Content)
				}
			}
			if w := sent(res, 6); (w.ToolCalls[0].Arguments != in[6].ToolCalls[0].Arguments) != tc.clear {
				t.Errorf("the write's arguments: %.60q", w.ToolCalls[0].Arguments)
			}
		})
	}
}
