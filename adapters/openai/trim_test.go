package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
)

// bigArgs returns the JSON arguments of a write_file call carrying a
// file of n lines, worth clearing.
func bigArgs(path string, n int) string {
	return `{"path":` + strconv.Quote(path) + `,"content":` + strconv.Quote(strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {}\n", n)) + `}`
}

// clearOpts elides every result but the newest and clears the arguments
// of their calls from 16 tokens.
var clearOpts = []history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 16})}

// elidedSize returns the size of msgs once ElideToolResults has elided
// and cleared everything opts allow: the budget at which a trim must do
// all of it.
func elidedSize(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion) int {
	t.Helper()
	er, err := history.ElideToolResults(mustHistory(t, msgs), history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 16})
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(er.Messages, nil)
}

// restoreArgs returns the JSON object of the message out with the
// arguments of each call (tool_calls' function arguments and custom input,
// function_call's arguments) that are cleared ones replaced by orig's, by
// call ID (legacyCallID for function_call), and how many it replaced.
func restoreArgs(t *testing.T, out openai.ChatCompletionMessageParamUnion, orig map[string]string) (map[string]any, int) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(adaptertest.JSON(t, out)), &obj); err != nil {
		t.Fatal(err)
	}
	n := 0
	restore := func(holder map[string]any, key, id string) {
		if s, ok := holder[key].(string); ok && strings.HasPrefix(s, adaptertest.ClearedPrefix) {
			holder[key] = orig[id]
			n++
		}
	}
	calls, _ := obj["tool_calls"].([]any)
	for _, c := range calls {
		call := c.(map[string]any)
		id, _ := call["id"].(string)
		if f, ok := call["function"].(map[string]any); ok {
			restore(f, "arguments", id)
		}
		if f, ok := call["custom"].(map[string]any); ok {
			restore(f, "input", id)
		}
	}
	if f, ok := obj["function_call"].(map[string]any); ok {
		restore(f, "arguments", legacyCallID)
	}
	return obj, n
}

// originalArgs returns the arguments of every call of msgs by ID.
func originalArgs(t *testing.T, msgs []openai.ChatCompletionMessageParamUnion) map[string]string {
	t.Helper()
	args := map[string]string{}
	for _, m := range mustHistory(t, msgs) {
		for _, c := range m.ToolCalls {
			args[c.ID] = c.Arguments
		}
	}
	return args
}

