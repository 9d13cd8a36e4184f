package openai

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// genAgent builds an agent conversation from data: tasks followed by many
// tool steps with results of varied sizes, in every form a tool result can
// take (string, text parts, param.Override, the legacy function message),
// with an occasional unanswered call or stray result for the sweep.
func genAgent(data []byte) []openai.ChatCompletionMessageParamUnion {
	next := func() int {
		if len(data) == 0 {
			return -1
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are an agent. Use the tools.")}
	id := 0
	for {
		b := next()
		if b < 0 {
			return msgs
		}
		switch b % 9 {
		case 0:
			msgs = append(msgs, openai.UserMessage("task "+strconv.Itoa(b)+": "+strings.Repeat("do the thing ", 1+b%7)))
		case 1:
			msgs = append(msgs, openai.AssistantMessage("progress note "+strings.Repeat("x", b%40)))
		case 7:
			// An unanswered call next to an answered one, and a stray result.
			id++
			msgs = append(msgs, assistantCalls("", functionCall("c"+strconv.Itoa(id), "grep", `{}`), functionCall("u"+strconv.Itoa(id), "grep", `{}`)),
				openai.ToolMessage("found "+strings.Repeat("line\n", b%30), "c"+strconv.Itoa(id)),
				openai.ToolMessage("stray", "stray_"+strconv.Itoa(b)))
		case 8:
			msgs = append(msgs, legacyAssistant("", "lookup", `{"q":1}`),
				legacyResult("lookup", strings.Repeat("legacy result ", 5+b%50)))
		default:
			n := 1 + b%3
			calls := make([]openai.ChatCompletionMessageToolCallUnionParam, n)
			for k := range calls {
				calls[k] = functionCall("call_"+strconv.Itoa(id+k), "read_file", `{"path":"f`+strconv.Itoa(k)+`.go"}`)
			}
			msgs = append(msgs, assistantCalls("", calls...))
			for k := range calls {
				cid := "call_" + strconv.Itoa(id+k)
				body := strings.Repeat("func f() { return 42 } // "+strconv.Itoa(b)+"\n", 1+(b*(k+3))%60)
				var tool openai.ChatCompletionMessageParamUnion
				switch (b + k) % 4 {
				case 0:
					tool = openai.ToolMessage([]openai.ChatCompletionContentPartTextParam{{Text: body}, {Text: "exit 0"}}, cid)
				case 1:
					tool = param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(
						`{"role":"tool","tool_call_id":` + strconv.Quote(cid) + `,"content":` + strconv.Quote(body) + `,"x_trace":"t` + strconv.Itoa(b) + `"}`))
				default:
					tool = openai.ToolMessage(body, cid)
					tool.OfTool.SetExtraFields(map[string]any{"x_seq": b})
				}
				msgs = append(msgs, tool)
			}
			id += n
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
		history.WithStepBreadcrumb(history.Message{Role: history.RoleUser, Content: "[steps trimmed]"})},
}

// checkLadder trims msgs at budget with opts and checks what the degradation
// ladder must keep true through the adapter: the output is valid, counts
// exactly as the core's Result (so it fits whenever the Result does), shows
// every elided result as its placeholder and every notice as the core's,
// leaves the input untouched, and is left alone by a second trim.
func checkLadder(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion, budget int, opts ...history.Option) {
	t.Helper()
	before := mustJSON(t, msgs)
	out, res, err := Trim(msgs, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if mustJSON(t, msgs) != before {
		t.Fatalf("budget %d: Trim modified its input", budget)
	}
	if err := Validate(out); err != nil {
		t.Fatalf("budget %d: output fails Validate: %v", budget, err)
	}
	back := mustHistory(t, out)
	if got := history.Estimate(back, nil); got != res.TokensAfter {
		t.Fatalf("budget %d: native output counts %d, core counted %d", budget, got, res.TokensAfter)
	}
	if err == nil && res.TokensAfter > budget {
		t.Fatalf("budget %d: no error but %d tokens", budget, res.TokensAfter)
	}
	if res.Kept == nil {
		return
	}
	elided := 0
	for j, k := range res.Kept {
		m := &res.Messages[j]
		switch {
		case k < 0:
			if back[j].Content != m.Content || back[j].Role != m.Role {
				t.Fatalf("budget %d: notice %d is %+v, core inserted %+v", budget, j, back[j], *m)
			}
		case m.Kind == history.KindElided:
			elided++
			if back[j].Content != m.Content || len(back[j].Parts) != 0 || back[j].ToolCallID != m.ToolCallID || back[j].Name != m.Name {
				t.Fatalf("budget %d: elided result %d is %+v, want %+v", budget, j, back[j], *m)
			}
			for _, key := range []string{`"x_seq"`, `"x_trace"`} {
				if strings.Contains(mustJSON(t, msgs[k]), key) && !strings.Contains(mustJSON(t, out[j]), key) {
					t.Fatalf("budget %d: elided result %d lost its extra field %s: %s", budget, j, key, mustJSON(t, out[j]))
				}
			}
		case len(m.ToolCalls) == len(mustHistory(t, msgs[k:k+1])[0].ToolCalls):
			if mustJSON(t, out[j]) != mustJSON(t, msgs[k]) {
				t.Fatalf("budget %d: kept message %d changed", budget, k)
			}
		}
	}
	if elided != res.ElidedResults {
		t.Fatalf("budget %d: %d elided results in the output, Result says %d", budget, elided, res.ElidedResults)
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
	{0, 2, 8, 7, 2, 0, 11, 12, 13, 14, 15, 16, 7},
	{9, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 17, 26, 35, 44},
	{0, 1, 2, 3, 9, 0, 20, 29, 38, 47, 56, 65, 74, 83},
}

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size.
func TestTrimLadder(t *testing.T) {
	for _, seed := range adaptertest.Seeds(ladderSeeds) {
		for _, gen := range []func([]byte) []openai.ChatCompletionMessageParamUnion{genAgent, genConversation} {
			msgs := gen(seed)
			total := history.Estimate(mustHistory(t, msgs), nil)
			adaptertest.Sweep(t, seed, total, ladderOpts, func(t *testing.T, budget int, opts []history.Option) {
				checkLadder(t, msgs, budget, opts...)
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

// TestTrimElidedForms: each form of tool result becomes a copy holding the
// placeholder, keeping its id, name and extra fields.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	over := param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(
		`{"role":"tool","tool_call_id":"c3","content":` + strconv.Quote(big) + `,"x_trace":"abc"}`))
	extra := openai.ToolMessage([]openai.ChatCompletionContentPartTextParam{{Text: big}}, "c2")
	extra.OfTool.SetExtraFields(map[string]any{"x_seq": 7})
	msgs := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("sys"),
		openai.UserMessage("task"),
		assistantCalls("", functionCall("c1", "read", "{}"), functionCall("c2", "read", "{}"), functionCall("c3", "read", "{}")),
		openai.ToolMessage(big, "c1"), extra, over,
		legacyAssistant("", "lookup", "{}"),
		legacyResult("lookup", big),
		openai.AssistantMessage("done"),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.ToolCallID + "]" }
	out, res, err := Trim(msgs, 200, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 4 || len(out) != len(msgs) {
		t.Fatalf("elided %d of 4 results, %d messages", res.ElidedResults, len(out))
	}
	want := []string{
		`{"content":"[elided c1]","tool_call_id":"c1","role":"tool"}`,
		`{"content":"[elided c2]","tool_call_id":"c2","role":"tool","x_seq":7}`,
		`{"content":"[elided c3]","role":"tool","tool_call_id":"c3","x_trace":"abc"}`,
		`{"content":"[elided legacy_function_call]","name":"lookup","role":"function"}`,
	}
	for i, j := range []int{3, 4, 5, 7} {
		if got := mustJSON(t, out[j]); got != want[i] {
			t.Errorf("message %d = %s\nwant %s", j, got, want[i])
		}
	}
	for _, j := range []int{0, 1, 2, 6, 8} {
		if mustJSON(t, out[j]) != mustJSON(t, msgs[j]) {
			t.Errorf("message %d changed", j)
		}
	}
	if !strings.Contains(mustJSON(t, msgs[4]), "0123456789") || !strings.Contains(mustJSON(t, msgs[5]), "0123456789") {
		t.Error("the caller's messages were modified")
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
		msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("sys")}
		id := 0
		task := ""
		for round := range 60 {
			if round%15 == 0 {
				task = "task " + strconv.Itoa(round) + " " + strings.Repeat("details ", 10)
				msgs = append(msgs, openai.UserMessage(task))
			}
			id++
			cid := "call_" + strconv.Itoa(id)
			msgs = append(msgs, assistantCalls("", functionCall(cid, "run", `{}`)),
				openai.ToolMessage(strings.Repeat("output line\n", 20), cid))
			out, _, err := Trim(msgs, 400, opts...)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			// At most one turn notice, at most one step notice per task.
			turns, steps, tasks := 0, 0, 0
			for j, u := range out {
				c := mustHistory(t, out[j:j+1])[0]
				switch {
				case c.Content == turn.Content:
					turns++
				case c.Content == step.Content:
					steps++
				case u.OfUser != nil:
					steps = 0
					if c.Content == task {
						tasks++
					}
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
