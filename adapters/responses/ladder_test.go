package responses

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// genAgent builds an agent conversation of a reasoning model from data:
// tasks followed by many steps, each a reasoning item and one to three
// parallel calls of the client-side tool types (function, custom, shell,
// local shell, apply_patch, program) with their outputs in order, reversed
// or interleaved, some built with param.Override; reasoning before output
// messages and hosted tool calls; and an occasional unanswered call (with
// its reasoning), stray output or reasoning item cut off by a user message,
// for the repair. Outputs that are never elided (screenshots, loaded tools,
// approvals) are left to genMixed.
func genAgent(data []byte) []Item {
	items := []Item{developer("You are an agent. Use the tools.")}
	id := 0
	next := func() string { id++; return strconv.Itoa(id) }
	for _, v := range data {
		b := int(v)
		switch b % 9 {
		case 0:
			items = append(items, user(adaptertest.TaskText(b)))
		case 1:
			n := next()
			items = append(items, reasoning("rs_"+n, "", strings.Repeat("E", 20+b)), output("msg_"+n, adaptertest.NoteText(b)))
		case 2:
			// Hosted tools inside one response.
			n := next()
			items = append(items, reasoning("rs_"+n, "searching", "ENC"+n), webSearch("ws_"+n),
				reasoning("rs_"+n+"b", "", "ENC"), mcpCall("mcp_"+n, adaptertest.FoundText(b)), output("msg_"+n, adaptertest.Words(b)))
		case 7:
			// An unanswered call next to an answered one, a stray output, a
			// reasoning item cut off by the next task.
			n := next()
			items = append(items, reasoning("rs_"+n, "", "ENC"),
				functionCall("c"+n, "grep", `{}`), functionCall("u"+n, "grep", `{}`),
				functionOutput("c"+n, adaptertest.FoundText(b)), functionOutput("stray_"+n, "stray"),
				reasoning("rs_"+n+"x", "", "CUT"), user(adaptertest.Words(b)))
		default:
			n := 1 + b%3
			rs := next()
			calls := make([]Item, n)
			outs := make([]Item, n)
			for k := range calls {
				cid := "call_" + next()
				calls[k], outs[k] = toolPair(b+k, cid, adaptertest.OutputText(b, k))
			}
			items = append(items, reasoning("rs_"+rs, adaptertest.Words(b), "ENC"+rs))
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
// b, and its output holding body.
func toolPair(b int, cid, body string) (call, out Item) {
	switch b % 7 {
	case 1:
		return customCall(cid, "patcher", "*** Begin Patch"), customOutput(cid, body)
	case 2:
		return shellCall(cid, "go test ./..."), shellOutput(cid, body, "warning: x")
	case 3:
		return localShellCall("lsh_"+cid, cid), localShellOutput(cid, body)
	case 4:
		return applyPatchCall(cid), applyPatchOutput(cid, body)
	case 5:
		return program(cid, "await tools.read()"), programOutput(cid, body)
	case 6:
		return functionCall(cid, "read_file", `{"path":"x.go"}`), overrideItem(
			`{"type":"function_call_output","call_id":` + strconv.Quote(cid) + `,"output":` + strconv.Quote(body) + `,"x_trace":"t"}`)
	}
	return functionCall(cid, "read_file", `{"path":"f.go"}`), functionOutput(cid, body)
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
	Exact: true,
	Check: checkNative,
	Start: func() []Item { return []Item{developer("sys")} },
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
// for notices and elided outputs,
// which differ from the caller's only in their output.
func checkNative(t *testing.T, in, out []Item, res history.Result) {
	t.Helper()
	checkBinding(t, in, out)
	orig := map[any]bool{}
	byCall := map[string][]Item{} // the outputs with each call id
	for _, u := range in {
		orig[identity(t, u)] = true
		if v, _ := read(&u); v.cls == clsResult {
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
		want := []string{"output"}
		if v.typ == "program_output" {
			want = []string{"result"}
		}
		if v.cls != clsResult || !slices.ContainsFunc(byCall[v.callID], func(src Item) bool {
			return slices.Equal(adaptertest.JSONDiff(t, src, u), want)
		}) {
			t.Fatalf("output item %d is neither the caller's nor an output of the caller's that differs only in its %v: %s", j, want, jsonOf(t, u))
		}
	}
}

func joinPartText(parts []history.Part) string {
	var s string
	for _, p := range parts {
		s += p.Text
	}
	return s
}

// TestTrimLadder trims generated agent conversations with elision and step
// trimming at budgets from 1 to above their size.
func TestTrimLadder(t *testing.T) { adapter.Ladder(t) }

func FuzzTrimLadder(f *testing.F) { adapter.FuzzLadder(f) }

// TestRepeatedTrimNoStacking runs an agent loop that replaces its history
// with each trim's output: notices never stack, and the latest task is
// never lost to an old step notice.
func TestRepeatedTrimNoStacking(t *testing.T) { adapter.Repeat(t) }

// TestGenerators: the conversations the drivers trim hold what they need.
func TestGenerators(t *testing.T) { adapter.CheckGenerators(t) }
