package anthropic

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/regroup"
)

// genAgent builds an agent request from data: tasks followed by many tool
// steps whose results come in every form (plain, is_error, cache_control,
// with an image, param.Override blocks and messages, trailing text), with
// an occasional unanswered call or stray result for the sweep. Most steps
// open with thinking; some do not (b%5 == 3), and many calls carry
// arguments large enough to clear (history.ElideOptions.ClearArguments),
// as typed blocks, param.Override blocks and inside param.Override
// messages.
func genAgent(data []byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	system := []anthropic.TextBlockParam{{Text: "You are an agent. Use the tools."}}
	var msgs []anthropic.MessageParam
	id := 0
	for _, v := range data {
		b := int(v)
		switch b % 8 {
		case 0:
			msgs = append(msgs, user(text(adaptertest.TaskText(b))))
		case 1:
			msgs = append(msgs, assistant(text(adaptertest.NoteText(b))))
		case 7:
			// An unanswered call next to an answered one, and a stray result.
			id++
			c, u := "c"+strconv.Itoa(id), "u"+strconv.Itoa(id)
			grep := anthropic.NewToolUseBlock(c, map[string]any{"pattern": strings.Repeat("func handler", 1+b%6)}, "grep")
			msgs = append(msgs, assistant(grep, toolUse(u, "grep")),
				user(result(c, adaptertest.FoundText(b)), result("stray_"+strconv.Itoa(b), "stray")))
		default:
			n := 1 + b%3
			var blocks []anthropic.ContentBlockParamUnion
			if b%5 != 3 {
				blocks = append(blocks, anthropic.NewThinkingBlock("sig"+strconv.Itoa(b), "thinking "+strconv.Itoa(b)))
			}
			var results []anthropic.ContentBlockParamUnion
			for k := range n {
				tid := "toolu_" + strconv.Itoa(id+k)
				switch (b + k) % 3 {
				case 0:
					blocks = append(blocks, toolUse(tid, "read_file"))
				case 1:
					blocks = append(blocks, anthropic.NewToolUseBlock(tid, map[string]any{"path": "src/" + strconv.Itoa(b) + ".go", "content": strings.Repeat("x := 1\n", 4+b%20)}, "write_file"))
				default:
					blocks = append(blocks, param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(
						`{"type":"tool_use","id":`+strconv.Quote(tid)+`,"name":"edit","input":{"old":"a","new":`+strconv.Quote(strings.Repeat("b", 30+b))+`},"x_trace":"t"}`)))
				}
				body := adaptertest.OutputText(b, k)
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
			step := assistant(blocks...)
			if b%13 == 6 {
				raw, _ := json.Marshal(step)
				var obj map[string]json.RawMessage
				_ = json.Unmarshal(raw, &obj)
				obj["x_vendor"] = json.RawMessage(`{"v":2}`)
				raw, _ = json.Marshal(obj)
				step = param.Override[anthropic.MessageParam](json.RawMessage(raw))
			}
			msgs = append(msgs, step, reply)
		}
	}
	return system, msgs
}

// request is what the shared test drivers trim: the messages and the
// system prompt Trim takes beside them.
type request struct {
	System   []anthropic.TextBlockParam
	Messages []anthropic.MessageParam
}

// asRequest turns a generator of system prompt and messages into one of
// requests.
func asRequest(gen func([]byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam)) func([]byte) request {
	return func(data []byte) request {
		system, msgs := gen(data)
		return request{system, msgs}
	}
}

// adapter describes this package to the shared ladder and repeated-trim
// drivers: the system prompt apart, tool results split out of their user
// messages, an elided result holding its placeholder as a text block.
var adapter = adaptertest.Adapter[request]{
	Trim: func(r request, budget int, opts ...history.Option) (request, history.Result, error) {
		out, res, err := Trim(r.System, r.Messages, budget, opts...)
		return request{r.System, out}, res, err
	},
	ToHistory:    func(r request) ([]history.Message, error) { return ToHistory(r.System, r.Messages) },
	Validate:     func(r request) error { return Validate(r.Messages) },
	Agent:        asRequest(genAgent),
	More:         []func([]byte) request{asRequest(genRequest)},
	ElidedAsPart: true,
	Start:        func() request { return request{System: []anthropic.TextBlockParam{{Text: "sys"}}} },
	Task: func(r request, s string) request {
		return request{r.System, slices.Concat(r.Messages, []anthropic.MessageParam{user(text(s))})}
	},
	Step: func(r request, id, output string) request {
		return request{r.System, slices.Concat(r.Messages, []anthropic.MessageParam{assistant(toolUse(id, "run")), user(result(id, output))})}
	},
	Len:            func(r request) int { return len(r.Messages) },
	ClearArguments: true,
	Check:          checkConvertsBack,
}

