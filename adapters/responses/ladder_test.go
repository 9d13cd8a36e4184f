package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// genAgent builds an agent conversation of a reasoning model from data:
// tasks followed by many steps, each a reasoning item and one to three
// parallel calls of the client-side tool types (function, custom, shell,
// local shell, apply_patch, program) with their outputs in order, reversed
// or interleaved, some built with param.Override; reasoning before output
// messages and hosted tool calls; and an occasional unanswered call (with
// its reasoning), stray output or reasoning item cut off by a user message,
// for the repair. Outputs that are never elided (screenshots, loaded tools,
// approvals) are left to genMixed. Some steps come without reasoning, and
// a third of the conversations have none but the items cut off (as from a
// model that does not reason, or whose reasoning was not kept): the call
// ids of such steps start with freePrefix. From b >= 64 on, calls carry
// arguments worth clearing (see toolPair).
func genAgent(data []byte) []Item {
	items := []Item{developer("You are an agent. Use the tools.")}
	id := 0
	next := func() string { id++; return strconv.Itoa(id) }
	// A third of the conversations come from a model that does not reason
	// (or whose reasoning was not kept): no reasoning item binds a step.
	thinks := len(data) == 0 || data[0]%3 != 1
	rsItem := func(id, summary, encrypted string) []Item {
		if !thinks {
			return nil
		}
		return []Item{reasoning(id, summary, encrypted)}
	}
	for _, v := range data {
		b := int(v)
		switch b % 9 {
		case 0:
			items = append(items, user(adaptertest.TaskText(b)))
		case 1:
			n := next()
			items = append(append(items, rsItem("rs_"+n, "", strings.Repeat("E", 20+b))...), output("msg_"+n, adaptertest.NoteText(b)))
		case 2:
			// Hosted tools inside one response.
			n := next()
			items = append(append(items, rsItem("rs_"+n, "searching", "ENC"+n)...), webSearch("ws_"+n))
			items = append(append(items, rsItem("rs_"+n+"b", "", "ENC")...), mcpCall("mcp_"+n, adaptertest.FoundText(b)), output("msg_"+n, adaptertest.Words(b)))
		case 7:
			// An unanswered call next to an answered one, a stray output, a
			// reasoning item cut off by the next task.
			n := next()
			c := "c" + n
			if !thinks {
				c = freePrefix + c
			}
			items = append(append(items, rsItem("rs_"+n, "", "ENC")...),
				functionCall(c, "grep", `{}`), functionCall("u"+n, "grep", `{}`),
				functionOutput(c, adaptertest.FoundText(b)), functionOutput("stray_"+n, "stray"),
				reasoning("rs_"+n+"x", "", "CUT"), user(adaptertest.Words(b)))
		default:
			n := 1 + b%3
			rs := next()
			free := !thinks || b%4 == 3 // a step without reasoning
			calls := make([]Item, n)
			outs := make([]Item, n)
			for k := range calls {
				cid := "call_" + next()
				if free {
					cid = freePrefix + cid
				}
				calls[k], outs[k] = toolPair(b+k, cid, adaptertest.OutputText(b, k))
			}
			if !free {
				items = append(items, reasoning("rs_"+rs, adaptertest.Words(b), "ENC"+rs))
			}
			switch b % 3 {
			case 0: // calls, then outputs in order
				items = append(append(items, calls...), outs...)
			case 1: // calls, then outputs in reverse
				items = append(items, calls...)
				for k := range outs {
					items = append(items, outs[len(outs)-1-k])
				}
			default: // each output right after its call
				for k := range calls {
					items = append(items, calls[k], outs[k])
				}
			}
		}
	}
	return items
}

// toolPair returns a call of one of the client-side tool types, chosen by
// b, and its output holding body. From b >= 64 on, the call's arguments
// are worth clearing: a file's content, a patch, a heredoc, a program.
func toolPair(b int, cid, body string) (call, out Item) {
	payload := "x"
	if b >= 64 {
		payload = strings.Repeat("func handler() {}\n", b/8)
	}
	switch b % 7 {
	case 1:
		return customCall(cid, "patcher", "*** Begin Patch\n"+payload), customOutput(cid, body)
	case 2:
		return shellCall(cid, "cat > x.go <<'EOF'\n"+payload+"EOF"), shellOutput(cid, body, "warning: x")
	case 3:
		c := localShellCall("lsh_"+cid, cid)
		c.OfLocalShellCall.Action.Command = []string{"sh", "-c", payload}
		return c, localShellOutput(cid, body)
	case 4:
		c := applyPatchCall(cid)
		c.OfApplyPatchCall.Operation.OfUpdateFile.Diff = "@@ -1 +1 @@\n+" + payload
		return c, applyPatchOutput(cid, body)
	case 5:
		return program(cid, "await tools.read(); // "+payload), programOutput(cid, body)
	case 6:
		// Both as an application keeps the raw JSON, with keys of its own.
		return overrideItem(`{"type":"function_call","id":"fc_` + cid + `","call_id":` + strconv.Quote(cid) + `,"name":"write_file","arguments":` +
				strconv.Quote(`{"path":"x.go","content":`+strconv.Quote(payload)+`}`) + `,"status":"completed","x_call":1}`),
			overrideItem(`{"type":"function_call_output","call_id":` + strconv.Quote(cid) + `,"output":` + strconv.Quote(body) + `,"x_trace":"t"}`)
	}
	return functionCall(cid, "write_file", `{"path":"f.go","content":`+strconv.Quote(payload)+`}`), functionOutput(cid, body)
}

// adapter describes this package to the shared ladder and repeated-trim
// drivers.
var adapter = adaptertest.Adapter[[]Item]{
	Trim:      Trim,
	ToHistory: ToHistory,
	Validate:  Validate,
	Agent:     genAgent,
	// Notices is nil: a system-role turn notice and a user-role step
	// notice. An assistant-role notice reads, without the options that
	// configure it, as part of the model output after it (one message
	// fewer than the core counted); TestAssistantNotice covers it.
	Exact:          true,
	ClearArguments: true,
	Check:          checkNative,
	Start:          func() []Item { return []Item{developer("sys")} },
	Task: func(c []Item, text string) []Item {
		return slices.Concat(c, []Item{user(text)})
	},
	Step: func(c []Item, id, out string) []Item {
		return slices.Concat(c, []Item{functionCall(id, "run", `{}`), functionOutput(id, out)})
	},
	Len: func(c []Item) int { return len(c) },
}

