package langchaingo

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
)

// genAgent builds an agent conversation from data: tasks followed by many
// tool rounds whose responses come one per tool message or several in one,
// some wrapped in llms.CachedContent, some next to a text part, with an
// occasional unanswered call or stray response for the sweep.
func genAgent(data []byte) []llms.MessageContent {
	next := func() int {
		if len(data) == 0 {
			return -1
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	out := []llms.MessageContent{msg(llms.ChatMessageTypeSystem, txt("You are an agent. Use the tools."))}
	id := 0
	for {
		b := next()
		if b < 0 {
			return out
		}
		switch b % 8 {
		case 0:
			out = append(out, msg(llms.ChatMessageTypeHuman, txt("task "+strconv.Itoa(b)+": "+strings.Repeat("do the thing ", 1+b%7))))
		case 1:
			out = append(out, msg(llms.ChatMessageTypeAI, txt("progress note "+strings.Repeat("x", b%40))))
		case 7:
			// An unanswered call next to an answered one, and a stray response.
			id++
			c := "c" + strconv.Itoa(id)
			out = append(out, msg(llms.ChatMessageTypeAI, call(c, "grep", "{}"), call("u"+c, "grep", "{}")),
				msg(llms.ChatMessageTypeTool, resp(c, "grep", "found "+strings.Repeat("line\n", b%30)), resp("stray", "grep", "?")))
		default:
			n := 1 + b%3
			m := msg(llms.ChatMessageTypeAI)
			var rs []llms.ContentPart
			for k := range n {
				cid := "call_" + strconv.Itoa(id+k)
				m.Parts = append(m.Parts, call(cid, "read_file", `{"k":`+strconv.Itoa(k)+`}`))
				var r llms.ContentPart = resp(cid, "read_file", strings.Repeat("func f() { return 42 } // "+strconv.Itoa(b)+"\n", 1+(b*(k+3))%60))
				if (b+k)%3 == 0 {
					r = llms.WithCacheControl(r, &llms.CacheControl{Type: "ephemeral"})
				}
				rs = append(rs, r)
			}
			id += n
			out = append(out, m)
			if b%2 == 0 {
				if b%4 == 0 {
					rs = append(rs, txt("note"))
				}
				out = append(out, msg(llms.ChatMessageTypeTool, rs...))
			} else {
				for _, r := range rs {
					out = append(out, msg(llms.ChatMessageTypeTool, r))
				}
			}
		}
	}
}

// ladderOpts are the option sets the ladder tests trim with.
var ladderOpts = [][]history.Option{
	{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
	{history.WithElision(history.ElideOptions{MinTokens: 20}), history.WithStepTrim()},
	{history.WithElision(history.ElideOptions{MinTokens: -1, Placeholder: func(m history.Message, n int) string {
		return "[gone: \"" + m.ToolCallID + "\"]\n"
	}})},
	{history.WithStepTrim(), history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[context trimmed]"}),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[steps trimmed]"})},
}

// tools returns the tool results of conv, in order.
func tools(conv []history.Message) []history.Message {
	var out []history.Message
	for _, m := range conv {
		if m.Role == history.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// checkLadder trims in at budget with opts and checks what the degradation
// ladder must keep true through the adapter: the output is valid, counts
// exactly as the core's Result (so it fits whenever the Result does),
// holds every elided response as its placeholder and every kept one whole,
// leaves the input untouched, and is left alone by a second trim.
func checkLadder(t *testing.T, in []llms.MessageContent, budget int, opts ...history.Option) {
	t.Helper()
	before := mustJSON(t, in)
	out, res, err := Trim(in, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if mustJSON(t, in) != before {
		t.Fatalf("budget %d: input modified", budget)
	}
	if err := Validate(out); err != nil {
		t.Fatalf("budget %d: output does not validate: %v\n%s", budget, err, mustJSON(t, out))
	}
	back, err2 := ToHistory(out)
	if err2 != nil {
		t.Fatal(err2)
	}
	if got := history.Estimate(back, nil); got != res.TokensAfter {
		t.Fatalf("budget %d: native output counts %d, core counted %d", budget, got, res.TokensAfter)
	}
	if err == nil && res.TokensAfter > budget {
		t.Fatalf("budget %d: TokensAfter %d without an error", budget, res.TokensAfter)
	}
	got, want := tools(back), tools(res.Messages)
	if len(got) != len(want) {
		t.Fatalf("budget %d: %d responses in the output, core kept %d", budget, len(got), len(want))
	}
	elided := 0
	for i := range want {
		g, w := &got[i], &want[i]
		if g.ToolCallID != w.ToolCallID || g.Name != w.Name || g.Content != w.Content || !slices.Equal(g.Parts, w.Parts) {
			t.Fatalf("budget %d: response %d reads %+v, core kept %+v", budget, i, *g, *w)
		}
		if w.Kind == history.KindElided {
			elided++
		}
	}
	if elided != res.ElidedResults {
		t.Fatalf("budget %d: %d elided responses in the output, Result says %d", budget, elided, res.ElidedResults)
	}
	if err == nil {
		again, _, err := Trim(out, budget, opts...)
		if err != nil || mustJSON(t, again) != mustJSON(t, out) {
			t.Fatalf("budget %d: trimming the output again changed it (%v)", budget, err)
		}
	}
}

var ladderSeeds = [][]byte{
	{0, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 2, 3},
	{0, 2, 8, 7, 2, 0, 11, 12, 13, 14, 15, 22, 7},
	{9, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 17, 26, 35, 44},
	{0, 1, 2, 3, 9, 0, 20, 29, 38, 47, 56, 65, 74, 83, 88},
}

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size.
func TestTrimLadder(t *testing.T) {
	for _, seed := range adaptertest.Seeds(ladderSeeds) {
		for _, g := range []func([]byte) []llms.MessageContent{genAgent, gen} {
			in := g(seed)
			conv, err := ToHistory(in)
			if err != nil {
				t.Fatal(err)
			}
			total := history.Estimate(conv, nil)
			adaptertest.Sweep(t, seed, total, ladderOpts, func(t *testing.T, budget int, opts []history.Option) {
				checkLadder(t, in, budget, opts...)
			})
		}
	}
}

func FuzzTrimLadder(f *testing.F) {
	for _, s := range ladderSeeds {
		f.Add(s, uint16(300), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		checkLadder(t, genAgent(data), int(budget)+1, ladderOpts[int(o)%len(ladderOpts)]...)
	})
}

// TestTrimElidedForms: an elided response keeps its id, name and
// cache-control wrapper, holds the placeholder, and stays in its tool
// message with the other parts untouched.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	cc := &llms.CacheControl{Type: "ephemeral"}
	note := txt("continue")
	in := []llms.MessageContent{
		msg(llms.ChatMessageTypeHuman, txt("task")),
		msg(llms.ChatMessageTypeAI, call("a", "read", "{}"), call("b", "grep", "{}")),
		msg(llms.ChatMessageTypeTool, resp("a", "read", big), llms.WithCacheControl(resp("b", "grep", big), cc), note),
		msg(llms.ChatMessageTypeAI, txt("done")),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.Name + "]" }
	out, res, err := Trim(in, 120, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 2 || len(out) != len(in) {
		t.Fatalf("elided %d of 2 responses, %d messages", res.ElidedResults, len(out))
	}
	want := []llms.ContentPart{resp("a", "read", "[elided read]"), llms.WithCacheControl(resp("b", "grep", "[elided grep]"), cc), note}
	if !slices.EqualFunc(out[2].Parts, want, func(a, b llms.ContentPart) bool { return a == b }) || out[2].Role != llms.ChatMessageTypeTool {
		t.Errorf("got  %#v\nwant %#v", out[2].Parts, want)
	}
	for _, j := range []int{0, 1, 3} {
		if !sameParts(out[j], in[j]) {
			t.Errorf("message %d is not the caller's", j)
		}
	}
	if in[2].Parts[0].(llms.ToolCallResponse).Content != big {
		t.Error("the caller's parts were modified")
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output, with custom notices and step trimming: notices
// never stack, and the latest task is never lost to an old step notice.
func TestRepeatedTrimNoStacking(t *testing.T) {
	turnCrumb := history.Message{Role: history.RoleUser, Content: "[ältere Runden ausgelassen]"}
	stepCrumb := history.Message{Role: history.RoleUser, Content: "[ältere Schritte ausgelassen]"}
	for _, opts := range [][]history.Option{
		{history.WithBreadcrumb(turnCrumb), history.WithStepTrim()},
		{history.WithBreadcrumb(turnCrumb), history.WithStepBreadcrumb(stepCrumb), history.WithStepTrim()},
		{history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[trimmed]"}), history.WithStepTrim(),
			history.WithElision(history.ElideOptions{MinTokens: -1})},
		{history.WithStepTrim()},
	} {
		turn, step, _ := history.Breadcrumbs(opts...)
		in := []llms.MessageContent{msg(llms.ChatMessageTypeSystem, txt("sys"))}
		task := ""
		for round := range 60 {
			if round%15 == 0 {
				task = "task " + strconv.Itoa(round) + " " + strings.Repeat("details ", 10)
				in = append(in, msg(llms.ChatMessageTypeHuman, txt(task)))
			}
			cid := "c" + strconv.Itoa(round)
			in = append(in, msg(llms.ChatMessageTypeAI, call(cid, "run", "{}")),
				msg(llms.ChatMessageTypeTool, resp(cid, "run", strings.Repeat("output line\n", 20))))
			out, _, err := Trim(in, 400, opts...)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			// At most one turn notice, at most one step notice per task.
			turns, steps, tasks := 0, 0, 0
			for _, m := range out {
				if len(m.Parts) != 1 {
					continue
				}
				p, _ := m.Parts[0].(llms.TextContent)
				switch p.Text {
				case turn.Content:
					turns++
				case step.Content:
					steps++
				case task:
					steps = 0
					tasks++
				}
				if turns > 1 || steps > 1 {
					t.Fatalf("round %d: notices stack: %s", round, mustJSON(t, out))
				}
			}
			if tasks != 1 {
				t.Fatalf("round %d: the latest task appears %d times: %s", round, tasks, mustJSON(t, out))
			}
			in = out
		}
	}
}