// checkCleared checks a trim of in with arguments cleared: the output
// passes Validate, converts back to Result.Messages (the arguments the
// core cleared included) and counts what the core counted; each kept
// message is the caller's, byte for byte in JSON, once its cleared
// arguments are put back (the orphan sweep stripped none here), so that
// names, extra fields and unknown keys survive; and cleared calls number
// want. It returns the output.
func checkCleared(t *testing.T, in []openai.ChatCompletionMessageParamUnion, budget int, want int, opts ...history.Option) []openai.ChatCompletionMessageParamUnion {
	t.Helper()
	before := adaptertest.JSON(t, in)
	out, res, err := Trim(in, budget, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if adaptertest.JSON(t, in) != before {
		t.Fatal("Trim modified its input")
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
	assertRebuilt(t, out, res, opts)
	if got := history.Estimate(mustHistory(t, out), nil); got != res.TokensAfter || got > budget {
		t.Fatalf("the output counts %d, the core %d, budget %d", got, res.TokensAfter, budget)
	}
	orig := originalArgs(t, in)
	cleared := 0
	for j, k := range res.Kept {
		if k < 0 || res.Messages[j].Kind == history.KindElided {
			continue
		}
		got, n := restoreArgs(t, out[j], orig)
		var w map[string]any
		if err := json.Unmarshal([]byte(adaptertest.JSON(t, in[k])), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Fatalf("message %d, its cleared arguments put back, reads\n%s\nthe caller's\n%s", j, adaptertest.JSON(t, got), adaptertest.JSON(t, w))
		}
		cleared += n
	}
	if cleared != want {
		t.Fatalf("%d calls cleared, want %d", cleared, want)
	}
	again, _, err := Trim(out, budget, opts...)
	if err != nil || adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
		t.Fatalf("a second trim changed the output (%v)", err)
	}
	return out
}

// TestTrimClearedArguments: with ClearArguments, the calls whose results
// are elided are sent with the core's arguments in every form a call
// takes: a function call's arguments, a custom call's input, the
// deprecated function_call's arguments, typed or built with
// param.Override (the message, or only a call), their extra fields and
// unknown keys kept; a message with reasoning_content is sent as it was.
func TestTrimClearedArguments(t *testing.T) {
	out := strings.Repeat("wrote 30 lines\n", 40)
	big := bigArgs("server.go", 30)
	typedCall := functionCall("w1", "write_file", big)
	typedCall.OfFunction.SetExtraFields(map[string]any{"x_call": "kept"})
	typedAsst := assistantCalls("Writing both.", typedCall, functionCall("w2", "write_file", bigArgs("handler.go", 20)))
	typedAsst.OfAssistant.Name = openai.String("coder")
	typedAsst.OfAssistant.SetExtraFields(map[string]any{"x_msg": 1})

	custom := assistantCalls("", openai.ChatCompletionMessageToolCallUnionParam{OfCustom: &openai.ChatCompletionMessageCustomToolCallParam{
		ID: "p1", Custom: openai.ChatCompletionMessageCustomToolCallCustomParam{Name: "apply_patch", Input: "*** Begin Patch\n" + strings.Repeat("+line of the new file\n", 60) + "*** End Patch"}}})

	over := param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(`{"role":"assistant","content":"hm","vendor_field":{"x":1},` +
		`"tool_calls":[{"id":"o1","type":"function","x_call":true,"function":{"name":"write_file","arguments":` + strconv.Quote(big) + `,"x_fn":"f"}},` +
		`{"id":"o2","type":"custom","custom":{"name":"apply_patch","input":` + strconv.Quote(big) + `,"x_in":2}}]}`))
	overLegacy := param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(
		`{"role":"assistant","content":null,"function_call":{"name":"write_file","arguments":` + strconv.Quote(big) + `,"x_fc":3}}`))
	overCall := assistantCalls("", param.Override[openai.ChatCompletionMessageToolCallUnionParam](json.RawMessage(
		`{"id":"oc1","type":"function","function":{"name":"write_file","arguments":`+strconv.Quote(big)+`},"x_call":"c"}`)))

	thinking := assistantCalls("", functionCall("r1", "write_file", big))
	thinking.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": "The handler needs its file first."})

	tests := []struct {
		name    string
		steps   []openai.ChatCompletionMessageParamUnion
		cleared int
	}{
		{"typed function calls, name and extra fields kept", []openai.ChatCompletionMessageParamUnion{typedAsst, openai.ToolMessage(out, "w1"), openai.ToolMessage(out, "w2")}, 2},
		{"custom call input", []openai.ChatCompletionMessageParamUnion{custom, openai.ToolMessage(out, "p1")}, 1},
		{"deprecated function_call", []openai.ChatCompletionMessageParamUnion{legacyAssistant("", "write_file", big), legacyResult("write_file", out)}, 1},
		{"override message, unknown keys kept", []openai.ChatCompletionMessageParamUnion{over, openai.ToolMessage(out, "o1"), openai.ToolMessage(out, "o2")}, 2},
		{"override function_call", []openai.ChatCompletionMessageParamUnion{overLegacy, legacyResult("write_file", out)}, 1},
		{"override call in a typed message", []openai.ChatCompletionMessageParamUnion{overCall, openai.ToolMessage(out, "oc1")}, 1},
		{"reasoning_content: sent as it was", []openai.ChatCompletionMessageParamUnion{thinking, openai.ToolMessage(out, "r1")}, 0},
		{"small arguments kept", []openai.ChatCompletionMessageParamUnion{assistantCalls("", functionCall("s1", "read_file", `{"path":"a.go"}`)), openai.ToolMessage(out, "s1")}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent."), openai.UserMessage("Add the handlers.")}, tc.steps...)
			// The newest result is kept: a last step that elides nothing.
			in = append(in, assistantCalls("", functionCall("t1", "run_tests", `{}`)), openai.ToolMessage("ok", "t1"))
			res := checkCleared(t, in, elidedSize(t, in), tc.cleared, clearOpts...)
			if tc.cleared == 0 && adaptertest.JSON(t, res[2]) != adaptertest.JSON(t, in[2]) {
				t.Fatalf("a message whose calls were not cleared changed: %s", adaptertest.JSON(t, res[2]))
			}
		})
	}
}

