package responses

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// TestTrimUnchanged: a history that fits and needs no repair comes back
// as the caller's slice itself, clipped.
func TestTrimUnchanged(t *testing.T) {
	items := []Item{developer("d"), user("q"), reasoning("rs_1", "s", "E"), functionCall("c1", "f", "{}"), functionOutput("c1", "r"), output("msg_1", "a")}
	out, res, err := Trim(items, 10_000)
	if err != nil || !adaptertest.SameArray(out, items) || cap(out) != len(out) || res.Trimmed {
		t.Fatalf("Trim = %d items (same array %v, cap %d), %+v, %v", len(out), adaptertest.SameArray(out, items), cap(out), res, err)
	}
}

// TestTrimElidedForms: each output type with a text form becomes a copy
// holding the placeholder, keeping its call id, status and extra fields;
// outputs without one are kept whole.
func TestTrimElidedForms(t *testing.T) {
	big := strings.Repeat("0123456789 abcdef\n", 200)
	extra := functionOutput("c1", big)
	extra.OfFunctionCallOutput.SetExtraFields(map[string]any{"x_seq": 7})
	items := []Item{
		developer("sys"),
		user("task"),
		reasoning("rs_1", "", "ENC"),
		functionCall("c1", "read", "{}"), customCall("c2", "patch", ""), shellCall("c3", "ls"), localShellCall("lsh_4", "c4"),
		applyPatchCall("c5"), program("c6", "code"), functionCall("c7", "read", "{}"), computerCall("c8"), toolSearchCall("c9"),
		extra, customOutput("c2", big), shellOutput("c3", big, "warn"), localShellOutput("c4", big), applyPatchOutput("c5", big),
		programOutput("c6", big),
		overrideItem(`{"type":"function_call_output","call_id":"c7","output":` + quote(big) + `,"x_trace":"abc"}`),
		computerOutput("c8", pngURL(t, 2000, 2000)), toolSearchOutput("c9"),
		output("msg_1", "done"),
	}
	ph := func(m history.Message, n int) string { return "[elided " + m.ToolCallID + "]" }
	out, res, err := Trim(items, 1100, history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, Placeholder: ph}))
	if err != nil {
		t.Fatal(err)
	}
	if res.ElidedResults != 7 || len(out) != len(items) {
		t.Fatalf("elided %d of 7 outputs, %d items of %d", res.ElidedResults, len(out), len(items))
	}
	want := map[int]string{
		12: `{"call_id":"c1","output":"[elided c1]","type":"function_call_output","x_seq":7}`,
		13: `{"call_id":"c2","output":"[elided c2]","type":"custom_tool_call_output"}`,
		14: `{"call_id":"c3","output":[{"outcome":{"exit_code":1,"type":"exit"},"stderr":"","stdout":"[elided c3]"}],"type":"shell_call_output"}`,
		15: `{"id":"c4","output":"[elided c4]","type":"local_shell_call_output"}`,
		16: `{"call_id":"c5","status":"completed","output":"[elided c5]","type":"apply_patch_call_output"}`,
		17: `{"id":"po_c6","call_id":"c6","result":"[elided c6]","status":"completed","type":"program_output"}`,
		18: `{"call_id":"c7","output":"[elided c7]","type":"function_call_output","x_trace":"abc"}`,
	}
	for j := range out {
		got := jsonOf(t, out[j])
		if w, ok := want[j]; ok {
			if got != w {
				t.Errorf("item %d = %s\nwant %s", j, got, w)
			}
			continue
		}
		if got != jsonOf(t, items[j]) {
			t.Errorf("item %d changed: %s", j, got)
		}
	}
	back := mustHistory(t, out)
	if got := history.Estimate(back, nil); got != res.TokensAfter {
		t.Errorf("output counts %d, core counted %d", got, res.TokensAfter)
	}
	if !strings.Contains(jsonOf(t, items[12]), "0123456789") || !strings.Contains(jsonOf(t, items[18]), "0123456789") {
		t.Error("the caller's items were modified")
	}
}