// checkNative checks what the ladder keeps true of this package's items:
// reasoning stays bound (checkBinding), and every item of the output is
// the caller's own (the same variant pointer, or an override's JSON), but
// for notices, elided outputs, which differ from the caller's only in
// their output, and calls whose arguments the core cleared, which differ
// only in their arguments (a custom tool call: its input), hold the
// cleared ones, and are function or custom tool calls the model made in a
// step without reasoning (their call ids start with freePrefix).
func checkNative(t *testing.T, in, out []Item, res history.Result) {
	t.Helper()
	checkBinding(t, in, out)
	orig := map[any]bool{}
	byCall := map[string][]Item{} // the outputs and calls with each call id
	for _, u := range in {
		orig[identity(t, u)] = true
		if v, _ := read(&u); v.cls == clsResult || v.cls == clsCall {
			byCall[v.callID] = append(byCall[v.callID], u)
		}
	}
	for j, u := range out {
		if orig[identity(t, u)] {
			continue
		}
		v, err := read(&u)
		if err != nil {
			t.Fatal(err)
		}
		if u.OfMessage != nil && v.content+joinPartText(v.parts) != "" && res.Kept != nil {
			continue // a notice
		}
		var want []string
		switch {
		case v.cls == clsResult && v.typ == "program_output":
			want = []string{"result"}
		case v.cls == clsResult:
			want = []string{"output"}
		case v.cls == clsCall && strings.HasPrefix(v.args, adaptertest.ClearedPrefix) && !v.keepArgs && strings.HasPrefix(v.callID, freePrefix):
			want = []string{"arguments"}
			if v.typ == "custom_tool_call" {
				want = []string{"input"}
			}
			clearedSeen.Add(1)
		}
		if want == nil || !slices.ContainsFunc(byCall[v.callID], func(src Item) bool {
			return slices.Equal(adaptertest.JSONDiff(t, src, u), want)
		}) {
			t.Fatalf("output item %d is neither the caller's nor an output of the caller's that differs only in its output, nor a call the core could clear that differs only in its arguments: %s", j, jsonOf(t, u))
		}
	}
}

// clearedSeen counts the calls checkNative saw with arguments cleared.
var clearedSeen atomic.Int64

func joinPartText(parts []history.Part) string {
	var s string
	for _, p := range parts {
		s += p.Text
	}
	return s
}

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

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output: notices never stack, and the latest task is
// never lost to an old step notice.
func TestRepeatedTrimNoStacking(t *testing.T) { adapter.Repeat(t) }

// TestGenerators: the conversations the drivers trim hold what they need.
func TestGenerators(t *testing.T) { adapter.CheckGenerators(t) }

// freePrefix starts the call id of a call that the generators place in a
// step without a reasoning item or a reference, the only calls whose
// arguments may be cleared (when Trim can rewrite them: see rewritable).
const freePrefix = "free_"

// clearElide elides every result but the newest and clears the arguments
// of their calls from 16 tokens.
var clearElide = history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 16}

// elidedSize returns the size of items once ElideToolResults has elided
// and cleared everything clearElide allows, and the number of results it
// elided: the budget at which a trim must do all of it.
func elidedSize(t *testing.T, items []Item) (int, int) {
	t.Helper()
	er, err := history.ElideToolResults(mustHistory(t, items), clearElide)
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(er.Messages, nil), er.Elided
}

