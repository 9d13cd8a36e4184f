package gemini

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"google.golang.org/genai"
)

// genAgent builds an agent conversation from data: tasks followed by many
// rounds of function calls (with and without ids) whose responses come in
// several forms ({"output": ...}, other keys, inline data, thought
// signatures on the part, text beside them).
func genAgent(data []byte) []*genai.Content {
	next := func() int {
		if len(data) == 0 {
			return -1
		}
		b := int(data[0])
		data = data[1:]
		return b
	}
	var out []*genai.Content
	lastUser := false // the last content is a user content
	id := 0
	for {
		b := next()
		if b < 0 {
			return out
		}
		switch {
		case b%7 == 0 || len(out) == 0:
			out = append(out, text("user", "task "+strconv.Itoa(b)+": "+strings.Repeat("do the thing ", 1+b%7)))
			lastUser = true
		case b%7 == 1:
			out = append(out, text("model", "progress note "+strings.Repeat("x", b%40)))
			lastUser = false
		default:
			if !lastUser {
				out = append(out, text("user", "go on"))
			}
			n := 1 + b%3
			m := &genai.Content{Role: "model", Parts: []*genai.Part{{Text: "thinking", Thought: true, ThoughtSignature: []byte{byte(b)}}}}
			var rs []*genai.Part
			for k := range n {
				cid := ""
				if (b+k)%2 == 0 {
					cid = "id" + strconv.Itoa(id)
				}
				id++
				m.Parts = append(m.Parts, call(cid, "read_file", map[string]any{"k": k}))
				body := strings.Repeat("func f() { return 42 } // "+strconv.Itoa(b)+"\n", 1+(b*(k+3))%60)
				var r *genai.Part
				switch (b + k) % 4 {
				case 0:
					r = resp(cid, "read_file", map[string]any{"output": body})
				case 1:
					r = resp(cid, "read_file", map[string]any{"content": body, "lines": 3})
				case 2:
					r = resp(cid, "read_file", map[string]any{"error": body})
					r.ThoughtSignature = []byte("sig")
				default:
					r = resp(cid, "read_file", map[string]any{"output": body})
					r.FunctionResponse.Parts = []*genai.FunctionResponsePart{{InlineData: &genai.FunctionResponseBlob{MIMEType: "application/pdf", Data: []byte(body)}}}
				}
				rs = append(rs, r)
			}
			if b%5 == 0 {
				rs = append(rs, &genai.Part{Text: "note"})
			}
			out = append(out, m, &genai.Content{Role: "user", Parts: rs})
			lastUser = true
		}
	}
}

