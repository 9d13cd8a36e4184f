package responses

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

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
// core's (equal when nothing needed repairing and no notice is in the
// assistant role), and a second trim with the same options leaving it
// alone.
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
	c, err2 := convert(out, opts)
	if err2 != nil {
		t.Fatalf("budget %d: output does not convert: %v", budget, err2)
	}
	if got := history.Estimate(c.hist, nil); got > res.TokensAfter {
		t.Fatalf("budget %d: output counts %d, core counted %d", budget, got, res.TokensAfter)
	} else if res.OrphansRemoved == 0 && got != res.TokensAfter {
		t.Fatalf("budget %d: output counts %d, core counted %d, and nothing was repaired", budget, got, res.TokensAfter)
	}
	if err == nil {
		again, _, err := Trim(out, budget, opts...)
		if err != nil || adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
			t.Fatalf("budget %d: trimming the output again changed it (%v)", budget, err)
		}
	}
}

// TestReasoningBindingSweep trims mixed histories under every option set
// at budgets from 1 to above their size: no budget separates a reasoning
// item from the item it precedes.
func TestReasoningBindingSweep(t *testing.T) {
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 10) {
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
