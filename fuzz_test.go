package history

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// genHistory turns fuzz bytes into a history: roles, kinds, tool calls
// (parallel ones too), results in any order, orphans, unanswered calls and
// reused ids. Every generated message is valid, so any error other than
// ErrLatestTurnTooLarge is a bug.
func genHistory(data []byte) []Message { return genHistoryArgs(data, false) }

// genHistoryArgs is genHistory; with bigArgs, the calls of an assistant
// message whose byte is even carry JSON arguments of 10 to 130 tokens,
// for ClearArguments to clear (genHistory's seeds keep their meaning).
func genHistoryArgs(data []byte, bigArgs bool) []Message {
	var msgs []Message
	next := 0
	var open []string // ids of the latest assistant calls
	text := func(b byte) string { return string(make([]byte, int(b%40))) + "x" }
	for i := 0; i+1 < len(data); i += 2 {
		op, arg := data[i]%12, data[i+1]
		switch op {
		case 0:
			msgs = append(msgs, Message{Role: RoleSystem, Content: text(arg)})
		case 1, 2:
			msgs = append(msgs, Message{Role: RoleUser, Content: text(arg)})
		case 3:
			msgs = append(msgs, Message{Role: RoleAssistant, Content: text(arg)})
		case 4, 5: // assistant with 1..4 parallel calls
			m := Message{Role: RoleAssistant}
			if arg&1 == 0 {
				m.Content = text(arg)
			}
			if arg%3 == 0 {
				m.Parts = []Part{{Type: PartReasoning, Text: text(arg)}}
			}
			open = open[:0]
			for range int(arg%4) + 1 {
				id := "c" + strconv.Itoa(next%7) // ids are reused across exchanges
				next++
				if slicesContains(open, id) {
					continue
				}
				open = append(open, id)
				args := text(arg)
				if bigArgs && arg%2 == 0 {
					args = `{"path":"` + strings.Repeat("word ", (int(arg)+next)%64*2+8) + `"}`
				}
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "fn", Arguments: args})
			}
			msgs = append(msgs, m)
		case 6, 7: // a result for one of the open calls (or an orphan)
			id := "zz"
			if len(open) > 0 && arg%5 != 0 {
				id = open[int(arg)%len(open)]
			}
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: id, Content: text(arg)})
		case 8:
			msgs = append(msgs, Message{Role: RoleUser, Content: text(arg), Kind: KindNudge})
		case 9:
			msgs = append(msgs, Message{Role: RoleUser, Content: text(arg), Kind: KindSummary})
		case 10:
			msgs = append(msgs, Breadcrumb())
		case 11: // answer every open call, in reverse order
			for j := len(open) - 1; j >= 0; j-- {
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: open[j], Content: text(arg)})
			}
			open = open[:0]
		}
	}
	return msgs
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func FuzzTrimToRecentTurns(f *testing.F) {
	f.Add([]byte{0, 9, 1, 3, 4, 2, 11, 0, 3, 5, 1, 7, 3, 1}, uint16(40))
	f.Add([]byte{0, 0, 10, 0, 1, 1, 3, 3, 1, 2, 4, 3, 6, 1, 6, 2, 3, 3}, uint16(25))
	f.Add([]byte{9, 1, 1, 1, 5, 0, 7, 0, 4, 1, 1, 2, 6, 5, 11, 1}, uint16(10))
	f.Add([]byte{6, 1, 1, 2, 4, 4, 4, 4, 11, 1, 8, 3, 2, 9, 11, 2}, uint16(200))
	f.Fuzz(func(t *testing.T, data []byte, budget16 uint16) {
		msgs := genHistory(data)
		budget := int(budget16%400) + 1
		orig := clone(msgs)
		var events []Event
		trim := func(in []Message) (Result, error) {
			events = events[:0]
			return TrimToRecentTurns(in, budget, WithOnTrim(func(e Event) { events = append(events, e) }))
		}
		res, err := trim(msgs)
		if err != nil && !isTooLarge(err) {
			t.Fatalf("unexpected error %v for %v", err, render(msgs))
		}
		// 8: input untouched.
		if !reflect.DeepEqual(orig, msgs) {
			t.Fatal("input modified")
		}
		// 10: one event exactly when trimmed or swept, with the Result's
		// numbers.
		if (res.Trimmed || res.OrphansRemoved > 0) != (len(events) == 1) || len(events) > 1 {
			t.Fatalf("trimmed=%v orphans=%d events=%d", res.Trimmed, res.OrphansRemoved, len(events))
		}
		if len(events) == 1 && !reflect.DeepEqual(stripLabels(events[0]), eventOf(res, ReasonBudget, 0)) {
			t.Fatalf("event %+v does not match result", events[0])
		}
		// Structure: no orphans, no stacked breadcrumbs, Kept/Dropped coherent.
		checkResult(t, msgs, res, true)
		if got := Estimate(res.Messages, nil); got != res.TokensAfter {
			t.Fatalf("TokensAfter %d, recount %d", res.TokensAfter, got)
		}
		swept, _ := SweepOrphans(msgs)
		turns := Turns(swept)
		if res.KeptTurns+res.DroppedTurns != len(turns) {
			t.Fatalf("kept %d + dropped %d turns != %d", res.KeptTurns, res.DroppedTurns, len(turns))
		}
		// TokensBefore is exact, or -1 when a trim stopped counting early.
		before := Estimate(swept, nil)
		if res.TokensBefore != before && (res.TokensBefore != -1 || !res.Trimmed) {
			t.Fatalf("TokensBefore %d, the swept history counts %d", res.TokensBefore, before)
		}
		full, _ := TrimToRecentTurns(msgs, budget, WithFullCount())
		if full.TokensBefore != before {
			t.Fatalf("WithFullCount: TokensBefore %d, the swept history counts %d", full.TokensBefore, before)
		}
		switch {
		case before <= budget:
			// 3: fits, returned unchanged.
			if res.Trimmed || res.TokensAfter != before || !reflect.DeepEqual(res.Messages, swept) {
				t.Fatalf("history that fits was changed")
			}
		case err == nil:
			// 4: fits after trimming, and dropping one turn fewer would not.
			if res.TokensAfter > budget {
				t.Fatalf("over budget without error: %d > %d", res.TokensAfter, budget)
			}
			// (With one turn dropped the alternative is no trim at all,
			// which did not fit.)
			if res.DroppedTurns > 1 {
				// Keeping one more turn: its tokens come back, and the
				// pinned summary becomes the newest one before it.
				back := turns[res.DroppedTurns-1]
				alt := res.TokensAfter + Estimate(swept[back.Start:back.End], nil)
				alt -= newestSummaryTokens(swept[:back.End])
				alt += newestSummaryTokens(swept[turns[0].Start:back.Start])
				if alt <= budget {
					t.Fatalf("dropped turn %d although it would have fit", res.DroppedTurns-1)
				}
			}
		default:
			// 5: it does not fit, and it is the smallest plan: only the
			// latest turn is left, or the oldest kept turn is no larger
			// than the breadcrumb that would replace it.
			if res.TokensAfter <= budget {
				t.Fatalf("too-large error with %d tokens", res.TokensAfter)
			}
			if res.KeptTurns > 1 {
				first := turns[res.DroppedTurns]
				if Estimate(swept[first.Start:first.End], nil) > Estimate([]Message{Breadcrumb()}, nil) {
					t.Fatalf("too-large error with %d turns kept, the oldest larger than a breadcrumb", res.KeptTurns)
				}
			}
		}
		if len(turns) > 0 {
			last := turns[len(turns)-1]
			if !reflect.DeepEqual(res.Messages[len(res.Messages)-last.Len():], swept[last.Start:]) {
				t.Fatal("latest turn not kept whole")
			}
		}
		// 8: deterministic and stable: the same call again, and a trim of
		// the result, change nothing.
		again, err2 := trim(msgs)
		if !reflect.DeepEqual(again, res) || (err == nil) != (err2 == nil) {
			t.Fatal("not deterministic")
		}
		re, _ := TrimToRecentTurns(res.Messages, budget)
		if re.Trimmed || !reflect.DeepEqual(re.Messages, res.Messages) {
			t.Fatalf("trimming a result again changed it:\n%v\n%v", render(res.Messages), render(re.Messages))
		}
		// The ladder too, over budget as well: its plan is the smallest
		// its rules allow, so trimming it again changes nothing.
		for _, lopts := range [][]Option{{WithStepTrim()}, {WithStepTrim(), WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1})},
			{WithTask(-1, ElideOptions{KeepRecent: 1, MinTokens: -1, Digest: 4})}} {
			lr, lerr := TrimToRecentTurns(msgs, budget, lopts...)
			if lerr != nil && !isTooLarge(lerr) {
				t.Fatalf("ladder: unexpected error %v", lerr)
			}
			checkResult(t, msgs, lr, true)
			lre, _ := TrimToRecentTurns(lr.Messages, budget, lopts...)
			if !reflect.DeepEqual(render(lre.Messages), render(lr.Messages)) {
				t.Fatalf("ladder: trimming a result again changed it:\n%v\n%v", render(lr.Messages), render(lre.Messages))
			}
		}
	})
}

