package eino

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// genAgent builds an agent conversation from data: tasks followed by many
// tool rounds whose results carry tool names, multi-content parts,
// reasoning and Extra maps, with an occasional unanswered call or stray
// result for the sweep.
func genAgent(data []byte) []*schema.Message {
	next := func() int {
		if len(data) == 0 {
			return -1
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	out := []*schema.Message{schema.SystemMessage("You are an agent. Use the tools.")}
	id := 0
	for {
		b := next()
		if b < 0 {
			return out
		}
		switch b % 8 {
		case 0:
			out = append(out, schema.UserMessage("task "+strconv.Itoa(b)+": "+strings.Repeat("do the thing ", 1+b%7)))
		case 1:
			out = append(out, schema.AssistantMessage("progress note "+strings.Repeat("x", b%40), nil))
		case 7:
			// An unanswered call next to an answered one, and a stray result.
			id++
			c := "c" + strconv.Itoa(id)
			out = append(out, schema.AssistantMessage("", []schema.ToolCall{call(c, "grep", "{}"), call("u"+c, "grep", "{}")}),
				schema.ToolMessage("found "+strings.Repeat("line\n", b%30), c, schema.WithToolName("grep")),
				schema.ToolMessage("?", "stray"))
		default:
			n := 1 + b%3
			m := &schema.Message{Role: schema.Assistant, ReasoningContent: "thinking " + strconv.Itoa(b)}
			var rs []*schema.Message
			for k := range n {
				cid := "call_" + strconv.Itoa(id+k)
				m.ToolCalls = append(m.ToolCalls, call(cid, "read_file", `{"k":`+strconv.Itoa(k)+`}`))
				body := strings.Repeat("func f() { return 42 } // "+strconv.Itoa(b)+"\n", 1+(b*(k+3))%60)
				r := schema.ToolMessage(body, cid, schema.WithToolName("read_file"))
				switch (b + k) % 4 {
				case 0:
					//lint:ignore SA1019 runtimes still fill the deprecated MultiContent; elision must clear it.
					r.MultiContent = []schema.ChatMessagePart{{Type: schema.ChatMessagePartTypeText, Text: "exit 0"}}
				case 1:
					r.Extra = map[string]any{"trace": b}
				case 2:
					r.ReasoningContent = "why " + strconv.Itoa(b)
				}
				rs = append(rs, r)
			}
			id += n
			out = append(append(out, m), rs...)
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
	{history.WithStepTrim(), history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[context trimmed]", Name: "trimmer"}),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[steps trimmed]"})},
}

// checkLadder trims in at budget with opts and checks what the degradation
// ladder must keep true through the adapter: the output is valid, counts
// exactly as the core's Result (so it fits whenever the Result does),
// holds every elided result as its placeholder (marked in Extra) and every
// notice as the core's, leaves the input untouched, and is left alone by a
// second trim.
func checkLadder(t *testing.T, in []*schema.Message, budget int, opts ...history.Option) {
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
	if res.Kept == nil {
		return
	}
	elided := 0
	for j, k := range res.Kept {
		m := &res.Messages[j]
		switch {
		case k < 0:
			if back[j].Role != m.Role || back[j].Content != m.Content || back[j].Kind != history.KindBreadcrumb {
				t.Fatalf("budget %d: notice %d reads %+v, core inserted %+v", budget, j, back[j], *m)
			}
		case m.Kind == history.KindElided:
			elided++
			if back[j].Content != m.Content || len(back[j].Parts) != 0 || back[j].Kind != history.KindElided ||
				out[j].ToolCallID != in[k].ToolCallID || out[j].ToolName != in[k].ToolName {
				t.Fatalf("budget %d: elided result %d reads %+v, want %+v", budget, j, back[j], *m)
			}
			if tr, ok := in[k].Extra["trace"]; ok && out[j].Extra["trace"] != tr {
				t.Fatalf("budget %d: elided result %d lost its Extra", budget, j)
			}
		case len(m.ToolCalls) == len(in[k].ToolCalls):
			if out[j] != in[k] {
				t.Fatalf("budget %d: kept message %d is not the caller's", budget, k)
			}
		}
	}
	if elided != res.ElidedResults {
		t.Fatalf("budget %d: %d elided results in the output, Result says %d", budget, elided, res.ElidedResults)
	}
	if err == nil {
		again, _, err := Trim(out, budget, opts...)
		if err != nil || !slices.Equal(again, out) {
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
		for _, g := range []func([]byte) []*schema.Message{genAgent, gen} {
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

// TestTrimElidedForms: an elided tool message keeps its ids, names,
// metadata and Extra, holds the placeholder and nothing else, and is marked
// so that a later trim does not count it as a new result.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	r := schema.ToolMessage(big, "a", schema.WithToolName("read"))
	r.Name = "reader"
	r.ReasoningContent = "because"
	r.UserInputMultiContent = []schema.MessageInputPart{{Type: schema.ChatMessagePartTypeText, Text: big}}
	r.ResponseMeta = &schema.ResponseMeta{FinishReason: "stop"}
	r.Extra = map[string]any{"trace": 7}
	in := []*schema.Message{
		schema.UserMessage("task"),
		schema.AssistantMessage("", []schema.ToolCall{call("a", "read", "{}")}),
		r,
		schema.AssistantMessage("done", nil),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.Name + "]" }
	out, res, err := Trim(in, 60, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 1 || len(out) != len(in) {
		t.Fatalf("elided %d of 1 results, %d messages", res.ElidedResults, len(out))
	}
	want := `{"role":"tool","content":"[elided read]","name":"reader","tool_call_id":"a","tool_name":"read",` +
		`"response_meta":{"finish_reason":"stop"},"extra":{"histrim_kind":"elided","trace":7}}`
	if got := mustJSON(t, out[2]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, j := range []int{0, 1, 3} {
		if out[j] != in[j] {
			t.Errorf("message %d is not the caller's", j)
		}
	}
	if r.Content != big || r.ReasoningContent == "" || len(r.UserInputMultiContent) != 1 || len(r.Extra) != 1 {
		t.Error("the caller's message was modified")
	}
	if h, _ := ToHistory(out); h[2].Kind != history.KindElided {
		t.Errorf("elided message reads back as Kind %q", h[2].Kind)
	}
}

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output, with custom notices and step trimming: notices
// never stack, and the latest task is never lost to an old step notice,
// whether Trim's Extra marker survives or the runtime stored the notices
// without Extra.
func TestRepeatedTrimNoStacking(t *testing.T) {
	turnCrumb := history.Message{Role: history.RoleUser, Content: "[ältere Runden ausgelassen]"}
	stepCrumb := history.Message{Role: history.RoleUser, Content: "[ältere Schritte ausgelassen]"}
	for _, dropExtra := range []bool{false, true} {
		for _, opts := range [][]history.Option{
			{history.WithBreadcrumb(turnCrumb), history.WithStepTrim()},
			{history.WithBreadcrumb(turnCrumb), history.WithStepBreadcrumb(stepCrumb), history.WithStepTrim()},
			{history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[trimmed]"}), history.WithStepTrim(),
				history.WithElision(history.ElideOptions{MinTokens: -1})},
			{history.WithStepTrim()},
		} {
			turn, step, _ := history.Breadcrumbs(opts...)
			in := []*schema.Message{schema.SystemMessage("sys")}
			task := ""
			for round := range 60 {
				if round%15 == 0 {
					task = "task " + strconv.Itoa(round) + " " + strings.Repeat("details ", 10)
					in = append(in, schema.UserMessage(task))
				}
				cid := "c" + strconv.Itoa(round)
				in = append(in, schema.AssistantMessage("", []schema.ToolCall{call(cid, "run", "{}")}),
					schema.ToolMessage(strings.Repeat("output line\n", 20), cid))
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
					switch m.Content {
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
				if dropExtra {
					in = make([]*schema.Message, len(out))
					for i, m := range out {
						c := *m
						c.Extra = nil
						in[i] = &c
					}
				}
			}
		}
	}
}
