package anthropic

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// genAgent builds an agent request from data: tasks followed by many tool
// steps whose results come in every form (plain, is_error, cache_control,
// with an image, param.Override blocks and messages, trailing text), with
// an occasional unanswered call or stray result for the sweep.
func genAgent(data []byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	next := func() int {
		if len(data) == 0 {
			return -1
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	system := []anthropic.TextBlockParam{{Text: "You are an agent. Use the tools."}}
	var msgs []anthropic.MessageParam
	id := 0
	for {
		b := next()
		if b < 0 {
			return system, msgs
		}
		switch b % 8 {
		case 0:
			msgs = append(msgs, user(text("task "+strconv.Itoa(b)+": "+strings.Repeat("do the thing ", 1+b%7))))
		case 1:
			msgs = append(msgs, assistant(text("progress note "+strings.Repeat("x", b%40))))
		case 7:
			// An unanswered call next to an answered one, and a stray result.
			id++
			c, u := "c"+strconv.Itoa(id), "u"+strconv.Itoa(id)
			msgs = append(msgs, assistant(toolUse(c, "grep"), toolUse(u, "grep")),
				user(result(c, "found "+strings.Repeat("line\n", b%30)), result("stray_"+strconv.Itoa(b), "stray")))
		default:
			n := 1 + b%3
			blocks := []anthropic.ContentBlockParamUnion{anthropic.NewThinkingBlock("sig"+strconv.Itoa(b), "thinking "+strconv.Itoa(b))}
			var results []anthropic.ContentBlockParamUnion
			for k := range n {
				tid := "toolu_" + strconv.Itoa(id+k)
				blocks = append(blocks, toolUse(tid, "read_file"))
				body := strings.Repeat("func f() { return 42 } // "+strconv.Itoa(b)+"\n", 1+(b*(k+3))%60)
				var r anthropic.ContentBlockParamUnion
				switch (b + k) % 5 {
				case 0:
					r = anthropic.NewToolResultBlock(tid, body, true)
				case 1:
					r = cached(result(tid, body))
				case 2:
					r = param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(
						`{"type":"tool_result","tool_use_id":` + strconv.Quote(tid) + `,"content":` + strconv.Quote(body) + `,"x_trace":"t` + strconv.Itoa(b) + `"}`))
				default:
					r = result(tid, body)
				}
				results = append(results, r)
			}
			id += n
			if b%4 == 0 {
				results = append(results, text("keep going"))
			}
			reply := user(results...)
			if b%11 == 0 {
				raw, _ := json.Marshal(reply)
				var obj map[string]json.RawMessage
				_ = json.Unmarshal(raw, &obj)
				obj["x_vendor"] = json.RawMessage(`{"v":1}`)
				raw, _ = json.Marshal(obj)
				reply = param.Override[anthropic.MessageParam](json.RawMessage(raw))
			}
			msgs = append(msgs, assistant(blocks...), reply)
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
		history.WithStepBreadcrumb(history.Message{Role: history.RoleUser, Content: "[steps trimmed]"})},
}

// tools returns the tool results of hist, in order.
func tools(hist []history.Message) []history.Message {
	var out []history.Message
	for _, m := range hist {
		if m.Role == history.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// checkLadder trims the request at budget with opts and checks what the
// degradation ladder must keep true through the adapter: the output is
// valid, costs no more than the core counted (so it fits whenever the
// Result does), holds every elided result as its placeholder and every
// kept result whole, leaves the input untouched, and is left alone by a
// second trim.
func checkLadder(t *testing.T, system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, budget int, opts ...history.Option) {
	t.Helper()
	before := mustJSON(t, msgs)
	out, res, err := Trim(system, msgs, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if mustJSON(t, msgs) != before {
		t.Fatalf("budget %d: Trim modified its input", budget)
	}
	if err := Validate(out); err != nil {
		t.Fatalf("budget %d: output fails Validate: %v", budget, err)
	}
	back := mustHistory(t, system, out)
	if got := history.Estimate(back, nil); got > res.TokensAfter {
		t.Fatalf("budget %d: native output counts %d, core counted %d", budget, got, res.TokensAfter)
	}
	if err == nil && res.TokensAfter > budget {
		t.Fatalf("budget %d: no error but %d tokens", budget, res.TokensAfter)
	}
	got, want := tools(back), tools(res.Messages)
	if len(got) != len(want) {
		t.Fatalf("budget %d: %d tool results in the output, core kept %d", budget, len(got), len(want))
	}
	elided := 0
	for i := range want {
		g, w := &got[i], &want[i]
		if g.ToolCallID != w.ToolCallID {
			t.Fatalf("budget %d: result %d answers %q, want %q", budget, i, g.ToolCallID, w.ToolCallID)
		}
		if w.Kind == history.KindElided {
			elided++
			if g.Content != "" || !slices.Equal(g.Parts, []history.Part{{Type: history.PartText, Text: w.Content}}) {
				t.Fatalf("budget %d: elided result %d reads %+v, want the placeholder %q", budget, i, g, w.Content)
			}
		} else if !slices.Equal(g.Parts, w.Parts) {
			t.Fatalf("budget %d: result %d changed", budget, i)
		}
	}
	if elided != res.ElidedResults {
		t.Fatalf("budget %d: %d elided results in the output, Result says %d", budget, elided, res.ElidedResults)
	}
	if err == nil {
		again, _, err := Trim(system, out, budget, opts...)
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

// TestTrimLadder trims generated agent requests with elision and step
// trimming at budgets from 1 to above their size.
func TestTrimLadder(t *testing.T) {
	for _, seed := range adaptertest.Seeds(ladderSeeds) {
		for _, gen := range []func([]byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam){genAgent, genRequest} {
			system, msgs := gen(seed)
			total := history.Estimate(mustHistory(t, system, msgs), nil)
			adaptertest.Sweep(t, seed, total, ladderOpts, func(t *testing.T, budget int, opts []history.Option) {
				checkLadder(t, system, msgs, budget, opts...)
			})
		}
	}
}

func FuzzTrimLadder(f *testing.F) {
	for _, s := range ladderSeeds {
		f.Add(s, uint16(300), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		system, msgs := genAgent(data)
		checkLadder(t, system, msgs, int(budget)+1, ladderOpts[int(o)%len(ladderOpts)]...)
	})
}

// TestTrimElidedForms: an elided tool_result keeps its id, is_error,
// cache_control and unknown keys, holds one text block with the
// placeholder, and stays in its message with the other blocks untouched.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	over := param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(
		`{"type":"tool_result","tool_use_id":"c3","content":` + strconv.Quote(big) + `,"x_trace":"abc"}`))
	msgs := []anthropic.MessageParam{
		user(text("task")),
		assistant(anthropic.NewThinkingBlock("sig", "hm"), toolUse("c1", "read"), toolUse("c2", "read"), toolUse("c3", "read")),
		user(anthropic.NewToolResultBlock("c1", big, true), cached(result("c2", big)), over, cached(text("continue"))),
		assistant(text("done")),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.ToolCallID + "]" }
	out, res, err := Trim(nil, msgs, 200, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 3 || len(out) != len(msgs) {
		t.Fatalf("elided %d of 3 results, %d messages", res.ElidedResults, len(out))
	}
	want := `{"content":[` +
		`{"tool_use_id":"c1","is_error":true,"content":[{"text":"[elided c1]","type":"text"}],"type":"tool_result"},` +
		`{"tool_use_id":"c2","is_error":false,"cache_control":{"ttl":"1h","type":"ephemeral"},"content":[{"text":"[elided c2]","type":"text"}],"type":"tool_result"},` +
		`{"content":[{"text":"[elided c3]","type":"text"}],"tool_use_id":"c3","type":"tool_result","x_trace":"abc"},` +
		`{"text":"continue","cache_control":{"ttl":"1h","type":"ephemeral"},"type":"text"}],"role":"user"}`
	if got := mustJSON(t, out[2]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, j := range []int{0, 1, 3} {
		if mustJSON(t, out[j]) != mustJSON(t, msgs[j]) {
			t.Errorf("message %d changed", j)
		}
	}
	if !strings.Contains(mustJSON(t, msgs[2]), "0123456789") {
		t.Error("the caller's message was modified")
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
	system := []anthropic.TextBlockParam{{Text: "sys"}}
	for _, opts := range [][]history.Option{
		{history.WithBreadcrumb(turnCrumb), history.WithStepTrim()},
		{history.WithBreadcrumb(turnCrumb), history.WithStepBreadcrumb(stepCrumb), history.WithStepTrim()},
		{history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[trimmed]"}), history.WithStepTrim(),
			history.WithElision(history.ElideOptions{MinTokens: -1})},
		{history.WithStepTrim()},
	} {
		turn, step, _ := history.Breadcrumbs(opts...)
		var msgs []anthropic.MessageParam
		id := 0
		task := ""
		for round := range 60 {
			if round%15 == 0 {
				task = "task " + strconv.Itoa(round) + " " + strings.Repeat("details ", 10)
				msgs = append(msgs, user(text(task)))
			}
			id++
			cid := "toolu_" + strconv.Itoa(id)
			msgs = append(msgs, assistant(toolUse(cid, "run")), user(result(cid, strings.Repeat("output line\n", 20))))
			out, _, err := Trim(system, msgs, 400, opts...)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			// At most one turn notice, at most one step notice per task.
			turns, steps, tasks := 0, 0, 0
			for _, m := range out {
				switch mustJSON(t, m) {
				case mustJSON(t, user(text(turn.Content))):
					turns++
				case mustJSON(t, user(text(step.Content))):
					steps++
				case mustJSON(t, user(text(task))):
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
			msgs = out
		}
	}
}