// TestTrimReasoningGoesWithItsStep: step trimming drops the oldest steps
// of the latest turn, each with its reasoning (a reasoning item binds only
// to the item after it, so the step that opened the loop goes like any
// other); an interrupted call goes with the reasoning before it, and a
// cut-off reasoning item is dropped.
func TestTrimReasoningGoesWithItsStep(t *testing.T) {
	big := strings.Repeat("line of output\n", 80)
	items := []Item{
		developer("sys"),
		user("fix the bug"),
		reasoning("rs_1", "", "E1"), functionCall("c1", "read", `{"f":"a.go"}`), functionCall("c2", "read", `{"f":"b.go"}`),
		functionOutput("c1", "package a"), functionOutput("c2", "package b"),
		reasoning("rs_2", "", "E2"), functionCall("c3", "grep", "{}"), functionOutput("c3", big),
		reasoning("rs_2b", "", "E2b"), functionCall("c3b", "grep", "{}"), functionOutput("c3b", big),
		reasoning("rs_3", "", "E3"), functionCall("c4", "test", "{}"), reasoning("rs_4", "", "E4"), functionCall("c5", "lost", "{}"), functionOutput("c4", "ok"),
		reasoning("rs_5", "", "E5"), output("msg_5", "fixed"),
		reasoning("rs_6", "", "E6"),
	}
	out, res, err := Trim(items, 300, history.WithStepTrim())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range out {
		got = append(got, itemKey(t, u))
	}
	want := []string{"message:#0", "message:#1", "message:#step",
		"reasoning:rs_3", "function_call:fc_c4", "function_call_output:c4", "reasoning:rs_5", "message:msg_5"}
	for i, k := range got {
		if strings.HasPrefix(k, "{") {
			got[i] = "message:#?"
		}
	}
	want[0], want[1], want[2] = "message:#?", "message:#?", "message:#?"
	if !slices.Equal(got, want) {
		t.Fatalf("kept %v\nwant %v", got, want)
	}
	if res.DroppedSteps != 3 || res.OrphansRemoved != 3 { // c5, rs_4's stand-in, rs_6's stand-in
		t.Errorf("dropped %d steps, removed %d orphans; want 3 and 3", res.DroppedSteps, res.OrphansRemoved)
	}
	checkBinding(t, items, out)
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
}

// TestTrimCompaction: a compacted window (user messages, then the
// compaction item) followed by new turns: the compaction item is never
// dropped, and moves into the prefix when the turns holding it go.
func TestTrimCompaction(t *testing.T) {
	items := []Item{
		developer("sys"),
		user("first " + strings.Repeat("words ", 60)), user("second " + strings.Repeat("words ", 60)),
		compaction("cmp_1", strings.Repeat("C", 400)),
		user("third " + strings.Repeat("words ", 60)), reasoning("rs_1", "", "E"), output("msg_1", "ok"),
		user("fourth"), reasoning("rs_2", "", "F"), output("msg_2", "done"),
	}
	out, res, err := Trim(items, 250)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 3 || out[1].OfCompaction == nil || out[0].OfMessage == nil || out[0].OfMessage.Role != "developer" {
		t.Fatalf("the compaction item is not right after the developer message: %s", adaptertest.JSON(t, out))
	}
	if res.DroppedTurns != 2 || out[2].OfMessage == nil || out[2].OfMessage.Content.OfString.Value != history.BreadcrumbText {
		t.Errorf("dropped %d turns, want 2, and the notice after the compaction item: %s", res.DroppedTurns, adaptertest.JSON(t, out))
	}
	if last := out[len(out)-1]; last.OfOutputMessage == nil || last.OfOutputMessage.ID != "msg_2" {
		t.Errorf("the latest turn is not last: %s", adaptertest.JSON(t, out))
	}
	// Pinned once in the prefix: a tighter budget keeps it too.
	out2, _, err := Trim(out, 60)
	if !errors.Is(err, history.ErrLatestTurnTooLarge) && err != nil {
		t.Fatal(err)
	}
	if out2[1].OfCompaction == nil {
		t.Errorf("the pinned compaction item was dropped: %s", adaptertest.JSON(t, out2))
	}
}

// TestTrimCompactionTriggerStaysLast: the trigger must be the last item;
// it belongs to the latest turn, which is always kept, and stays last.
func TestTrimCompactionTriggerStaysLast(t *testing.T) {
	big := strings.Repeat("x ", 300)
	items := []Item{developer("sys"), user("old " + big), output("msg_1", big),
		user("new"), reasoning("rs_1", "", "E"), functionCall("c1", "f", "{}"), functionOutput("c1", big),
		reasoning("rs_2", "", "F"), functionCall("c2", "f", "{}"), functionOutput("c2", "small"), trigger()}
	for _, opts := range [][]history.Option{nil, {history.WithStepTrim()}, {history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()}} {
		out, _, err := Trim(items, 40, opts...)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatal(err)
		}
		if out[len(out)-1].OfCompactionTrigger == nil {
			t.Fatalf("the trigger is not last: %s", adaptertest.JSON(t, out))
		}
		checkBinding(t, items, out)
	}
}