// TestTrimClearedAndStripped: in one message the orphan sweep strips an
// unanswered call while the core clears another's arguments; RecoverOverflow
// rebuilds the same message.
func TestTrimClearedAndStripped(t *testing.T) {
	big := bigArgs("server.go", 30)
	out := strings.Repeat("wrote 30 lines\n", 40)
	for _, form := range []string{"typed", "override"} {
		t.Run(form, func(t *testing.T) {
			asst := assistantCalls("", functionCall("w1", "write_file", big), functionCall("lost", "write_file", big))
			if form == "override" {
				asst = param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(`{"role":"assistant","x":1,"tool_calls":[` +
					`{"id":"w1","type":"function","function":{"name":"write_file","arguments":` + strconv.Quote(big) + `}},` +
					`{"id":"lost","type":"function","function":{"name":"write_file","arguments":` + strconv.Quote(big) + `}}]}`))
			}
			in := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Add the handlers."), asst, openai.ToolMessage(out, "w1"),
				assistantCalls("", functionCall("t1", "run_tests", `{}`)), openai.ToolMessage("ok", "t1")}
			hist := mustHistory(t, in)
			total := history.Estimate(hist, nil)
			for name, trim := range map[string]func() ([]openai.ChatCompletionMessageParamUnion, history.Result, error){
				"Trim": func() ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
					return Trim(in, total/3, clearOpts...)
				},
				"RecoverOverflow": func() ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
					return RecoverOverflow(in, errors.New(overflowBody(total/2, total)), 1, clearOpts...)
				},
			} {
				got, res, err := trim()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := Validate(got); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				assertRebuilt(t, got, res, clearOpts)
				calls := mustHistory(t, got[1:2])[0].ToolCalls
				if res.OrphansRemoved != 1 || len(calls) != 1 || calls[0].ID != "w1" || !strings.HasPrefix(calls[0].Arguments, adaptertest.ClearedPrefix) {
					t.Fatalf("%s: %d orphans removed, calls %+v; want w1 alone, cleared", name, res.OrphansRemoved, calls)
				}
				if form == "override" && !strings.Contains(adaptertest.JSON(t, got[1]), `"x":1`) {
					t.Fatalf("%s: the override lost its unknown key: %s", name, adaptertest.JSON(t, got[1]))
				}
			}
		})
	}
}

// corpusMessages maps a conversation of the shared corpus to chat messages:
// system, user and tool messages as they are, assistant messages with
// their text and function calls. Every assistant message also carries a
// reasoning_content extra field, as DeepSeek's thinking mode returns and
// requires back (see TestReasoningContentSurvives); the corpus has no
// reasoning, so it is derived from name and position, 200 to 1,700 bytes.
func corpusMessages(name string, msgs []history.Message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for i, m := range msgs {
		switch m.Role {
		case history.RoleSystem:
			out = append(out, openai.SystemMessage(m.Content))
		case history.RoleUser:
			out = append(out, openai.UserMessage(m.Content))
		case history.RoleTool:
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case history.RoleAssistant:
			calls := make([]openai.ChatCompletionMessageToolCallUnionParam, len(m.ToolCalls))
			for k, c := range m.ToolCalls {
				calls[k] = functionCall(c.ID, c.Name, c.Arguments)
			}
			u := assistantCalls(m.Content, calls...)
			u.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": thought(name, i)})
			out = append(out, u)
		}
	}
	return out
}

// thought returns the synthetic reasoning of message i of the conversation
// name.
func thought(name string, i int) string {
	h := fnv.New32a()
	h.Write([]byte(name + "#" + strconv.Itoa(i)))
	n := h.Sum32()
	return strings.Repeat("Let me check step "+strconv.Itoa(i)+" before I act. ", 4+int(n%40))
}