// ladderOpts are the option sets the ladder tests trim with.
var ladderOpts = [][]history.Option{
	{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
	{history.WithElision(history.ElideOptions{MinTokens: 20}), history.WithStepTrim()},
	{history.WithElision(history.ElideOptions{MinTokens: -1, Placeholder: func(m history.Message, n int) string {
		return "[gone: \"" + m.Name + "\"]\n"
	}})},
	{history.WithStepTrim(), history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[context trimmed]"}),
		history.WithElision(history.ElideOptions{MinTokens: 50})},
}

// tools returns the tool results of msgs, in order.
func tools(msgs []history.Message) []history.Message {
	var out []history.Message
	for _, m := range msgs {
		if m.Role == history.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// checkLadder trims in at budget with opts and checks what the degradation
// ladder must keep true through the adapter: the output is valid, costs no
// more than the core counted (so it fits whenever the Result does), holds
// every elided response as {"output": placeholder} and every kept one
// whole, leaves the input untouched, and is left alone by a second trim.
func checkLadder(t *testing.T, sys *genai.Content, in []*genai.Content, budget int, opts ...history.Option) {
	t.Helper()
	before := mustJSON(t, in)
	out, res, err := Trim(sys, in, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if mustJSON(t, in) != before {
		t.Fatalf("budget %d: input modified", budget)
	}
	if err := Validate(out); err != nil {
		t.Fatalf("budget %d: output does not validate: %v\n%s", budget, err, mustJSON(t, out))
	}
	all := out
	if sys != nil {
		all = append([]*genai.Content{{Role: "user", Parts: sys.Parts}}, out...)
	}
	back, err2 := ToHistory(all)
	if err2 != nil {
		t.Fatal(err2)
	}
	if got := history.Estimate(back, nil); got > res.TokensAfter {
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
		if g.Name != w.Name || g.Content != w.Content || !slices.Equal(g.Parts, w.Parts) {
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
		again, _, err := Trim(sys, out, budget, opts...)
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
	sys := text("", "You are an agent.")
	for _, seed := range adaptertest.Seeds(ladderSeeds) {
		for _, g := range []func([]byte) []*genai.Content{genAgent, gen} {
			in := g(seed)
			_, res, _ := Trim(nil, in, 1<<30)
			total := res.TokensBefore
			adaptertest.Sweep(t, seed, total, ladderOpts, func(t *testing.T, budget int, opts []history.Option) {
				checkLadder(t, nil, in, budget, opts...)
				checkLadder(t, sys, in, budget, opts...)
			})
		}
	}
}

func FuzzTrimLadder(f *testing.F) {
	for _, s := range ladderSeeds {
		f.Add(s, uint16(300), uint8(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		checkLadder(t, nil, genAgent(data), int(budget)+1, ladderOpts[int(o)%len(ladderOpts)]...)
	})
}

// TestTrimElidedForms: an elided function response keeps its id, name and
// part fields, answers {"output": placeholder} with no parts of its own,
// and stays in its content with the other parts untouched.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	r1 := resp("a", "read", map[string]any{"output": big})
	r1.ThoughtSignature = []byte("sig")
	r2 := resp("", "grep", map[string]any{"matches": []any{big}})
	r2.FunctionResponse.Parts = []*genai.FunctionResponsePart{{InlineData: &genai.FunctionResponseBlob{MIMEType: "image/png", Data: pngBytes(t, 64, 64)}}}
	note := &genai.Part{Text: "continue"}
	in := []*genai.Content{
		text("user", "task"),
		{Role: "model", Parts: []*genai.Part{call("a", "read", nil), call("", "grep", nil)}},
		{Role: "user", Parts: []*genai.Part{r1, r2, note}},
		text("model", "done"),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.Name + "]" }
	out, res, err := Trim(nil, in, 120, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 2 || len(out) != len(in) {
		t.Fatalf("elided %d of 2 responses, %d contents", res.ElidedResults, len(out))
	}
	want := `{"parts":[` +
		`{"functionResponse":{"id":"a","name":"read","response":{"output":"[elided read]"}},"thoughtSignature":"c2ln"},` +
		`{"functionResponse":{"name":"grep","response":{"output":"[elided grep]"}}},` +
		`{"text":"continue"}],"role":"user"}`
	if got := mustJSON(t, out[2]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if out[2].Parts[2] != note {
		t.Error("the text part beside the responses is not the caller's")
	}
	for _, j := range []int{0, 1, 3} {
		if out[j] != in[j] {
			t.Errorf("content %d is not the caller's", j)
		}
	}
	if r1.FunctionResponse.Response["output"] != big || len(r2.FunctionResponse.Parts) != 1 {
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
	sys := text("", "sys")
	for _, opts := range [][]history.Option{
		{history.WithBreadcrumb(turnCrumb), history.WithStepTrim()},
		{history.WithBreadcrumb(turnCrumb), history.WithStepBreadcrumb(stepCrumb), history.WithStepTrim()},
		{history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[trimmed]"}), history.WithStepTrim(),
			history.WithElision(history.ElideOptions{MinTokens: -1})},
		{history.WithStepTrim()},
	} {
		turn, step, _ := history.Breadcrumbs(opts...)
		var in []*genai.Content
		task := ""
		for round := range 60 {
			if round%15 == 0 {
				task = "task " + strconv.Itoa(round) + " " + strings.Repeat("details ", 10)
				in = append(in, text("user", task))
			}
			cid := "c" + strconv.Itoa(round)
			in = append(in, &genai.Content{Role: "model", Parts: []*genai.Part{call(cid, "run", nil)}},
				&genai.Content{Role: "user", Parts: []*genai.Part{resp(cid, "run", map[string]any{"output": strings.Repeat("output line\n", 20)})}})
			out, _, err := Trim(sys, in, 400, opts...)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			// At most one turn notice, at most one step notice per task.
			turns, steps, tasks := 0, 0, 0
			for _, c := range out {
				if len(c.Parts) != 1 {
					continue
				}
				switch c.Parts[0].Text {
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