func isTooLarge(err error) bool {
	_, ok := err.(*BudgetError)
	return ok
}

// newestSummaryTokens returns the tokens of the newest summary in msgs
// that is not in its leading block, or 0.
func newestSummaryTokens(msgs []Message) int {
	for i := len(msgs) - 1; i >= leadEnd(msgs); i-- {
		if msgs[i].Kind == KindSummary {
			return Heuristic().CountMessage(msgs[i])
		}
	}
	return 0
}

// FuzzTrimmerLadder feeds growing prefixes of a generated history (mid-history
// summaries, parallel calls, orphans, nudges) to a Trimmer and to the
// stateless trim, both with the whole ladder (low water, elision, step trim),
// and checks what must hold for every request:
//
//   - the result is valid, well paired, counted right and within budget
//     unless the error says why;
//   - whatever was trimmed is announced: when a message the sweep kept is
//     missing before the newest kept one, a breadcrumb is in the result;
//   - a too-large error is never false: the result, trimmed again with the
//     same options, still does not fit, and a result that fits comes back
//     unchanged;
//   - between two plans of the Trimmer (no event), its prompt extends the
//     previous one, whose calls left unanswered the sweep stripped aside.
//
// A keep of 128 or more adds large call arguments and ClearArguments.
func FuzzTrimmerLadder(f *testing.F) {
	f.Add([]byte{0, 9, 1, 200, 9, 30, 1, 3, 4, 2, 11, 200, 4, 5, 11, 7, 1, 1, 9, 3, 4, 1, 11, 3}, uint16(90), uint8(3))
	f.Add([]byte{4, 1, 11, 250, 1, 2, 3, 120, 9, 4, 3, 2}, uint16(60), uint8(0))
	f.Add([]byte{0, 0, 1, 250, 9, 10, 1, 90, 3, 1, 1, 5, 3, 1}, uint16(100), uint8(1))
	f.Add([]byte{0, 9, 1, 200, 4, 4, 11, 200, 4, 2, 11, 7, 1, 1, 5, 6, 11, 30, 4, 8, 11, 3, 1, 2}, uint16(300), uint8(128+2))
	f.Add([]byte{1, 2, 4, 10, 11, 200, 4, 20, 11, 100, 4, 30, 11, 9, 4, 40, 11, 3, 4, 50, 11, 2}, uint16(250), uint8(128+4+1))
	f.Add([]byte{0, 9, 1, 200, 4, 4, 11, 200, 4, 2, 11, 7, 1, 1, 5, 6, 11, 230, 4, 8, 11, 3, 1, 2}, uint16(60), uint8(64+2))
	f.Fuzz(func(t *testing.T, data []byte, budget16 uint16, keep uint8) {
		clearArgs := keep >= 128
		msgs := genHistoryArgs(data, clearArgs)
		if len(msgs) > 60 {
			msgs = msgs[:60] // every prefix is trimmed: keep the work bounded
		}
		budget := int(budget16%600) + 20
		eo := ElideOptions{KeepRecent: int(keep%4) - 1, MinTokens: -1}
		if clearArgs {
			eo.ClearArguments = 16
		}
		if keep&64 != 0 { // digests and the cut rung
			eo.Digest, eo.Cut = 5, true
		}
		opts := []Option{
			WithLowWater(0.8), WithStepTrim(), WithElision(eo),
			WithTrigger([]float64{1, 0.9, 0.85}[keep/4%3]),
		}
		plans := 0
		tr := NewTrimmer(append(slices.Clip(opts), WithOnTrim(func(Event) { plans++ }))...)
		var prev Result      // tr's previous result
		var prevIn []Message // and its transcript
		// The same with a summariser: summaries replace breadcrumbs at the
		// maintenance points that drop turns; every other invariant holds.
		summarizing := NewTrimmer(append(slices.Clip(opts), WithSummarizer(SummarizerFunc(
			func(_ context.Context, dropped []Message, prev *Message) (Message, error) {
				n := len(dropped)
				if prev != nil {
					n += len(prev.Content)
				}
				return Message{Role: RoleUser, Content: strings.Repeat("s", n%50)}, nil
			}), SummaryOptions{MaxTokens: 30}))...)
		for n := 1; n <= len(msgs); n++ {
			in := msgs[:n]
			for _, trim := range []func() (Result, error){
				func() (Result, error) {
					before := plans
					res, err := tr.Trim(in, budget)
					if res.Trimmed && plans == before {
						checkExtends(t, prevIn, in, prev, res)
					}
					prev, prevIn = res, in
					return res, err
				},
				func() (Result, error) { return TrimToRecentTurns(in, budget, opts...) },
				func() (Result, error) { return summarizing.Trim(in, budget) },
			} {
				res, err := trim()
				if err != nil && !isTooLarge(err) {
					t.Fatalf("n=%d: unexpected error %v", n, err)
				}
				checkResult(t, in, res, true)
				if got := Estimate(res.Messages, nil); got != res.TokensAfter {
					t.Fatalf("n=%d: TokensAfter %d, recount %d", n, res.TokensAfter, got)
				}
				if err == nil && res.TokensAfter > budget {
					t.Fatalf("n=%d: over budget without an error", n)
				}
				checkAnnounced(t, in, res)
				re, err2 := TrimToRecentTurns(res.Messages, budget, opts...)
				if err != nil && err2 == nil && re.TokensAfter <= budget && !re.Trimmed {
					t.Fatalf("n=%d: false too-large error: the result fits as it is (%d <= %d)", n, re.TokensAfter, budget)
				}
				if err == nil && (re.Trimmed || !reflect.DeepEqual(re.Messages, res.Messages)) {
					t.Fatalf("n=%d: a result that fits changed when trimmed again", n)
				}
			}
		}
	})
}