// TestCorpus maps every conversation of the shared corpus to chat messages
// (corpusMessages) and trims it at adaptertest.CorpusBudgets with each
// option set of the ladder: every output passes Validate, converts back to
// Result.Messages (assertRebuilt), holds the caller's own messages but for
// elided results and assistant messages whose unanswered calls the orphan
// sweep stripped (never one whose arguments were cleared: each holds
// reasoning), keeps each assistant message's reasoning_content, even in
// such a copy, and keeps the latest user message. Every
// conversation is trimmed whole, under -race too (about 3,000 messages in
// all).
func TestCorpus(t *testing.T) {
	convs := adaptertest.Corpus(t, "../..")
	sets := adaptertest.LadderSets(true)
	var trims, violations, reasoning, clearable int
	for _, conv := range convs {
		in := corpusMessages(conv.Name, conv.Messages)
		// Without reasoning, the "clear" set would clear these calls.
		er, err := history.ElideToolResults(conv.Messages, history.ElideOptions{ClearArguments: 64})
		if err != nil {
			t.Fatal(err)
		}
		clearable += er.ClearedCalls
		latest := -1
		for i := range in {
			if in[i].OfUser != nil {
				latest = i
			}
		}
		total := adapter.Tokens(t, in)
		for _, budget := range adaptertest.CorpusBudgets(total) {
			for _, set := range sets {
				name, opts := set.Name, set.Opts
				out, res, err := Trim(in, budget, opts...)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					t.Fatalf("%s, %s, budget %d: %v", conv.Name, name, budget, err)
				}
				trims++
				if err := Validate(out); err != nil {
					violations++
					t.Errorf("%s, %s, budget %d: %v", conv.Name, name, budget, err)
				}
				assertRebuilt(t, out, res, opts)
				sawLatest := latest < 0
				for j, k := range res.Kept {
					switch {
					case k < 0:
					case k == latest:
						sawLatest = out[j].OfUser == in[k].OfUser
					case in[k].OfAssistant != nil:
						// The caller's own, or a copy with calls stripped:
						// either way its reasoning_content is the caller's.
						a, b := out[j].OfAssistant, in[k].OfAssistant
						if a == nil || a.ExtraFields()["reasoning_content"] != b.ExtraFields()["reasoning_content"] {
							t.Fatalf("%s, %s, budget %d: message %d's reasoning_content changed", conv.Name, name, budget, k)
						}
						if a != b && len(a.ToolCalls) == len(b.ToolCalls) {
							t.Fatalf("%s, %s, budget %d: message %d copied, but no call was stripped", conv.Name, name, budget, k)
						}
						reasoning++
					case res.Messages[j].Kind == history.KindElided:
						if out[j].OfTool == nil || out[j].OfTool.ToolCallID != in[k].OfTool.ToolCallID {
							t.Fatalf("%s, %s, budget %d: elided result %d lost its tool_call_id", conv.Name, name, budget, k)
						}
					case out[j] != in[k]:
						t.Fatalf("%s, %s, budget %d: kept message %d is not the caller's", conv.Name, name, budget, k)
					}
				}
				if !sawLatest {
					t.Fatalf("%s, %s, budget %d: the latest user message was lost", conv.Name, name, budget)
				}
			}
		}
	}
	if clearable == 0 {
		t.Error("the corpus has no call whose arguments ClearArguments would clear without reasoning: the \"clear\" set shows nothing")
	}
	t.Logf("%d conversations x %d budgets x %d option sets = %d trims: %d Validate violations, %d assistant messages kept with their reasoning_content; %d calls worth clearing, spared for their reasoning",
		len(convs), len(adaptertest.CorpusBudgets(1)), len(sets), trims, violations, reasoning, clearable)
}