// checkConvertsBack checks that out, what Trim made of in with res,
// converts back (ToHistory) to res.Messages exactly, but for how the native
// form writes what the core changed: an elided result reads as one text
// part holding its placeholder, a notice as a user (or assistant) message
// with one text block (an assistant-role one as a user message before an
// assistant message that opens with thinking), the text of a user message whose tool_result blocks
// all went to the orphan sweep as a plain user message (a user message of
// text is a turn), an assistant message left with its thinking alone once
// the sweep stripped its calls as nothing, and the empty assistant message
// ToHistory inserts between two user messages holding results maps to no
// native message.
// So the native output is what the core decided, message for message.
func checkConvertsBack(t *testing.T, in, out request, res history.Result) {
	t.Helper()
	back, err := ToHistory(nil, out.Messages) // the Result describes the messages, not the system prompt
	if err != nil {
		t.Fatal(err)
	}
	want := asSent(t, in, res)
	if len(back) != len(want) {
		t.Fatalf("output converts back to %d messages, Result has %d to send:\n%+v\n%+v", len(back), len(want), back, want)
	}
	for j := range want {
		g, w := back[j], want[j]
		if w.Kind == history.KindBreadcrumb {
			g.Kind = w.Kind // a notice of custom text is not recognised without the trim's options
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("message %d converts back to\n%+v\nResult sends\n%+v", j, g, w)
		}
		for _, c := range g.ToolCalls {
			if strings.HasPrefix(c.Arguments, clearedPrefix) {
				clearedSeen.Add(1)
			}
		}
	}
}

// clearedSeen counts the calls checkConvertsBack saw sent with their
// arguments cleared.
var clearedSeen atomic.Int64

// keptResult reports whether res.Messages[j] follows, among the kept
// messages, a tool result converted from the same native message.
func keptResult(res history.Result, srcs []regroup.Slot, j int) bool {
	if res.Kept == nil {
		return true // nothing changed
	}
	native := srcs[res.Kept[j]].Native
	for p := j - 1; p >= 0 && res.Kept[p] >= 0 && srcs[res.Kept[p]].Native == native; p-- {
		if res.Messages[p].Role == history.RoleTool {
			return true
		}
	}
	return false
}

// beforeThinking reports whether the message after res.Messages[j] comes
// from an assistant message of in that opens with thinking (an
// assistant-role notice before it is rendered as a user message).
func beforeThinking(in request, srcs []regroup.Slot, res history.Result, j int) bool {
	if j+1 >= len(res.Kept) || res.Kept[j+1] < 0 {
		return false
	}
	n := srcs[res.Kept[j+1]].Native
	return n >= 0 && opensWithThinking(&in.Messages[n])
}

// reasoningOnly reports whether m holds reasoning parts only.
func reasoningOnly(m history.Message) bool {
	for _, p := range m.Parts {
		if p.Type != history.PartReasoning {
			return false
		}
	}
	return m.Content == ""
}

// asSent returns res.Messages (a trim of in) as their native rendering
// converts back: see checkConvertsBack.
func asSent(t *testing.T, in request, res history.Result) []history.Message {
	t.Helper()
	_, srcs, err := convert(nil, in.Messages, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []history.Message
	for j, m := range res.Messages {
		k := j
		if res.Kept != nil {
			k = res.Kept[j]
		}
		switch {
		case k >= 0 && srcs[k].Parts != nil && len(srcs[k].Parts) == 0:
			continue // the separator ToHistory inserted
		case k >= 0 && len(srcs[k].Calls) > 0 && len(m.ToolCalls) == 0 && reasoningOnly(m):
			continue // thinking left alone by the sweep: left out
		case k < 0:
			if m.Role != history.RoleAssistant || beforeThinking(in, srcs, res, j) {
				m.Role = history.RoleUser
			}
			m.Parts, m.Content = []history.Part{{Type: history.PartText, Text: m.Content}}, ""
		case m.Kind == history.KindElided:
			m.Parts, m.Content, m.Kind = []history.Part{{Type: history.PartText, Text: m.Content}}, "", ""
		case m.Kind == history.KindNudge && !keptResult(res, srcs, j):
			m.Kind = "" // a user message left with no tool_result block
		}
		want = append(want, m)
	}
	return want
}

// TestTrimLadder trims generated agent requests with elision and step
// trimming at budgets from 1 to above their size, also clearing the
// arguments of old calls: each output sends the calls the core counted,
// cleared ones cleared (checkConvertsBack, and the driver's call-by-call
// comparison).
func TestTrimLadder(t *testing.T) {
	before := clearedSeen.Load()
	adapter.Ladder(t)
	n := clearedSeen.Load() - before
	t.Logf("%d calls sent with their arguments cleared", n)
	if n == 0 {
		t.Error("no trim of the ladder cleared arguments")
	}
}

func FuzzTrimLadder(f *testing.F) { adapter.FuzzLadder(f) }

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
	if got := adaptertest.JSON(t, out[2]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, j := range []int{0, 1, 3} {
		if adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, msgs[j]) {
			t.Errorf("message %d changed", j)
		}
	}
	if !strings.Contains(adaptertest.JSON(t, msgs[2]), "0123456789") {
		t.Error("the caller's message was modified")
	}
	if err := Validate(out); err != nil {
		t.Error(err)
	}
}

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output: notices never stack, and the latest task is
// never lost to an old step notice.
func TestRepeatedTrimNoStacking(t *testing.T) { adapter.Repeat(t) }

// TestGenerators: the conversations the drivers trim hold what they need.
func TestGenerators(t *testing.T) { adapter.CheckGenerators(t) }