// fileArgs returns the JSON arguments of a write_file call carrying a file
// of n lines.
func fileArgs(n int) string {
	return `{"path":"server.go","content":` + strconv.Quote(strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {}\n", n)) + `}`
}

// TestTrimClearedArguments: with ClearArguments, a trim that elides the
// outputs of a step sends its calls with the core's arguments where the
// API lets them change: a function call's arguments and a custom tool
// call's input, typed or built with param.Override (ids, status,
// namespace, extra fields and unknown keys kept, the item differing from
// the caller's in that one field). Calls after a reasoning item, a bare
// one included, or in an exchange with a reference, calls a program made,
// and calls whose arguments are a structured field or bound to something
// else (shell, local shell, apply_patch, program) are sent as they were,
// with every call of their exchange, while their outputs are elided. The
// output passes Validate, converts back to Result.Messages and counts
// what the core counted; a second trim leaves it alone.
func TestTrimClearedArguments(t *testing.T) {
	out := strings.Repeat("wrote 30 lines\n", 40)
	big := fileArgs(30)
	patch := "*** Begin Patch\n" + strings.Repeat("+line of the new file\n", 60) + "*** End Patch"
	typed := functionCall("w1", "write_file", big)
	typed.OfFunctionCall.Status = responses.ResponseFunctionToolCallStatusCompleted
	typed.OfFunctionCall.Namespace = param.NewOpt("fs")
	typed.OfFunctionCall.SetExtraFields(map[string]any{"x_seq": 7})
	byProgram := functionCall("pc1", "write_file", big)
	byProgram.OfFunctionCall.Caller = responses.ResponseFunctionToolCallCallerUnionParam{OfProgram: &responses.ResponseFunctionToolCallCallerProgramParam{CallerID: "pg_1"}}
	shell := shellCall("s1", "cat > server.go <<'EOF'\n"+strings.Repeat("func handler() {}\n", 60)+"EOF")
	patchCall := applyPatchCall("a1")
	patchCall.OfApplyPatchCall.Operation.OfUpdateFile.Diff = patch
	local := localShellCall("lsh_1", "l1")
	local.OfLocalShellCall.Action.Command = []string{"sh", "-c", patch}

	tests := []struct {
		name    string
		step    []Item
		cleared map[int]string // step index -> the field that differs
	}{
		{
			name:    "typed function calls in parallel",
			step:    []Item{typed, functionCall("w2", "write_file", fileArgs(20)), functionOutput("w2", out), functionOutput("w1", out)},
			cleared: map[int]string{0: "arguments", 1: "arguments"},
		},
		{
			name:    "custom tool call input",
			step:    []Item{customCall("p1", "apply_patch", patch), customOutput("p1", out)},
			cleared: map[int]string{0: "input"},
		},
		{
			name: "overrides keep unknown keys",
			step: []Item{
				overrideItem(`{"type":"function_call","id":"fc_o1","call_id":"o1","name":"write_file","arguments":` + quote(big) + `,"status":"completed","x_call":1}`),
				overrideItem(`{"type":"custom_tool_call","call_id":"o2","name":"apply_patch","input":` + quote(patch) + `,"x_in":"y"}`),
				functionOutput("o1", out), customOutput("o2", out)},
			cleared: map[int]string{0: "arguments", 1: "input"},
		},
		{
			name:    "a call answered after an earlier call's output",
			step:    []Item{functionCall("w1", "write_file", big), functionOutput("w1", out), functionCall("w2", "write_file", big), functionOutput("w2", out)},
			cleared: map[int]string{0: "arguments", 2: "arguments"},
		},
		{
			name: "after a reasoning item: sent as it was",
			step: []Item{reasoning("rs_1", "Writing the handler first.", "gAAAAB"+strings.Repeat("q", 200)), functionCall("w1", "write_file", big), functionOutput("w1", out)},
		},
		{
			name: "after a bare reasoning item (no text): sent as it was",
			step: []Item{reasoning("rs_1", "", ""), functionCall("w1", "write_file", big), functionOutput("w1", out)},
		},
		{
			name: "reasoning binds the rest of its response: sent as it was",
			step: []Item{reasoning("rs_1", "", "E"), functionCall("w1", "write_file", big), functionOutput("w1", out),
				customCall("p1", "apply_patch", patch), customOutput("p1", out)},
		},
		{
			name: "after a reasoning item as ToParam returns it",
			step: []Item{{OfReasoning: ptr(param.Override[responses.ResponseReasoningItemParam](json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[]}`)))},
				functionCall("w1", "write_file", big), functionOutput("w1", out)},
		},
		{
			name: "with a reference, which may be reasoning: sent as it was",
			step: []Item{reference("rs_old"), functionCall("w1", "write_file", big), functionOutput("w1", out)},
		},
		{
			name: "a call a program made: sent as it was",
			step: []Item{byProgram, functionOutput("pc1", out)},
		},
		{
			name: "shell, apply_patch and local shell calls: sent as they were, with the function call next to them",
			step: []Item{shell, patchCall, local, functionCall("w1", "write_file", big),
				shellOutput("s1", out, ""), applyPatchOutput("a1", out), localShellOutput("l1", out), functionOutput("w1", out)},
		},
		{
			name: "a program: sent as it was",
			step: []Item{program("g1", "await tools.write(); // "+patch), programOutput("g1", out)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]Item{developer("You are a coding agent."), user("Add the handlers.")}, tc.step...)
			// The newest output is kept: a last step that elides nothing.
			in = append(in, functionCall("t1", "run_tests", `{}`), functionOutput("t1", "ok"))
			before := adaptertest.JSON(t, in)
			budget, elided := elidedSize(t, in)
			opts := []history.Option{history.WithElision(clearElide)}
			got, res, err := Trim(in, budget, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if adaptertest.JSON(t, in) != before {
				t.Fatal("Trim modified its input")
			}
			if err := Validate(got); err != nil {
				t.Fatal(err)
			}
			checkBinding(t, in, got)
			back := mustHistory(t, got)
			sameMessages(t, budget, back, res.Messages)
			if n := history.Estimate(back, nil); n != res.TokensAfter || n > budget {
				t.Fatalf("the output counts %d, the core %d, budget %d", n, res.TokensAfter, budget)
			}
			if len(got) != len(in) || res.ElidedResults != elided || elided < 1 {
				t.Fatalf("%d of %d items, %d outputs elided, want %d", len(got), len(in), res.ElidedResults, elided)
			}
			for p := range tc.step {
				j := 2 + p
				v, _ := read(&in[j])
				diff := adaptertest.JSONDiff(t, in[j], got[j])
				switch field, ok := tc.cleared[p]; {
				case ok:
					w, _ := read(&got[j])
					if !slices.Equal(diff, []string{field}) || !strings.HasPrefix(w.args, adaptertest.ClearedPrefix) {
						t.Errorf("item %d differs in %v, want its %s cleared: %s", j, diff, field, jsonOf(t, got[j]))
					}
				case v.cls == clsResult:
					if len(diff) != 1 {
						t.Errorf("output %d differs in %v, want its output elided", j, diff)
					}
				case jsonOf(t, got[j]) != jsonOf(t, in[j]):
					t.Errorf("item %d changed: %s", j, jsonOf(t, got[j]))
				}
			}
			again, _, err := Trim(got, budget, opts...)
			if err != nil || adaptertest.JSON(t, again) != adaptertest.JSON(t, got) {
				t.Fatalf("a second trim changed the output (%v)", err)
			}
		})
	}
}

// TestClearedArgumentsRecover: RecoverOverflow rebuilds cleared calls as
// Trim does.
func TestClearedArgumentsRecover(t *testing.T) {
	out := strings.Repeat("wrote 30 lines\n", 40)
	in := []Item{developer("You are a coding agent."), user("Add the handlers."),
		functionCall("w1", "write_file", fileArgs(30)), functionOutput("w1", out),
		functionCall("t1", "run_tests", `{}`), functionOutput("t1", "ok")}
	total := adapter.Tokens(t, in)
	body := errors.New(`{"error":{"message":"This model's maximum context length is ` + strconv.Itoa(total/2) +
		` tokens. However, your messages resulted in ` + strconv.Itoa(total) + ` tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	got, res, err := RecoverOverflow(in, body, 1, history.WithElision(clearElide))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := read(&got[2]); !strings.HasPrefix(v.args, adaptertest.ClearedPrefix) || Validate(got) != nil {
		t.Fatalf("RecoverOverflow sent %s", jsonOf(t, got[2]))
	}
	back := mustHistory(t, got)
	sameMessages(t, 0, back, res.Messages)
	if n := history.Estimate(back, nil); n != res.TokensAfter {
		t.Fatalf("the output counts %d, the core %d", n, res.TokensAfter)
	}
}

// TestClearArgumentsSparesReasoning sweeps the transcripts of a reasoning
// model (every call follows a reasoning item of its response, as the API
// returns them) at budgets from 1 to above their size, clearing the
// arguments of every elided output's call: not one call is ever sent with
// arguments other than the caller's, while outputs are elided; and the
// same transcript without its reasoning items has calls cleared.
func TestClearArgumentsSparesReasoning(t *testing.T) {
	opts := []history.Option{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, ClearArguments: 8}), history.WithStepTrim()}
	var elided, clearedWithout int
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 6) {
		var in, plain []Item
		for _, u := range genAgent(seed) {
			v, _ := read(&u)
			if v.cls == clsCall && !strings.HasPrefix(v.callID, freePrefix) && !v.keepArgs && len(v.args) > 2 {
				// The generators' calls after reasoning carry small
				// arguments: these carry a file.
				u = withArguments(u, fileArgs(10))
			}
			in = append(in, u)
			if v.cls != clsReasoning {
				plain = append(plain, u)
			}
		}
		args := map[string]string{}
		for _, u := range in {
			if v, _ := read(&u); v.cls == clsCall {
				args[v.typ+v.callID] = v.args
			}
		}
		for _, budget := range adaptertest.Budgets(adapter.Tokens(t, in), 30) {
			out, res, err := Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatal(err)
			}
			elided += res.ElidedResults
			for _, u := range out {
				v, _ := read(&u)
				if v.cls == clsCall && !strings.HasPrefix(v.callID, freePrefix) && v.args != args[v.typ+v.callID] {
					t.Fatalf("seed %v, budget %d: call %s after reasoning sent with %.60q", seed, budget, v.callID, v.args)
				}
			}
			_, res, _ = Trim(plain, budget, opts...)
			for _, m := range res.Messages {
				for _, c := range m.ToolCalls {
					if strings.HasPrefix(c.Arguments, adaptertest.ClearedPrefix) {
						clearedWithout++
					}
				}
			}
		}
	}
	if elided == 0 || clearedWithout == 0 {
		t.Fatalf("%d outputs elided, %d calls cleared without reasoning: the sweep shows nothing", elided, clearedWithout)
	}
	t.Logf("%d outputs elided, no call after reasoning cleared; without the reasoning items, %d calls cleared", elided, clearedWithout)
}

// corpusItems maps a conversation of the shared corpus to input items as a
// reasoning model's transcript holds them: system messages as developer
// messages, user messages as easy input messages, each assistant message as
// the output of one response (a reasoning item, then an output message with
// its text, then its function calls), each tool message as a function call
// output. The corpus has no reasoning: every response gets a reasoning item
// with encrypted content before its first output item, derived from name
// and position (so the same conversation always maps alike), of 300 to
// 2,000 bytes, the size real encrypted reasoning comes in.
func corpusItems(name string, msgs []history.Message) []Item {
	items := make([]Item, 0, 2*len(msgs))
	for i, m := range msgs {
		n := strconv.Itoa(i)
		switch m.Role {
		case history.RoleSystem:
			items = append(items, developer(m.Content))
		case history.RoleUser:
			items = append(items, user(m.Content))
		case history.RoleTool:
			items = append(items, functionOutput(m.ToolCallID, m.Content))
		case history.RoleAssistant:
			items = append(items, reasoning("rs_"+n, "", encrypted(name, i)))
			if m.Content != "" {
				items = append(items, output("msg_"+n, m.Content))
			}
			for _, c := range m.ToolCalls {
				call := responses.ResponseInputItemParamOfFunctionCall(c.Arguments, c.ID, c.Name)
				call.OfFunctionCall.ID = param.NewOpt("fc_" + n + "_" + c.ID)
				items = append(items, call)
			}
		}
	}
	return items
}

// encrypted returns the synthetic encrypted content of the reasoning item
// of message i of the conversation name.
func encrypted(name string, i int) string {
	h := fnv.New64a()
	h.Write([]byte(name + "#" + strconv.Itoa(i)))
	sum := h.Sum64()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	n := 300 + int(sum%1700)
	var b strings.Builder
	b.Grow(n + 6)
	b.WriteString("gAAAAB")
	for k := range n {
		b.WriteByte(alphabet[(sum>>(k%58))&63^uint64(k%64)])
	}
	return b.String()
}

// corpusCap is the largest number of items a corpus conversation is
// trimmed with under the race detector: the longest transcripts (up to
// some 1,300 items) are cut to their last corpusCap items, starting at a
// user message, to keep the test's time reasonable there. Without -race
// every conversation is trimmed whole.
const corpusCap = 400

// TestCorpus maps every conversation of the shared corpus to input items
// (corpusItems) and trims it at adaptertest.CorpusBudgets with each option
// set of the ladder: every output passes Validate, keeps each reasoning
// item byte for byte and right before the item it preceded (checkBinding),
// holds only the caller's items (checkNative: no call has its arguments
// cleared, since a reasoning item precedes every call), and keeps the
// latest user message.
func TestCorpus(t *testing.T) {
	convs := adaptertest.Corpus(t, "../..")
	sets := adaptertest.LadderSets(true)
	var trims, violations, reasoningKept, capped, clearable int
	for _, conv := range convs {
		// Without reasoning, the "clear" set would clear these calls.
		er, err := history.ElideToolResults(conv.Messages, history.ElideOptions{ClearArguments: 64})
		if err != nil {
			t.Fatal(err)
		}
		clearable += er.ClearedCalls
		in := corpusItems(conv.Name, conv.Messages)
		if race.Enabled && len(in) > corpusCap {
			in = fromUser(in, len(in)-corpusCap)
			capped++
		}
		rs := map[string]string{} // reasoning id -> its JSON
		for _, u := range in {
			if u.OfReasoning != nil {
				rs[u.OfReasoning.ID] = jsonOf(t, u)
			}
		}
		latest := lastUser(in)
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
				checkBinding(t, in, out)
				checkNative(t, in, out, res)
				for _, u := range out {
					if u.OfReasoning != nil {
						if jsonOf(t, u) != rs[u.OfReasoning.ID] {
							t.Fatalf("%s, %s, budget %d: reasoning item %s changed", conv.Name, name, budget, u.OfReasoning.ID)
						}
						reasoningKept++
					}
				}
				if latest >= 0 && !slices.ContainsFunc(out, func(u Item) bool { return identity(t, u) == identity(t, in[latest]) }) {
					t.Fatalf("%s, %s, budget %d: the latest user message was lost", conv.Name, name, budget)
				}
			}
		}
	}
	if race.Enabled {
		t.Logf("under -race, %d conversations cut to their last %d items", capped, corpusCap)
	}
	if clearable == 0 {
		t.Error("the corpus has no call whose arguments ClearArguments would clear without reasoning: the \"clear\" set shows nothing")
	}
	t.Logf("%d conversations x %d budgets x %d option sets = %d trims: %d Validate violations, %d reasoning items kept byte for byte; %d calls worth clearing, spared for their reasoning",
		len(convs), len(adaptertest.CorpusBudgets(1)), len(sets), trims, violations, reasoningKept, clearable)
}

// fromUser returns the items from the first user message at or after
// index from.
func fromUser(items []Item, from int) []Item {
	for i := from; i < len(items); i++ {
		if m := items[i].OfMessage; m != nil && m.Role == responses.EasyInputMessageRoleUser {
			return append([]Item{items[0]}, items[i:]...)
		}
	}
	return items
}

// lastUser returns the index of the last user message of items, or -1.
func lastUser(items []Item) int {
	for i := len(items) - 1; i >= 0; i-- {
		if m := items[i].OfMessage; m != nil && m.Role == responses.EasyInputMessageRoleUser {
			return i
		}
	}
	return -1
}

// Replays: histories that broke peers' trims and filters against the
// Responses API, each naming its source, trimmed here at budgets from 1 to
// above their size with every option set of the ladder.

// sweepAll trims in at budgets from 1 to above its size, in about 150
// steps, with every option set of the ladder, checks each output with checkTrim's rules (the
// output passes Validate, every reasoning item stays bound, every item is
// the caller's) and hands it to check.
func sweepAll(t *testing.T, in []Item, check func(t *testing.T, budget int, out []Item, res history.Result)) {
	t.Helper()
	total := adapter.Tokens(t, in)
	for _, set := range adaptertest.LadderSets(true) {
		name, opts := set.Name, set.Opts
		for _, budget := range adaptertest.Budgets(total, 150) {
			out, res, err := Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			if err := Validate(out); err != nil {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			checkBinding(t, in, out)
			checkNative(t, in, out, res)
			check(t, budget, out, res)
		}
	}
}

func codeInterpreter(id string) Item {
	return Item{OfCodeInterpreterCall: &responses.ResponseCodeInterpreterToolCallParam{ID: id, ContainerID: "cntr_1",
		Code: param.NewOpt("import pandas as pd\npd.read_excel('books.xlsx')"), Status: responses.ResponseCodeInterpreterToolCallStatusCompleted,
		Outputs: []responses.ResponseCodeInterpreterToolCallOutputUnionParam{}}}
}

// TestReplayHostedCallKeepsItsReasoning replays
// openai/openai-agents-python#1611: a gpt-5 turn whose reasoning item
// preceded a code_interpreter call, followed by the next user message;
// the next request was rejected with "Item 'rs_68b14140...' of type
// 'reasoning' was provided without its required following item." Here the
// reasoning item and the hosted call are one exchange: no budget keeps one
// without the other. A filter that keeps only messages and function calls
// (dropping hosted tool items, as several runtimes do) leaves the
// reasoning item before the user message, and Validate rejects its output
// as the API does. (Had another reasoning item followed the call, Validate
// could not tell: it accepts a run of reasoning items before an output,
// not knowing which item each one preceded.)
func TestReplayHostedCallKeepsItsReasoning(t *testing.T) {
	in := []Item{developer("You analyse spreadsheets."),
		user("Which sheet has more rows?"), reasoning("rs_1", "", strings.Repeat("D", 500)), output("msg_1", "Sheet 2B, by 40 rows."),
		user("Give me items which are in books but not in 2B"),
		reasoning("rs_68b14140", "", strings.Repeat("E", 900)), codeInterpreter("ci_1"),
		user("Not able to download the file you have shared"),
	}
	sweepAll(t, in, func(t *testing.T, budget int, out []Item, res history.Result) {})

	var filtered []Item
	for _, u := range in {
		if u.OfCodeInterpreterCall == nil {
			filtered = append(filtered, u)
		}
	}
	var rerr *ReasoningError
	if err := Validate(filtered); !errors.As(err, &rerr) || rerr.ID != "rs_68b14140" {
		t.Fatalf("Validate(filtered) = %v, want a *ReasoningError for rs_68b14140", err)
	}
}

// TestReplayReasoningOfDroppedCall replays openai/openai-agents-python#3207
// (reported as #2020, a multi-agent handoff with gpt-5): a call left
// unanswered (the handoff) was dropped from the input while the reasoning
// item before it stayed, and the API rejected the request with "Item
// 'rs_...' of type 'reasoning' was provided without its required following
// item." Also VRSEN/agency-swarm#707: with two reasoning items before the
// dropped call, the first one was left behind. Trim drops the call and
// every reasoning item that preceded only it, and keeps the turn's other
// steps.
func TestReplayReasoningOfDroppedCall(t *testing.T) {
	in := []Item{developer("You triage and hand off."),
		user("Route this ticket to billing."),
		reasoning("rs_A", "", "EA"), reasoning("rs_B", "", "EB"), functionCall("handoff_1", "transfer_to_billing", "{}"), // never answered
		reasoning("rs_C", "", "EC"), functionCall("lookup_1", "lookup_account", `{"id":42}`), functionOutput("lookup_1", "account 42: overdue"),
		reasoning("rs_D", "", "ED"), output("msg_D", "Billing will contact you."),
	}
	out, res, err := Trim(in, 100_000)
	if err != nil || res.OrphansRemoved == 0 {
		t.Fatalf("Trim: %d orphans removed, %v", res.OrphansRemoved, err)
	}
	var kept []string
	for _, u := range out {
		kept = append(kept, itemKey(t, u))
	}
	for _, gone := range []string{"reasoning:rs_A", "reasoning:rs_B", "function_call:fc_handoff_1"} {
		if strings.Contains(strings.Join(kept, " "), gone) {
			t.Errorf("%s kept: %v", gone, kept)
		}
	}
	if len(out) != 7 {
		t.Errorf("kept %v, want the developer and user messages and the two answered steps", kept)
	}
	sweepAll(t, in, func(t *testing.T, budget int, out []Item, res history.Result) {
		for _, u := range out {
			if r := u.OfReasoning; r != nil && (r.ID == "rs_A" || r.ID == "rs_B") {
				t.Fatalf("budget %d: %s kept without the call it preceded", budget, r.ID)
			}
		}
	})
}

// TestReplayMessagesKeepTheirReasoning replays the breakage reported in
// openai/openai-dotnet#1050 (and openai-go#631, the same report for this
// SDK): keeping only the message items of a reasoning model's output drops
// the reasoning before them, and the next turn is rejected with "Item
// 'msg_...' of type 'message' was provided without its required preceding
// item of type 'reasoning'" (the full body, continuedev/continue#9359:
// "... without its required 'reasoning' item: 'rs_...'."). A trim drops a
// turn's output whole: at any budget each kept message has its
// reasoning item right before it (checkBinding), and the latest request
// is kept.
func TestReplayMessagesKeepTheirReasoning(t *testing.T) {
	in := []Item{developer("You are a helpful assistant.")}
	for i, q := range []string{"Summarise chapter one.", "And chapter two?", "Compare the two.", "Which is longer?"} {
		n := string(rune('a' + i))
		in = append(in, user(q), reasoning("rs_"+n, "", strings.Repeat("R", 600+100*i)),
			output("msg_"+n, strings.Repeat("A long answer. ", 20+10*i)))
	}
	in = append(in, user("Thanks. One last question: who is the narrator?"))
	latest := identity(t, in[len(in)-1])
	sweepAll(t, in, func(t *testing.T, budget int, out []Item, res history.Result) {
		if identity(t, out[len(out)-1]) != latest {
			t.Fatalf("budget %d: the latest request is not last", budget)
		}
	})
}

// TestReplayCompactionKept: a compaction item stands for everything before
// it, and a runtime that loses it loses that history; peers had to learn to
// keep it (anomalyco/opencode#43708 "retain completed encrypted compaction
// items", looplj/axonhub#2041, where a gateway dropped them). The window
// the compact endpoint returns (the user messages it keeps, then the
// compaction item; see ResponseCompactionItemParam, from the
// v1/responses/compact API) followed by reasoning turns, trimmed at every
// budget: the compaction item is always sent, once, byte for byte, before
// every turn that followed it.
func TestReplayCompactionKept(t *testing.T) {
	cmp := compaction("cmp_1", strings.Repeat("gAAAAB-compacted-", 60))
	in := []Item{developer("You are a coding agent."),
		user("Port the parser to Go."), user("Keep the tests green."), cmp}
	for i := range 4 {
		id := "c" + string(rune('0'+i))
		in = append(in, user("Step "+id+": "+strings.Repeat("details ", 20)),
			reasoning("rs_"+id, "", strings.Repeat("E", 300)), functionCall(id, "run_tests", "{}"),
			functionOutput(id, strings.Repeat("ok  parser/"+id+"\n", 30)),
			reasoning("rs_m"+id, "", strings.Repeat("F", 200)), output("msg_"+id, "Done with "+id+"."))
	}
	want := adaptertest.JSON(t, cmp)
	sweepAll(t, in, func(t *testing.T, budget int, out []Item, res history.Result) {
		at := -1
		for j, u := range out {
			if u.OfCompaction != nil {
				if at >= 0 || adaptertest.JSON(t, u) != want {
					t.Fatalf("budget %d: compaction item sent twice or changed", budget)
				}
				at = j
			}
		}
		if at < 0 {
			t.Fatalf("budget %d: the compaction item was dropped", budget)
		}
		for j := range at {
			if m := out[j].OfMessage; m != nil && m.Role == responses.EasyInputMessageRoleUser && strings.HasPrefix(m.Content.OfString.Value, "Step ") {
				t.Fatalf("budget %d: a turn after the compaction item comes before it", budget)
			}
		}
	})
}

// genMixed builds an item history from data that holds every item type
// the adapter maps: turns of a reasoning model with parallel calls of
// every client-side tool type (outputs in order, reversed, interleaved),
// hosted tools, output messages, compaction items, item references
// answered by outputs, screenshots, tool searches and approvals; and the
// defects of interrupted requests: unanswered calls, stray outputs,
// reasoning items cut off by a user message, an output, or the end.
func genMixed(data []byte) []Item {
	in := adaptertest.Bytes(data)
	items := []Item{developer("You are a coding agent.")}
	id := 0
	next := func() string { id++; return strconv.Itoa(id) }
	for b := in.Next(); b >= 0; b = in.Next() {
		switch b % 13 {
		case 0, 1:
			items = append(items, user(adaptertest.TaskText(b)))
		case 2:
			n := next()
			items = append(items, reasoning("rs_"+n, adaptertest.Words(b), strings.Repeat("Z", b)), output("msg_"+n, adaptertest.NoteText(b)))
		case 3:
			n := next()
			items = append(items, reasoning("rs_"+n, "", "E"), webSearch("ws_"+n), reasoning("rs_"+n+"b", "", "F"),
				mcpCall("mcp_"+n, adaptertest.FoundText(b)), assistant(adaptertest.Words(b)))
		case 4:
			// A screenshot step, a tool search and an approval.
			n := next()
			items = append(items, reasoning("rs_"+n, "", "E"), computerCall("cu"+n), computerOutput("cu"+n, "https://x/s.png"),
				reasoning("rs_"+n+"t", "", "T"), toolSearchCall("ts"+n), toolSearchOutput("ts"+n),
				approvalRequest("mcpr_"+n), approvalResponse("mcpr_"+n, b%2 == 0))
		case 5:
			// References to a stored reasoning item and call, with the output.
			n := next()
			items = append(items, reference("rs_old"+n), reference("fc_old"+n), functionOutput("call_old"+n, adaptertest.OutputText(b, 0)))
		case 6:
			n := next()
			items = append(items, compaction("cmp_"+n, strings.Repeat("C", 10+b)))
		case 7:
			// Interrupted: a call without output, with its own reasoning.
			n := next()
			items = append(items, reasoning("rs_"+n, "", "E"), functionCall("c"+n, "read", "{}"), reasoning("rs_"+n+"u", "", "U"), functionCall("u"+n, "read", "{}"),
				functionOutput("c"+n, adaptertest.FoundText(b)))
		case 8:
			// Cut off: reasoning before an output, a user message, or the end.
			n := next()
			switch in.Byte() % 3 {
			case 0:
				items = append(items, functionCall("c"+n, "read", "{}"), functionOutput("c"+n, "x"), reasoning("rs_"+n, "", "E"), functionOutput("stray"+n, "y"))
			case 1:
				items = append(items, reasoning("rs_"+n, "", "E"), user(adaptertest.Words(b)))
			default:
				items = append(items, reasoning("rs_"+n, "", "E"))
			}
		default:
			n := 1 + in.Byte()%4
			calls := make([]Item, n)
			outs := make([]Item, n)
			for k := range calls {
				cid := "call_" + next()
				if b%2 != 0 {
					cid = freePrefix + cid // no reasoning before them
				}
				calls[k], outs[k] = toolPair(b+k, cid, adaptertest.OutputText(b, k))
			}
			if b%2 == 0 {
				items = append(items, reasoning("rs_"+next(), adaptertest.Words(b), "ENC"))
			}
			switch in.Byte() % 3 {
			case 0:
				items = append(append(items, calls...), outs...)
			case 1:
				items = append(items, calls...)
				for k := range outs {
					items = append(items, outs[len(outs)-1-k])
				}
			default:
				for k := range calls {
					items = append(items, calls[k], outs[k])
				}
			}
		}
	}
	return items
}

// bindingOptions are the option sets of the binding sweeps: defaults, the
// whole ladder, elision alone with a placeholder of its own, step trimming
// with assistant-role notices, low water without notices.
func bindingOptions() [][]history.Option {
	return [][]history.Option{
		nil,
		{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
		{history.WithElision(history.ElideOptions{MinTokens: 20, Placeholder: func(m history.Message, n int) string { return "[gone " + m.ToolCallID + "]" }})},
		{history.WithStepTrim(), history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[turns trimmed]"}),
			history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[steps trimmed]"})},
		{history.WithLowWater(0.6), history.WithoutBreadcrumb()},
	}
}

// checkTrim trims in at budget with opts and checks what every trim of
// items must keep true: no error but history.ErrLatestTurnTooLarge, the
// input untouched, the output valid (Validate) with every reasoning item
// bound as it was in the input (checkBinding), every item the caller's own
// or an elided copy of one of its outputs, a count no larger than the
// core's (equal when nothing needed repairing and no compaction item
// moved), and a second trim with the same options leaving it alone (when
// neither happened; otherwise keeping it valid).
func checkTrim(t *testing.T, in []Item, budget int, opts ...history.Option) {
	t.Helper()
	before := adaptertest.JSON(t, in)
	out, res, err := Trim(in, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if adaptertest.JSON(t, in) != before {
		t.Fatalf("budget %d: Trim modified its input", budget)
	}
	if err := Validate(out); err != nil {
		t.Fatalf("budget %d: output fails Validate: %v", budget, err)
	}
	checkBinding(t, in, out)
	checkNative(t, in, out, res)
	c, err2 := convert(out, opts, currentTurn, nil)
	if err2 != nil {
		t.Fatalf("budget %d: output does not convert: %v", budget, err2)
	}
	// A repair, or a compaction item moved into the prefix, can join the
	// exchanges around the gap it leaves: the output then groups
	// differently from Result.Messages and counts no more.
	regrouped := res.OrphansRemoved > 0 || compactionMoved(t, in, out)
	if !regrouped {
		sameMessages(t, budget, c.hist, res.Messages)
	}
	if got := history.Estimate(c.hist, nil); got > res.TokensAfter {
		t.Fatalf("budget %d: output counts %d, core counted %d", budget, got, res.TokensAfter)
	} else if !regrouped && got != res.TokensAfter {
		t.Fatalf("budget %d: output counts %d, core counted %d, and nothing was repaired", budget, got, res.TokensAfter)
	}
	if err == nil {
		again, _, err := Trim(out, budget, opts...)
		switch {
		case err != nil:
			t.Fatalf("budget %d: trimming the output again: %v", budget, err)
		case !regrouped && adaptertest.JSON(t, again) != adaptertest.JSON(t, out):
			t.Fatalf("budget %d: trimming the output again changed it", budget)
		case Validate(again) != nil:
			t.Fatalf("budget %d: trimming the repaired output again: %v", budget, Validate(again))
		}
	}
}

// TestReasoningBindingSweep trims mixed histories under every option set
// at budgets from 1 to above their size: no budget separates a reasoning
// item from the item it precedes.
//
// Under the race detector, 7 of the 14 histories (race.Sample): the plain
// run sweeps all, and the trims are single-goroutine logic.
func TestReasoningBindingSweep(t *testing.T) {
	for _, seed := range race.Sample(adaptertest.Seeds(adaptertest.LadderSeeds, 10), 7) {
		in := genMixed(seed)
		adaptertest.Sweep(t, seed, adapter.Tokens(t, in), bindingOptions(), func(t *testing.T, budget int, opts []history.Option) {
			checkTrim(t, in, budget, opts...)
		})
	}
}

// FuzzTrim trims a mixed history built from the fuzzer's bytes at any
// budget under one of bindingOptions.
func FuzzTrim(f *testing.F) {
	for _, s := range adaptertest.LadderSeeds {
		f.Add(s, uint16(400), uint8(1))
	}
	f.Add([]byte{8, 2, 9, 9, 4, 5, 7, 8, 0, 8, 1}, uint16(50), uint8(3))
	sets := bindingOptions()
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		checkTrim(t, genMixed(data), int(budget)+1, sets[int(o)%len(sets)]...)
	})
}

// clearOptions is the option set of the clearing sweeps: elision of every
// result, clearing the arguments of their calls from 8 tokens, with step
// trimming.
func clearOptions() [][]history.Option {
	return [][]history.Option{{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, ClearArguments: 8}), history.WithStepTrim()}}
}

// TestClearArgumentsSweep trims mixed histories clearing the arguments of
// elided results' calls, at budgets from 1 to above their size: checkTrim
// holds (the output converts back to Result.Messages, cleared arguments
// included, and counts what the core counted), and checkNative lets a
// call differ from the caller's only in cleared arguments, and only a
// function or custom tool call the model made in a step without reasoning.
//
// Under the race detector, 7 of the 14 histories (race.Sample), as in
// TestReasoningBindingSweep.
func TestClearArgumentsSweep(t *testing.T) {
	before := clearedSeen.Load()
	for _, seed := range race.Sample(adaptertest.Seeds(adaptertest.LadderSeeds, 10), 7) {
		in := genMixed(seed)
		adaptertest.Sweep(t, seed, adapter.Tokens(t, in), clearOptions(), func(t *testing.T, budget int, opts []history.Option) {
			checkTrim(t, in, budget, opts...)
		})
	}
	if n := clearedSeen.Load() - before; n == 0 {
		t.Error("no trim cleared arguments")
	} else {
		t.Logf("%d calls sent with cleared arguments", n)
	}
}

// FuzzTrimClearArguments is TestClearArgumentsSweep for the fuzzer's
// bytes and budget.
func FuzzTrimClearArguments(f *testing.F) {
	for _, s := range adaptertest.LadderSeeds {
		f.Add(s, uint16(400))
	}
	opts := clearOptions()[0]
	f.Fuzz(func(t *testing.T, data []byte, budget uint16) {
		checkTrim(t, genMixed(data), int(budget)+1, opts...)
	})
}

// TestMixedGenerator: genMixed holds every item type and every defect.
func TestMixedGenerator(t *testing.T) {
	types := map[string]bool{}
	defects := 0
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 10) {
		items := genMixed(seed)
		for i := range items {
			v, err := read(&items[i])
			if err != nil {
				t.Fatal(err)
			}
			types[v.typ] = true
		}
		hist := mustHistory(t, items)
		_, rep := history.SweepOrphans(hist)
		defects += rep.Total()
	}
	for _, typ := range []string{"message", "reasoning", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
		"shell_call", "shell_call_output", "local_shell_call", "local_shell_call_output", "apply_patch_call", "apply_patch_call_output",
		"program", "program_output", "computer_call", "computer_call_output", "tool_search_call", "tool_search_output",
		"mcp_approval_request", "mcp_approval_response", "web_search_call", "mcp_call", "item_reference", "compaction"} {
		if !types[typ] {
			t.Errorf("no %s item over the seeds", typ)
		}
	}
	if defects == 0 {
		t.Error("no defect for the repair over the seeds")
	}
}

// genRandom builds an arbitrary item sequence from data: each byte picks
// an item type and, for calls, outputs and references, an id from a pool
// of four, so that outputs come before their calls, after user messages,
// twice, or never, and reasoning items stand anywhere. Unlike genMixed it
// follows no protocol at all.
func genRandom(data []byte) []Item {
	items := []Item{developer("sys")}
	for i, b := range data {
		id := "k" + strconv.Itoa(int(b>>4)%4)
		n := strconv.Itoa(i)
		switch b % 16 {
		case 0, 1:
			items = append(items, user("task "+n+" "+strings.Repeat("w ", int(b)%30)))
		case 2, 3:
			items = append(items, reasoning("rs_"+n, "", strings.Repeat("E", int(b))))
		case 4:
			items = append(items, output("msg_"+n, "text "+n))
		case 5, 6:
			items = append(items, functionCall(id, "f", "{}"))
		case 7, 8:
			items = append(items, functionOutput(id, strings.Repeat("out ", int(b))))
		case 9:
			items = append(items, shellCall(id, "ls"))
		case 10:
			items = append(items, shellOutput(id, strings.Repeat("o", int(b)), ""))
		case 11:
			items = append(items, reference("ref_"+id))
		case 12:
			items = append(items, webSearch("ws_"+n))
		case 13:
			items = append(items, compaction("cmp_"+n, "C"))
		case 14:
			items = append(items, computerCall(id), computerOutput(id, "https://x/s.png"))
		default:
			items = append(items, assistant("note "+n))
		}
	}
	return items
}

// FuzzTrimRandom trims arbitrary item sequences: whatever the input, when
// it converts, the output passes Validate and keeps every reasoning item
// that was bound with the item after it.
func FuzzTrimRandom(f *testing.F) {
	f.Add([]byte{2, 5, 7, 2, 4, 0, 3, 9, 10, 11, 7, 2}, uint16(100), uint8(0))
	f.Add([]byte{5, 0, 7, 2, 0x15, 0x17, 0x27, 2, 2, 13, 14, 3}, uint16(30), uint8(1))
	sets := bindingOptions()
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		in := genRandom(data)
		if _, err := ToHistory(in); err != nil {
			var me *MessageError
			if !errors.As(err, &me) {
				t.Fatalf("conversion failed with %T: %v", err, err)
			}
			return // a call id used twice in one exchange
		}
		checkTrim(t, in, int(budget)+1, sets[int(o)%len(sets)]...)
	})
}

// sameMessages checks that back, the conversion of a trim's output, is the
// trim's Result.Messages, message for message: the notices where the core
// put them, each elided output with its placeholder (Kind aside: an
// elided output reads back as an ordinary one).
func sameMessages(t *testing.T, budget int, back, want []history.Message) {
	t.Helper()
	if len(back) != len(want) {
		t.Fatalf("budget %d: the output converts to %d messages, Result has %d", budget, len(back), len(want))
	}
	for i := range want {
		g, w := back[i], want[i]
		if w.Kind == history.KindElided && g.Kind == "" {
			g.Kind = w.Kind
		}
		if describe(g) != describe(w) || g.Name != w.Name || !slices.Equal(g.ToolCalls, w.ToolCalls) || !slices.Equal(g.Parts, w.Parts) {
			t.Fatalf("budget %d: message %d of the output reads %s, Result has %s", budget, i, describe(g), describe(w))
		}
	}
}

// compactionMoved reports whether out, a trim of in, holds a compaction
// item before an item that preceded it in in.
func compactionMoved(t testing.TB, in, out []Item) bool {
	t.Helper()
	at := map[any]int{}
	for i, u := range in {
		at[identity(t, u)] = i
	}
	last := -1
	for _, u := range out {
		i, ok := at[identity(t, u)]
		if !ok {
			continue // a notice or an elided copy
		}
		if i < last {
			return true
		}
		last = i
	}
	return false
}

// benchItems is an agent transcript of a reasoning model: about a thousand
// items of every client-side tool type, some built with param.Override.
func benchItems() []Item {
	data := make([]byte, 300)
	for i := range data {
		data[i] = byte(i*37 + i*i*11)
	}
	return genAgent(data)
}

// BenchmarkTrim trims the transcript to 30% of its size: conversion, the
// core's trim and the mapping back.
func BenchmarkTrim(b *testing.B) {
	items := benchItems()
	hist, _ := ToHistory(items)
	budget := history.Estimate(hist, nil) * 3 / 10
	b.ReportAllocs()
	b.ReportMetric(float64(len(items)), "items")
	for b.Loop() {
		if _, _, err := Trim(items, budget); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToHistory is the conversion alone.
func BenchmarkToHistory(b *testing.B) {
	items := benchItems()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToHistory(items); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCoreTrim is the core's trim of the converted history, for
// comparison.
func BenchmarkCoreTrim(b *testing.B) {
	hist, _ := ToHistory(benchItems())
	budget := history.Estimate(hist, nil) * 3 / 10
	b.ReportAllocs()
	for b.Loop() {
		if _, err := history.TrimToRecentTurns(hist, budget); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadTypedOutput reads a typed function_call_output: its
// fields, no JSON.
func BenchmarkReadTypedOutput(b *testing.B) {
	u := functionOutput("c1", strings.Repeat("func f() { return 42 }\n", 30))
	for b.Loop() {
		read(&u)
	}
}

// BenchmarkReadOverrideOutput reads the same output built with
// param.Override, through its JSON (wire.go).
func BenchmarkReadOverrideOutput(b *testing.B) {
	u := overrideItem(`{"type":"function_call_output","call_id":"c1","output":` + quote(strings.Repeat("func f() { return 42 }\n", 30)) + `}`)
	for b.Loop() {
		read(&u)
	}
}

// BenchmarkReadToParamReasoning reads a reasoning item as ToParam
// returns it: an override of the variant.
func BenchmarkReadToParamReasoning(b *testing.B) {
	r := param.Override[responses.ResponseReasoningItemParam](json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"` + strings.Repeat("q8Zr", 300) + `"}`))
	u := Item{OfReasoning: &r}
	for b.Loop() {
		read(&u)
	}
}

// BenchmarkReadShellCall reads a typed shell call, whose action is
// counted as its JSON.
func BenchmarkReadShellCall(b *testing.B) {
	u := shellCall("s1", "go test ./...")
	for b.Loop() {
		read(&u)
	}
}

// TestCallPositions: the exchange's index of call ids answers as a map
// does, below and past the length where it becomes one, and forgets an
// earlier exchange's ids on reset.
func TestCallPositions(t *testing.T) {
	var x callPositions
	prev := map[string]int{}
	for _, n := range []int{0, 1, smallCalls, smallCalls + 1, 3 * smallCalls, 3*smallCalls - 1, 2} {
		x.reset()
		want := map[string]int{}
		for k := range n {
			id := fmt.Sprintf("call_%d_%d", n%7, k) // some ids as an earlier exchange's
			x.set(id, k-1)                          // -1 too: a referenced call
			want[id] = k - 1
		}
		for id, at := range want {
			got, ok := x.get(id)
			if !ok || got != at {
				t.Fatalf("%d calls: get(%q) = %d, %v; want %d, true", n, id, got, ok, at)
			}
		}
		prev["call_missing"] = 0
		for id := range prev {
			if _, ok := want[id]; ok {
				continue
			}
			if at, ok := x.get(id); ok {
				t.Fatalf("%d calls: get(%q) = %d, true for an id never set in this exchange", n, id, at)
			}
		}
		prev = want
	}
}