// genAgent builds an agent conversation from data: tasks followed by many
// tool steps with results of varied sizes, in every form a tool result can
// take (string, text parts, param.Override, the legacy function message),
// half of the calling messages with a reasoning_content, and an occasional
// unanswered call or stray result for the sweep. Calls carry arguments
// worth clearing from b >= 64 on, in every form a call takes: function
// calls (typed, or in a message built with param.Override), custom calls,
// the legacy function_call.
func genAgent(data []byte) []openai.ChatCompletionMessageParamUnion {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are an agent. Use the tools.")}
	id := 0
	for _, v := range data {
		b := int(v)
		switch b % 9 {
		case 0:
			msgs = append(msgs, openai.UserMessage(adaptertest.TaskText(b)))
		case 1:
			msgs = append(msgs, openai.AssistantMessage(adaptertest.NoteText(b)))
		case 7:
			// An unanswered call next to an answered one, and a stray result.
			id++
			c := "c" + strconv.Itoa(id)
			asst := assistantCalls("", functionCall(c, "grep", genArgs(b)), functionCall("u"+strconv.Itoa(id), "grep", `{}`))
			if b%2 == 1 {
				// The same message as an application keeps the raw JSON.
				asst = param.Override[openai.ChatCompletionMessageParamUnion](json.RawMessage(`{"role":"assistant","x_vendor":1,"tool_calls":[` +
					`{"id":` + strconv.Quote(c) + `,"type":"function","function":{"name":"grep","arguments":` + strconv.Quote(genArgs(b)) + `}},` +
					`{"id":"u` + strconv.Itoa(id) + `","type":"custom","custom":{"name":"patch","input":` + strconv.Quote(genArgs(b)) + `}}]}`))
			}
			msgs = append(msgs, asst,
				openai.ToolMessage(adaptertest.FoundText(b), c),
				openai.ToolMessage("stray", "stray_"+strconv.Itoa(b)))
		case 8:
			msgs = append(msgs, legacyAssistant("", "lookup", genArgs(b)),
				legacyResult("lookup", strings.Repeat("legacy result ", 5+b%50)))
		default:
			n := 1 + b%3
			calls := make([]openai.ChatCompletionMessageToolCallUnionParam, n)
			for k := range calls {
				cid := "call_" + strconv.Itoa(id+k)
				calls[k] = functionCall(cid, "read_file", `{"path":"f`+strconv.Itoa(k)+`.go"}`)
				switch {
				case k == 1 && b >= 64:
					calls[k] = openai.ChatCompletionMessageToolCallUnionParam{OfCustom: &openai.ChatCompletionMessageCustomToolCallParam{
						ID: cid, Custom: openai.ChatCompletionMessageCustomToolCallCustomParam{Name: "apply_patch", Input: genArgs(b)}}}
				case k == 0:
					calls[k] = functionCall(cid, "write_file", genArgs(b))
				}
			}
			asst := assistantCalls("", calls...)
			if b%2 == 0 {
				// DeepSeek's thinking mode: reasoning that must come back.
				asst.OfAssistant.SetExtraFields(map[string]any{"reasoning_content": adaptertest.Words(b)})
			}
			msgs = append(msgs, asst)
			for k := range calls {
				cid := "call_" + strconv.Itoa(id+k)
				body := adaptertest.OutputText(b, k)
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
	return msgs
}

// genArgs returns the arguments of a call of genAgent: worth clearing from
// b >= 64 on.
func genArgs(b int) string {
	if b < 64 {
		return `{"path":"f.go"}`
	}
	return `{"path":"f.go","content":` + strconv.Quote(strings.Repeat("func handler() {}\n", b/8)) + `}`
}

// conversation is what the shared test drivers trim.
type conversation = []openai.ChatCompletionMessageParamUnion

// adapter describes this package to the shared ladder and repeated-trim
// drivers: one for one, exact counts, and notices rendered with their
// names.
var adapter = adaptertest.Adapter[conversation]{
	Trim:      Trim,
	ToHistory: ToHistory,
	Validate:  Validate,
	Agent:     genAgent,
	More:      []func([]byte) conversation{genConversation},
	Notices: []history.Option{history.WithStepTrim(),
		history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[context trimmed]", Name: "trimmer"}),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleUser, Content: "[steps trimmed]"})},
	Exact:          true,
	OneForOne:      true,
	ClearArguments: true,
	Check:          checkNative,
	Start:          func() conversation { return conversation{openai.SystemMessage("sys")} },
	Task: func(c conversation, text string) conversation {
		return slices.Concat(c, conversation{openai.UserMessage(text)})
	},
	Step: func(c conversation, id, output string) conversation {
		return slices.Concat(c, conversation{assistantCalls("", functionCall(id, "run", `{}`)), openai.ToolMessage(output, id)})
	},
	Len: func(c conversation) int { return len(c) },
}

// checkNative checks what the ladder keeps true of this package's native
// values: the output converts back to res.Messages, message for message
// (an exact rebuild, as history.ApplyFunc makes); a kept message is the
// caller's, byte for byte in JSON, unless the core stripped calls from it,
// cleared their arguments, or elided it; an elided result differs from
// the caller's only in its content (ids, names and extra fields kept); a
// message whose calls the core cleared, and none stripped, is the
// caller's once its cleared arguments are put back (extra fields and
// unknown keys kept), and holds no reasoning_content.
func checkNative(t *testing.T, in, out conversation, res history.Result) {
	t.Helper()
	assertRebuilt(t, out, res, nil)
	for j, k := range res.Kept {
		if k < 0 {
			continue
		}
		orig := mustHistory(t, in[k:k+1])[0]
		switch m := &res.Messages[j]; {
		case m.Kind == history.KindElided:
			if diff := adaptertest.JSONDiff(t, in[k], out[j]); !slices.Equal(diff, []string{"content"}) {
				t.Fatalf("elided result %d differs from the caller's in %v, want content only: %s", j, diff, adaptertest.JSON(t, out[j]))
			}
		case slices.Equal(m.ToolCalls, orig.ToolCalls):
			if adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, in[k]) {
				t.Fatalf("kept message %d changed", k)
			}
		case len(m.ToolCalls) == len(orig.ToolCalls): // arguments cleared
			args := map[string]string{}
			for _, c := range orig.ToolCalls {
				args[c.ID] = c.Arguments
			}
			got, n := restoreArgs(t, out[j], args)
			var w map[string]any
			if err := json.Unmarshal([]byte(adaptertest.JSON(t, in[k])), &w); err != nil {
				t.Fatal(err)
			}
			if n == 0 || !reflect.DeepEqual(got, w) || len(orig.Parts) > 0 && orig.Parts[0].Type == history.PartReasoning {
				t.Fatalf("message %d, %d cleared arguments put back, reads %s, the caller's %s", j, n, adaptertest.JSON(t, got), adaptertest.JSON(t, w))
			}
			clearedSeen.Add(int64(n))
		}
	}
}

// clearedSeen counts the calls checkNative saw with arguments cleared.
var clearedSeen atomic.Int64

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size, also clearing arguments.
func TestTrimLadder(t *testing.T) {
	before := clearedSeen.Load()
	adapter.Ladder(t)
	if n := clearedSeen.Load() - before; n == 0 {
		t.Error("no trim of the ladder cleared arguments")
	} else {
		t.Logf("%d calls sent with cleared arguments", n)
	}
}

func FuzzTrimLadder(f *testing.F) { adapter.FuzzLadder(f) }

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
		if got := adaptertest.JSON(t, out[j]); got != want[i] {
			t.Errorf("message %d = %s\nwant %s", j, got, want[i])
		}
	}
	for _, j := range []int{0, 1, 2, 6, 8} {
		if adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, msgs[j]) {
			t.Errorf("message %d changed", j)
		}
	}
	if !strings.Contains(adaptertest.JSON(t, msgs[4]), "0123456789") || !strings.Contains(adaptertest.JSON(t, msgs[5]), "0123456789") {
		t.Error("the caller's messages were modified")
	}
}

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output: notices never stack, and the latest task is
// never lost to an old step notice.
func TestRepeatedTrimNoStacking(t *testing.T) { adapter.Repeat(t) }