// checkExtends fails unless res's prompt, for the transcript in, starts
// with prev's, for the transcript prevIn (a prefix of in), less prev's
// tail from the first message the sweep removed or stripped for want of a
// result that has arrived since: it comes back with its result.
func checkExtends(t *testing.T, prevIn, in []Message, prev, res Result) {
	t.Helper()
	back := len(prevIn) // the first message of prevIn the sweep treats differently in in
	before, after := sweptCalls(prevIn), sweptCalls(in)
	for i := range prevIn {
		if before[i] != after[i] {
			back = i
			break
		}
	}
	cmp := prev.Messages
	for j, k := range prev.Kept {
		if k >= back {
			cmp = cmp[:j]
			break
		}
	}
	if len(res.Messages) < len(cmp) || !reflect.DeepEqual(res.Messages[:len(cmp)], cmp) {
		t.Fatalf("the Trimmer rewrote its prompt without a new plan:\n%v\n%v", render(prev.Messages), render(res.Messages))
	}
}

// sweptCalls returns, for each message of msgs, how many of its tool calls
// survive the orphan sweep, or -1 when the sweep removes it.
func sweptCalls(msgs []Message) []int {
	out, index, _ := sweep(msgs, true)
	n := make([]int, len(msgs))
	if out == nil {
		for i := range msgs {
			n[i] = len(msgs[i].ToolCalls)
		}
		return n
	}
	for i := range n {
		n[i] = -1
	}
	for j, i := range index {
		n[i] = len(out[j].ToolCalls)
	}
	return n
}

// checkAnnounced fails when res leaves out a message of in that the orphan
// sweep would keep, before the newest message it sends, without a breadcrumb
// in the result to say so.
func checkAnnounced(t *testing.T, in []Message, res Result) {
	t.Helper()
	_, survivors, _ := sweep(in, true)
	if survivors == nil {
		survivors = identity(len(in))
	}
	kept := make(map[int]bool, len(res.Kept))
	newest, crumb := -1, false
	for i, k := range res.Kept {
		if k < 0 || res.Messages[i].Kind == KindBreadcrumb {
			crumb = true
		}
		if k >= 0 {
			kept[k] = true
			newest = max(newest, k)
		}
	}
	for _, k := range survivors {
		if k < newest && !kept[k] && in[k].Kind != KindBreadcrumb && !crumb {
			t.Fatalf("message %d was left out without a breadcrumb: kept %v", k, res.Kept)
		}
	}
}