// TestTrimItemReferences: an output whose call is only referenced stays
// with the references before it, and goes with them.
func TestTrimItemReferences(t *testing.T) {
	big := strings.Repeat("result line\n", 100)
	items := []Item{developer("sys"),
		user("one"), reference("rs_a"), reference("fc_a"), functionOutput("call_a", big), reference("msg_a"),
		user("two"), reasoning("rs_b", "", "E"), reference("fc_b"), functionOutput("call_b", "small"), output("msg_b", "ok"),
	}
	out, res, err := Trim(items, 10_000)
	if err != nil || res.OrphansRemoved != 0 || len(out) != len(items) {
		t.Fatalf("the referenced outputs were not kept: %d of %d items, %d orphans, %v", len(out), len(items), res.OrphansRemoved, err)
	}
	out, res, err = Trim(items, 80)
	if err != nil {
		t.Fatal(err)
	}
	if res.DroppedTurns != 1 || len(out) != 7 || out[3].OfReasoning == nil || out[4].OfItemReference == nil {
		t.Fatalf("want the first turn dropped whole: %s", adaptertest.JSON(t, out))
	}
	if err := Validate(out); err != nil {
		t.Fatal(err)
	}
}

// TestAssistantNotice: notices in the assistant role are rendered as
// assistant messages and recognised by the next trim with the same
// options, so that they do not stack, even right before reasoning.
func TestAssistantNotice(t *testing.T) {
	opts := []history.Option{history.WithStepTrim(),
		history.WithBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[older turns trimmed]"}),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[older steps trimmed]"})}
	big := strings.Repeat("output\n", 120)
	items := []Item{developer("sys"), user("old task " + big), output("msg_0", "ok"), user("task")}
	for i := range 12 {
		id := "c" + strings.Repeat("x", i)
		items = append(items, reasoning("rs_"+id, "", "E"), functionCall(id, "run", "{}"), functionOutput(id, big))
		out, res, err := Trim(items, 600, opts...)
		if err != nil {
			t.Fatal(err)
		}
		notices := 0
		for j, u := range out {
			if u.OfMessage != nil && u.OfMessage.Role == "assistant" {
				notices++
				if j+1 < len(out) && out[j+1].OfReasoning == nil && out[j+1].OfMessage == nil {
					t.Fatalf("round %d: the notice is not followed by a step or a message", i)
				}
			}
		}
		if notices > 2 {
			t.Fatalf("round %d: %d notices stack: %s", i, notices, adaptertest.JSON(t, out))
		}
		c, err := convert(out, opts)
		if err != nil || history.Estimate(c.hist, nil) != res.TokensAfter {
			t.Fatalf("round %d: output counts differently from the core (%v)", i, err)
		}
		checkBinding(t, items, out)
		items = out
	}
}

// TestTrimRepairMayJoinExchanges: removing a cut-off reasoning item and
// a stray output can join the exchanges around them; the repaired output
// counts no more than the core counted and is valid, and trimming it again
// repairs what the join exposed (here a call id used twice).
func TestTrimRepairMayJoinExchanges(t *testing.T) {
	items := []Item{developer("sys"), user("q"),
		reasoning("rs_1", "", "E"), functionCall("k1", "f", "{}"), functionOutput("k1", "one"),
		reasoning("rs_2", "", "F"), functionOutput("stray", "x"),
		functionCall("k1", "f", "{}"), functionOutput("k1", "two")}
	out, res, err := Trim(items, 10_000)
	if err != nil || res.OrphansRemoved != 2 || len(out) != 7 {
		t.Fatalf("Trim = %d items, %d orphans, %v", len(out), res.OrphansRemoved, err)
	}
	if got := history.Estimate(mustHistory(t, out), nil); got > res.TokensAfter || Validate(out) != nil {
		t.Fatalf("output counts %d of %d, Validate %v", got, res.TokensAfter, Validate(out))
	}
	again, res2, err := Trim(out, 10_000)
	if err != nil || res2.OrphansRemoved != 2 || len(again) != 5 || Validate(again) != nil {
		t.Fatalf("second trim = %d items, %d orphans, %v, Validate %v", len(again), res2.OrphansRemoved, err, Validate(again))
	}
}