// TestGenerators: the conversations the drivers trim hold what they need.
func TestGenerators(t *testing.T) { adapter.CheckGenerators(t) }

// clientError returns the error the real openai-go client returns for an
// HTTP 400 with body.
func clientError(t *testing.T, body string) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err == nil {
		t.Fatal("the request succeeded")
	}
	return err
}

// overflowBody is OpenAI's answer to a request of used tokens in a window
// of limit.
func overflowBody(limit, used int) string {
	return `{"error":{"message":"This model's maximum context length is ` + strconv.Itoa(limit) +
		` tokens. However, your messages resulted in ` + strconv.Itoa(used) +
		` tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
}

// agentTurns returns a system prompt and n turns, each a task, one tool
// call of size words and a final answer.
func agentTurns(n, words int) []openai.ChatCompletionMessageParamUnion {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are an agent.")}
	for i := range n {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			openai.UserMessage("Task "+strconv.Itoa(i)+": look it up."),
			assistantCalls("", functionCall(id, "lookup", `{"i":`+strconv.Itoa(i)+`}`)),
			openai.ToolMessage(strings.Repeat("result line ", words), id),
			openai.AssistantMessage("Answer "+strconv.Itoa(i)+"."))
	}
	return msgs
}

func TestRecoverOverflow(t *testing.T) {
	msgs := agentTurns(6, 200)
	hist := mustHistory(t, msgs)
	total := history.Estimate(hist, nil)
	sized := errors.New(overflowBody(total, total*5/4)) // the provider counts 25% more
	tests := []struct {
		name    string
		msgs    []openai.ChatCompletionMessageParamUnion
		err     error
		attempt int
		opts    []history.Option
		// want: the error (nil, a sentinel the error wraps); kept: the
		// native indices output in order (-1 a notice), nil to skip.
		want  error
		kept  []int
		check func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error)
	}{
		{
			name: "not an overflow: input unchanged", msgs: msgs, attempt: 1,
			err:  errors.New(`{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}`),
			want: history.ErrNotOverflow,
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if len(out) != len(msgs) || &out[0] != &msgs[0] || cap(out) != len(out) {
					t.Fatalf("output is not the input clipped: len %d cap %d", len(out), cap(out))
				}
				if !adaptertest.Identity(res.Kept, len(msgs)) || res.Trimmed {
					t.Fatalf("Result %+v changed something", res.Kept)
				}
			},
		},
		{name: "nil error: not an overflow", msgs: msgs, attempt: 1, want: history.ErrNotOverflow},
		{
			// target 0.9 × total/1.25 = 72% of the library's count: two
			// of six turns go.
			name: "sizes stated, attempt 1", msgs: msgs, err: sized, attempt: 1,
			kept: []int{0, -1, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			// target 0.75 × total/1.25 = 60%: three turns go.
			name: "sizes stated, attempt 2 goes further", msgs: msgs, err: sized, attempt: 2,
			kept: []int{0, -1, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			name: "real client error, no sizes (Responses wording)", msgs: msgs, attempt: 1,
			err:  clientError(t, `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`),
			kept: []int{0, -1, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			name: "real client error, wrapped, sizes stated", msgs: msgs, attempt: 1,
			err:  clientError(t, overflowBody(total, total*5/4)),
			kept: []int{0, -1, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
		},
		{
			name: "elision before turns go", msgs: msgs, err: sized, attempt: 1,
			opts: []history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1})},
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if res.ElidedResults == 0 || res.DroppedTurns != 0 || len(out) != len(msgs) {
					t.Fatalf("elided %d, dropped %d turns: want elision only", res.ElidedResults, res.DroppedTurns)
				}
				got := adaptertest.JSON(t, out[3])
				if !strings.Contains(got, `"tool_call_id":"call_0"`) || !strings.Contains(got, "elided tool result: lookup") {
					t.Fatalf("elided result reads %s", got)
				}
			},
		},
		{
			name: "pinned message survives", msgs: msgs, err: sized, attempt: 2,
			opts: []history.Option{history.WithPin(4)},
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				// After the system prompt and the notice.
				if res.Kept[2] != 4 || adaptertest.JSON(t, out[2]) != adaptertest.JSON(t, msgs[4]) {
					t.Fatalf("pinned answer not kept after the notice: Kept %v", res.Kept)
				}
			},
		},
		{
			name: "nothing left to drop", msgs: agentTurns(1, 2000), err: sized, attempt: 1,
			want: history.ErrCannotRecover, kept: []int{0, 1, 2, 3, 4},
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				var re *history.RecoverError
				if !errors.As(err, &re) || re.Attempt != 1 || re.Used == 0 {
					t.Fatalf("%v: want a *history.RecoverError stating the sizes", err)
				}
			},
		},
		{
			name: "unconvertible message", msgs: []openai.ChatCompletionMessageParamUnion{{}}, err: sized, attempt: 1,
			want: history.ErrInvalidMessage,
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if out != nil {
					t.Fatal("output on a conversion error")
				}
			},
		},
		{
			name: "invalid option", msgs: msgs, err: sized, attempt: 1,
			opts: []history.Option{history.WithPin(3)}, // a tool result
			want: history.ErrInvalidOption,
			check: func(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, err error) {
				if out != nil {
					t.Fatal("output on an option error")
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tc.msgs)
			out, res, err := RecoverOverflow(tc.msgs, tc.err, tc.attempt, tc.opts...)
			if adaptertest.JSON(t, tc.msgs) != before {
				t.Fatal("RecoverOverflow modified its input")
			}
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if errors.Is(err, history.ErrCannotRecover) && tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatal("the *history.RecoverError does not wrap the provider's error")
			}
			if out != nil {
				if verr := Validate(out); verr != nil {
					t.Fatalf("output fails Validate: %v", verr)
				}
				assertRebuilt(t, out, res, tc.opts)
			}
			if tc.kept != nil {
				if !slices.Equal(res.Kept, tc.kept) {
					t.Fatalf("kept %v, want %v", res.Kept, tc.kept)
				}
				for j, k := range res.Kept {
					if k >= 0 && res.Modified == nil && adaptertest.JSON(t, out[j]) != adaptertest.JSON(t, tc.msgs[k]) {
						t.Fatalf("kept message %d is not the caller's", k)
					}
				}
			}
			if tc.check != nil {
				tc.check(t, out, res, err)
			}
		})
	}
}

// assertRebuilt fails t unless out, converted back as Trim reads it with
// opts, is res.Messages: the same messages in the same order, differing
// at most in Kind where the core marked a notice or an elided result:
// the wire format has no kinds, and a notice is recognised on the next
// trim only where trims put it (a pinned message lifted before it hides
// it; see TestPinRepeatedTrim).
func assertRebuilt(t *testing.T, out []openai.ChatCompletionMessageParamUnion, res history.Result, opts []history.Option) {
	t.Helper()
	back, err := each.Convert(out, opts)
	if err != nil {
		t.Fatalf("output does not convert: %v", err)
	}
	if len(back) != len(res.Messages) {
		t.Fatalf("output converts to %d messages, Result has %d", len(back), len(res.Messages))
	}
	for j := range back {
		g, w := back[j], res.Messages[j]
		if (w.Kind == history.KindElided || w.Kind == history.KindBreadcrumb) && g.Kind == "" {
			g.Kind = w.Kind
		}
		if adaptertest.JSON(t, g) != adaptertest.JSON(t, w) {
			t.Fatalf("output message %d converts to %s\nResult holds %s", j, adaptertest.JSON(t, g), adaptertest.JSON(t, w))
		}
	}
}

// The core's overflow classifier driven by the real openai-go client against
// an httptest server that answers as OpenAI does when the messages do not fit.

// callWithStatus sends one chat request through openai-go to a server that
// answers status with body (of contentType, application/json when empty),
// and returns the client's error.
func callWithStatus(t *testing.T, status int, contentType, body string) error {
	t.Helper()
	if contentType == "" {
		contentType = "application/json"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
	})
	if err == nil {
		t.Fatal("the request succeeded")
	}
	return err
}

func TestOverflowFromOpenAIClient(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
		ov     history.Overflow
		source string
		// contentType is application/json when empty.
		contentType string
		// noBody: the body has no "error" member, so RawJSON is empty.
		noBody bool
	}{
		{
			name: "context_length_exceeded with sizes", status: http.StatusBadRequest,
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			want:   true,
			ov:     history.Overflow{Used: 4294, Limit: 4097},
			source: "chathub-dev/chathub#126",
		},
		{
			name: "Responses API, no sizes", status: http.StatusBadRequest,
			body:   `{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}`,
			want:   true,
			source: "anomalyco/opencode#6071",
		},
		{
			name: "request larger than the TPM limit", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			source: "TheR1D/shell_gpt#653",
		},
		// Bodies that are not overflows.
		{
			name: "429 for long context requests", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"Extra usage is required for long context requests.","type":"rate_limit_error"},"request_id":"req_011CY5YJLsmBrFu4pcWKKt5b","type":"error"}`,
			source: "Wei-Shaw/sub2api#572",
		},
		{
			// The status is a field, which the core does not read, but
			// Error() names it: "429 Too Many Requests" rules it out.
			name: "429 whose message reads like an overflow", status: http.StatusTooManyRequests,
			body:   `{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			source: "constructed (the status rules it out)",
		},
		{
			name: "HTML 502 page from a proxy", status: http.StatusBadGateway, contentType: "text/html",
			body:   "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
			source: "constructed (nginx's default 502 page)", noBody: true,
		},
		{
			name: "empty 400 body", status: http.StatusBadRequest,
			source: "constructed", noBody: true,
		},
		{
			name: "truncated JSON body", status: http.StatusBadRequest,
			body:   `{"error":{"message":"This model's maximum con`,
			source: "constructed",
		},
		{
			name: "unrelated 400: invalid model", status: http.StatusBadRequest,
			body:   `{"error":{"message":"invalid model ID","type":"invalid_request_error","param":null,"code":null}}`,
			source: "danielmiessler/Fabric#1299 (the message and status; OpenAI's error envelope)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := callWithStatus(t, tc.status, tc.contentType, tc.body)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("openai-go returned %T, not *openai.Error: %v", err, err)
			}
			if (apiErr.RawJSON() == "") != tc.noBody {
				t.Fatalf("RawJSON() = %q; want it empty only for a body without an error member", apiErr.RawJSON())
			}
			wrapped := fmt.Errorf("agent turn 3: %w", err)
			ov, ok := history.ParseOverflow(wrapped)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (body from %s)\nerror: %v", ov, ok, tc.ov, tc.want, tc.source, err)
			}
			if history.IsContextOverflow(wrapped) != tc.want {
				t.Fatal("IsContextOverflow disagrees with ParseOverflow")
			}
			// Recent openai-go v3 releases print only the status in Error();
			// the body the SDK kept (the "error" object) must suffice.
			bodyOnly := statusOnly{status: tc.status, raw: apiErr.RawJSON()}
			if ov2, ok2 := history.ParseOverflow(bodyOnly); ok2 != tc.want || ov2 != tc.ov {
				t.Fatalf("from RawJSON alone: ParseOverflow = %+v, %v; want %+v, %v\nbody: %s", ov2, ok2, tc.ov, tc.want, apiErr.RawJSON())
			}
		})
	}
}

// statusOnly carries the body the real client kept, with the Error() text
// of recent openai-go v3 releases, which names only the HTTP status.
type statusOnly struct {
	status int
	raw    string
}

func (e statusOnly) Error() string {
	return fmt.Sprintf("OpenAI API error: %d %s", e.status, http.StatusText(e.status))
}
func (e statusOnly) RawJSON() string { return e.raw }
