package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
)

func th(s string) anthropic.ContentBlockParamUnion {
	return anthropic.NewThinkingBlock("sig-"+s+"==", "thinking about "+s)
}

func red(s string) anthropic.ContentBlockParamUnion {
	return anthropic.NewRedactedThinkingBlock("ENC-" + s + "==")
}

// Thinking configurations of a request.
var (
	thinkingEnabled  = anthropic.ThinkingConfigParamOfEnabled(2048)
	thinkingAdaptive = anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
	thinkingDisabled = anthropic.ThinkingConfigParamUnion{OfDisabled: &anthropic.ThinkingConfigDisabledParam{}}
)

func request2(thinking anthropic.ThinkingConfigParamUnion, msgs ...anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet4_6, MaxTokens: 4096, Thinking: thinking, Messages: msgs}
}

// TestValidateRequest: each rule with the API's own error message for the
// violation (apierrors_test.go names where each was reported).
func TestValidateRequest(t *testing.T) {
	none := anthropic.ThinkingConfigParamUnion{}
	notice := text(history.StepBreadcrumbText)
	cases := []struct {
		name, reason string
		thinking     anthropic.ThinkingConfigParamUnion
		msgs         []anthropic.MessageParam
		// api is the API's message for the violation; "" when valid.
		api string
	}{
		// The final assistant turn must open with thinking.
		{"tool loop opened by thinking", "the first message of the loop holds the thinking", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(th("a"), toolUse("a", "f")), user(result("a", "A"))}, ""},
		{"thinking lost", "openai/openai-agents-python#1704: the runtime dropped the thinking block", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f")), user(result("a", "A"))},
			"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."},
		{"text first", "pydantic/pydantic-ai#2075: text before the call, no thinking", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(text("let me look"), toolUse("a", "f")), user(result("a", "A"))},
			"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`."},
		{"later steps without thinking", "without interleaved thinking only the first step of a loop thinks", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(th("a"), toolUse("a", "f")), user(result("a", "A")), assistant(toolUse("b", "g")), user(result("b", "B"))}, ""},
		{"redacted opener", "redacted_thinking opens a loop as well", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(red("a"), toolUse("a", "f")), user(result("a", "A"))}, ""},
		{"earlier turns without thinking", "thinking of previous turns may be omitted", thinkingEnabled,
			[]anthropic.MessageParam{user(text("hi")), assistant(text("yo")), user(text("go")), assistant(th("a"), toolUse("a", "f")), user(result("a", "A"))}, ""},
		{"ends with a user turn", "no final assistant turn yet", thinkingEnabled,
			[]anthropic.MessageParam{user(text("hi")), assistant(text("yo")), user(text("go"))}, ""},
		{"step notice before the first step", "consecutive user messages are one user turn, before the loop", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), user(notice), assistant(th("a"), toolUse("a", "f")), user(result("a", "A")), assistant(toolUse("c", "g")), user(result("c", "C"))}, ""},
		{"notice between tool loops", "a user text block after the results opens a new turn, whose first step holds no thinking", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(th("a"), toolUse("a", "f")), user(result("a", "A")), user(notice), assistant(toolUse("c", "g")), user(result("c", "C"))},
			"messages.4.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."},
		{"text beside results", "a user message with text beside its results is a user turn", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(th("a"), toolUse("a", "f")), user(result("a", "A"), text("hurry")), assistant(toolUse("b", "g")), user(result("b", "B"))},
			"messages.3.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."},
		{"text beside results, then thinking", "the loop after it opens with thinking", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f")), user(result("a", "A"), text("hurry")), assistant(th("b"), toolUse("b", "g")), user(result("b", "B"))}, ""},
		{"assistant notice before the first step", "the API joins it with the step: the turn opens with text", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(notice), assistant(th("a"), toolUse("a", "f")), user(result("a", "A"))},
			"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`."},
		{"adaptive may skip thinking", "adaptive thinking may answer with a tool call first", thinkingAdaptive,
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f")), user(result("a", "A"))}, ""},
		{"no thinking configuration", "pairing only", none,
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f")), user(result("a", "A"))}, ""},

		// An assistant message with thinking starts with it.
		{"thinking after text", "anthropics/claude-code#20705: text serialized before thinking", thinkingEnabled,
			[]anthropic.MessageParam{user(text("q")), assistant(text("so"), th("a"), text("yes")), user(text("q2")), assistant(th("b"), text("ok"))},
			"messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found text."},

		// No assistant message ends with thinking.
		{"thinking only", "tailcallhq/forgecode#2107: a response of thinking alone, replayed", thinkingEnabled,
			[]anthropic.MessageParam{user(text("q")), assistant(th("a"))},
			"messages.1: The final block in an assistant message cannot be `thinking`."},
		{"thinking only, earlier, adaptive", "tailcallhq/forgecode#3071: replayed on every later request", thinkingAdaptive,
			[]anthropic.MessageParam{user(text("q")), assistant(th("a")), user(text("q2"))},
			"messages.1: The final block in an assistant message cannot be `thinking`."},

		// Thinking disabled.
		{"disabled, thinking in final position", "tailcallhq/forgecode#1853", thinkingDisabled,
			[]anthropic.MessageParam{user(text("q")), assistant(th("a"), text("partial"))},
			"messages.1.content.0: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`."},
		{"disabled, thinking of an earlier turn", "only the final position is rejected", thinkingDisabled,
			[]anthropic.MessageParam{user(text("q")), assistant(th("a"), text("yes")), user(text("q2"))}, ""},

		// Pairing comes first.
		{"unanswered call", "anthropics/claude-code#5060", thinkingEnabled,
			[]anthropic.MessageParam{user(text("go")), assistant(th("a"), toolUse("a", "f")), user(text("wait"))},
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: a."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRequest(request2(tc.thinking, tc.msgs...))
			got := apiMessage(err)
			switch {
			case tc.api == "" && err != nil:
				t.Fatalf("ValidateRequest = %v, want nil (%s)", err, tc.reason)
			case tc.api != "" && !strings.HasPrefix(got, tc.api):
				t.Fatalf("ValidateRequest = %v, the API would say\n%s\nwant\n%s (%s)", err, got, tc.api, tc.reason)
			case tc.api != "" && !errors.Is(err, ErrThinking) && !errors.Is(err, ErrUnpaired):
				t.Fatalf("ValidateRequest = %v, wraps neither ErrThinking nor ErrUnpaired", err)
			}
		})
	}
}

// TestValidateRequestOverride: blocks and messages built with
// param.Override are read through their JSON, as the API reads them.
func TestValidateRequestOverride(t *testing.T) {
	future := param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(`{"type":"future_block","x":1}`))
	msgs := []anthropic.MessageParam{user(text("go")), assistant(future, toolUse("a", "f")), user(result("a", "A"))}
	var te *ThinkingError
	if err := ValidateRequest(request2(thinkingEnabled, msgs...)); !errors.As(err, &te) || te.Index != 1 || !strings.Contains(te.Reason, `"future_block"`) {
		t.Fatalf("ValidateRequest = %v, want a *ThinkingError at message 1 naming future_block", err)
	}
	before := adaptertest.JSON(t, msgs)
	_ = ValidateRequest(request2(thinkingEnabled, msgs...))
	if adaptertest.JSON(t, msgs) != before {
		t.Fatal("ValidateRequest modified its argument")
	}
}

// TestThinkingCounts: thinking counts as Anthropic bills it, on the safe
// side. Claude Opus 4.5 and later, and Claude Sonnet 4.6 and later, keep
// the thinking blocks of earlier assistant turns in the context; earlier
// models strip them ("previous thinking blocks are automatically stripped
// from the context window calculation",
// https://docs.claude.com/en/docs/build-with-claude/context-windows; the
// models that keep them: the extended thinking page,
// https://platform.claude.com/docs/en/build-with-claude/extended-thinking,
// as quoted in news.ycombinator.com/item?id=48632147). Counting every block is exact for the
// first and an overestimate for the second, so a trim never overflows for
// want of counting them. A thinking block's signature carries the full
// thinking, encrypted (anthropics/claude-code#42260: signatures of up to
// 13,184 characters beside empty thinking texts, about a quarter of a
// resumed session's input), while the text may be a summary or empty
// ("display": "omitted"): the longer of the two stands for the block's
// content. A redacted_thinking block counts its data.
func TestThinkingCounts(t *testing.T) {
	sig := strings.Repeat("EqQBCkgIARABGAIiQLx9+/", 200) // 4,400 characters
	long := strings.Repeat("I should read the file first, then compare. ", 100)
	count := func(b anthropic.ContentBlockParamUnion) int {
		t.Helper()
		hist, err := ToHistory(nil, []anthropic.MessageParam{assistant(b, text("x"))})
		if err != nil {
			t.Fatal(err)
		}
		plain, _ := ToHistory(nil, []anthropic.MessageParam{assistant(text("x"))})
		return history.Estimate(hist, nil) - history.Estimate(plain, nil)
	}
	cases := []struct {
		name     string
		block    anthropic.ContentBlockParamUnion
		min, max int
	}{
		{"omitted text", anthropic.NewThinkingBlock(sig, ""), history.EstimateText(sig), history.EstimateText(sig) + 8},
		{"summary shorter than its signature", anthropic.NewThinkingBlock(sig, "Short summary."), history.EstimateText(sig), history.EstimateText(sig) + history.EstimateText("Short summary.") + 8},
		{"full text, short signature", anthropic.NewThinkingBlock("EqQBsig==", long), history.EstimateText(long), history.EstimateText(long) + 8},
		{"redacted", anthropic.NewRedactedThinkingBlock(sig), history.EstimateText(sig), history.EstimateText(sig) + 8},
	}
	for _, tc := range cases {
		if got := count(tc.block); got < tc.min || got > tc.max {
			t.Errorf("%s: counts %d, want %d to %d", tc.name, got, tc.min, tc.max)
		}
	}
	// Thinking of an earlier turn counts as the latest turn's does.
	turn := []anthropic.MessageParam{user(text("q")), assistant(anthropic.NewThinkingBlock(sig, ""), text("a"))}
	one, _ := ToHistory(nil, turn)
	two, _ := ToHistory(nil, append(append([]anthropic.MessageParam(nil), turn...), turn...))
	if e1, e2 := history.Estimate(one, nil), history.Estimate(two, nil); e2 != 2*e1 {
		t.Errorf("two turns count %d, one turn %d: an earlier turn's thinking does not count in full", e2, e1)
	}
}

// TestTrimThinkingLeftAlone: an assistant message whose calls no result
// answers (a tool run that was aborted) loses them to the orphan sweep;
// when only its thinking would be left, the message is left out, since
// the API rejects an assistant message that ends with thinking
// (tailcallhq/forgecode#2107). With text beside the thinking, the message
// stays, thinking and text.
func TestTrimThinkingLeftAlone(t *testing.T) {
	cases := []struct {
		name string
		msgs []anthropic.MessageParam
		want string
	}{
		{"thinking alone", []anthropic.MessageParam{user(text("go")), assistant(th("a"), toolUse("a", "f")), user(text("never mind"))},
			`user:text assistant:- user:text`},
		{"thinking and redacted", []anthropic.MessageParam{user(text("go")), assistant(th("a"), red("a"), toolUse("a", "f"), toolUse("b", "g")), user(text("never mind"))},
			`user:text assistant:- user:text`},
		{"thinking and text", []anthropic.MessageParam{user(text("go")), assistant(th("a"), text("running it"), toolUse("a", "f")), user(text("never mind"))},
			`user:text assistant:thinking,text user:text`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := Trim(nil, tc.msgs, 10_000)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range out {
				var types []string
				for _, b := range m.Content {
					types = append(types, *b.GetType())
				}
				got = append(got, string(m.Role)+":"+strings.Join(types, ","))
			}
			want := strings.Replace(tc.want, " assistant:-", "", 1)
			if strings.Join(got, " ") != want {
				t.Fatalf("output %s, want %s", strings.Join(got, " "), want)
			}
			if err := ValidateRequest(request2(thinkingEnabled, out...)); err != nil {
				t.Fatalf("output fails ValidateRequest: %v", err)
			}
		})
	}
}

// thinkingText is the text of a generated thinking block: characters JSON
// escapes (quotes, control characters, <, > and &, which encoding/json
// writes as \u003c...) and multi-byte ones, so that any re-encoding that
// changed a byte of it would show.
func thinkingText(b, k int) string {
	return "step " + strconv.Itoa(b) + "." + strconv.Itoa(k) + `: if a<b && c>d then "x"` + "\n\téà€😀 " + strings.Repeat("reason ", b%17)
}

// signature is a generated thinking signature, base64 as the API's are.
func signature(b, k int) string {
	return "EqQBCkgIARABGAIiQL" + strconv.Itoa(b*31+k) + "+/9mZ" + strings.Repeat("Q", b%23) + "=="
}

// genThinking builds, from data, a request as Claude produces it with
// thinking enabled: tasks, each followed by a tool loop whose first
// assistant message opens with thinking (a thinking block, a
// redacted_thinking block, or both), later ones with thinking only under
// interleaved thinking (data[0] odd); parallel tool_use blocks, results in
// any order and in every form the SDK allows (is_error, cache_control,
// param.Override blocks and messages), text beside the results now and
// then (a user turn: the next assistant message thinks again), and final
// answers. Every request it builds passes ValidateRequest with thinking
// enabled.
func genThinking(data []byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	system := []anthropic.TextBlockParam{{Text: "You are a careful agent. Think, then use the tools."}}
	interleaved := len(data) > 0 && data[0]%2 == 1
	msgs := []anthropic.MessageParam{user(text(adaptertest.TaskText(0)))}
	opens := true // the next assistant message opens an assistant turn
	id := 0
	for i, v := range data {
		b := int(v)
		switch {
		case b%9 == 0 && !opens:
			// A final answer, then the next task.
			msgs = append(msgs, assistant(text("done: "+adaptertest.NoteText(b))), user(cached(text(adaptertest.TaskText(b)))))
			opens = true
		case b%9 == 1 && opens:
			// An answer with no tool call, then the next task.
			msgs = append(msgs, assistant(thinkingBlocks(b, i)[0], text("answer "+strconv.Itoa(b))), user(text(adaptertest.TaskText(b))))
		default:
			var blocks []anthropic.ContentBlockParamUnion
			if opens || (interleaved && b%3 != 0) {
				blocks = thinkingBlocks(b, i)
			}
			if b%4 == 0 {
				blocks = append(blocks, text("Let me check "+strconv.Itoa(b)+"."))
			}
			n := 1 + b%3
			var results []anthropic.ContentBlockParamUnion
			for k := range n {
				id++
				tid := "toolu_" + strconv.Itoa(id)
				blocks = append(blocks, anthropic.NewToolUseBlock(tid, readInput(b, k), "read_file"))
				body := adaptertest.OutputText(b, k)
				var r anthropic.ContentBlockParamUnion
				switch (b + k) % 5 {
				case 0:
					r = anthropic.NewToolResultBlock(tid, body, true)
				case 1:
					r = cached(result(tid, body))
				case 2:
					r = param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(
						`{"type":"tool_result","tool_use_id":` + strconv.Quote(tid) + `,"content":` + strconv.Quote(body) + `}`))
				default:
					r = result(tid, body)
				}
				results = append(results, r)
			}
			if b%2 == 1 {
				slices.Reverse(results) // results in any order
			}
			opens = false
			if b%7 == 3 {
				results = append(results, text("note: "+strconv.Itoa(b)))
				opens = true
			}
			reply := user(results...)
			if b%11 == 5 {
				raw, _ := json.Marshal(reply)
				reply = param.Override[anthropic.MessageParam](json.RawMessage(raw))
			}
			step := assistant(blocks...)
			if b%13 == 6 {
				raw, _ := json.Marshal(step)
				step = param.Override[anthropic.MessageParam](json.RawMessage(raw))
			}
			msgs = append(msgs, step, reply)
		}
	}
	return system, msgs
}

// readInput is the input of a generated read_file call: from a few
// tokens to a few dozen, so that history.ElideOptions.ClearArguments has
// calls to clear, and to spare next to thinking.
func readInput(b, k int) map[string]any {
	return map[string]any{"path": "src/pkg" + strconv.Itoa(b) + "/file" + strconv.Itoa(k) + ".go", "why": strings.Repeat("check the handler ", b%9)}
}

// thinkingBlocks returns the thinking that opens an assistant message: a
// thinking block, a redacted_thinking block, or both, by b.
func thinkingBlocks(b, i int) []anthropic.ContentBlockParamUnion {
	t := anthropic.NewThinkingBlock(signature(b, i), thinkingText(b, i))
	r := anthropic.NewRedactedThinkingBlock("ErcBCkgIAR" + signature(i, b))
	switch b % 5 {
	case 0:
		return []anthropic.ContentBlockParamUnion{r}
	case 1:
		return []anthropic.ContentBlockParamUnion{t, r}
	}
	return []anthropic.ContentBlockParamUnion{t}
}

// thinkingParams is a request with thinking enabled.
func thinkingParams(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam) anthropic.MessageNewParams {
	p := request2(thinkingEnabled, msgs...)
	p.System = system
	return p
}

// canonical returns the JSON of a content block with its keys sorted, so
// that a block's JSON compares whatever encoder wrote it, without its
// cache_control marker (a trim keeps at most four); every string in it (a
// signature, a thinking text) is kept exactly.
func canonical(t testing.TB, b *block) string {
	t.Helper()
	raw := []byte(b.Raw)
	if b.Typed != nil {
		var err error
		if raw, err = json.Marshal(b.Typed); err != nil {
			t.Fatal(err)
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if obj, ok := v.(map[string]any); ok {
		// A trim keeps at most four breakpoints: it may take a marker
		// off an older block.
		delete(obj, "cache_control")
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// blocksOf returns the blocks of m, canonical (a tool_result block as its
// tool_use_id only, a tool_use block as its id, a plain text block as its
// text), and the thinking and redacted_thinking ones among them.
func blocksOf(t testing.TB, m *anthropic.MessageParam) (all, thinking []string) {
	t.Helper()
	_, blocks, err := readMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	for j := range blocks {
		b := &blocks[j]
		switch typ := blockType(b); {
		case b.Typed != nil && b.Typed.OfText != nil && !blockOverridden(b.Typed):
			all = append(all, "text "+b.Typed.OfText.Text) // no JSON to compare: quicker
		case b.Typed != nil && b.Typed.OfToolUse != nil:
			all = append(all, "tool_use "+b.Typed.OfToolUse.ID)
		case typ == typeToolResult:
			// Elision may replace its content: compare its id.
			var r struct {
				ID string `json:"tool_use_id"`
			}
			if b.Typed != nil {
				r.ID = b.Typed.OfToolResult.ToolUseID
			} else {
				_ = json.Unmarshal(b.Raw, &r)
			}
			all = append(all, "tool_result "+r.ID)
		case isThinking(typ):
			c := canonical(t, b)
			thinking = append(thinking, c)
			all = append(all, c)
		default:
			all = append(all, canonical(t, b))
		}
	}
	return all, thinking
}

// thinkingIndex holds what checkThinkingKept compares an output with:
// the blocks of each input message (blocksOf), the input of each of its
// tool_use blocks by ID, and the caller's thinking blocks.
type thinkingIndex struct {
	all, thinking [][]string
	inputs        []map[string]string
	own           map[*anthropic.ThinkingBlockParam]bool
	ownRedacted   map[*anthropic.RedactedThinkingBlockParam]bool
}

func indexThinking(t testing.TB, in []anthropic.MessageParam) *thinkingIndex {
	t.Helper()
	x := &thinkingIndex{
		all: make([][]string, len(in)), thinking: make([][]string, len(in)), inputs: make([]map[string]string, len(in)),
		own: map[*anthropic.ThinkingBlockParam]bool{}, ownRedacted: map[*anthropic.RedactedThinkingBlockParam]bool{},
	}
	for p := range in {
		x.all[p], x.thinking[p] = blocksOf(t, &in[p])
		x.inputs[p] = inputsOf(t, &in[p])
		for _, b := range in[p].Content {
			x.own[b.OfThinking], x.ownRedacted[b.OfRedactedThinking] = true, true
		}
	}
	return x
}

// inputsOf returns the input of each tool_use block of m, by ID, as the
// conversion reads it.
func inputsOf(t testing.TB, m *anthropic.MessageParam) map[string]string {
	t.Helper()
	_, blocks, err := readMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]string
	for _, b := range blocks {
		if b.Typed != nil && b.Typed.OfToolUse != nil {
			if in == nil {
				in = map[string]string{}
			}
			in[b.Typed.OfToolUse.ID] = inputJSON(b.Typed.OfToolUse.Input)
		}
	}
	return in
}

// Calls seen by thinkingIndex.check over the test run: spared counts the
// tool_use blocks sent next to thinking (their input the caller's),
// cleared those sent with their arguments cleared (none next to
// thinking).
var thinkingCalls struct{ spared, cleared atomic.Int64 }

// checkThinkingKept checks that out, a trim of in, holds every thinking
// block of every message it kept (whole or cut down) exactly as in holds
// it, in order, and no thinking block of its own: each output message is
// a notice (one text block) or made of blocks of one input message, in
// their order, and holds that message's thinking blocks, all of them. A
// typed thinking block is one of the caller's own values (the same
// pointer), and a tool_use block beside thinking carries the caller's
// input: history.ElideOptions.ClearArguments never clears it, since the
// thinking signature covers it. A tool_use block elsewhere carries the
// caller's input or the cleared one.
func checkThinkingKept(t *testing.T, in, out []anthropic.MessageParam) {
	t.Helper()
	indexThinking(t, in).check(t, out)
}

// check is checkThinkingKept against the indexed input; it returns the
// number of thinking and redacted_thinking blocks out holds.
func (x *thinkingIndex) check(t *testing.T, out []anthropic.MessageParam) int {
	t.Helper()
	pos, n := 0, 0
	for j := range out {
		all, thinking := blocksOf(t, &out[j])
		inputs := inputsOf(t, &out[j])
		n += len(thinking)
		src := -1
		for p := pos; p < len(x.all); p++ {
			// The corpus reuses tool_use IDs across messages: the inputs
			// tell them apart.
			if adaptertest.Subsequence(all, x.all[p], adaptertest.Same[string]) && sameOrCleared(inputs, x.inputs[p]) {
				src = p
				break
			}
		}
		if src < 0 {
			if len(out[j].Content) != 1 || out[j].Content[0].OfText == nil {
				t.Fatalf("output message %d is neither made of an input message's blocks nor a notice: %s", j, adaptertest.JSON(t, out[j]))
			}
			continue
		}
		pos = src + 1
		if want := x.thinking[src]; !slices.Equal(thinking, want) {
			t.Fatalf("output message %d (input %d) holds thinking\n%v\nthe input message holds\n%v", j, src, thinking, want)
		}
		for _, b := range out[j].Content {
			if (b.OfThinking != nil && !x.own[b.OfThinking]) || (b.OfRedactedThinking != nil && !x.ownRedacted[b.OfRedactedThinking]) {
				t.Fatalf("output message %d holds a thinking block that is a copy, not the caller's block", j)
			}
		}
		for id, in := range inputs {
			switch orig := x.inputs[src][id]; {
			case in == orig && len(thinking) > 0:
				thinkingCalls.spared.Add(1)
			case in == orig:
			case len(thinking) > 0:
				t.Fatalf("output message %d (input %d) holds thinking and tool_use %s with input %s, not the caller's %s", j, src, id, in, orig)
			default:
				thinkingCalls.cleared.Add(1)
			}
		}
	}
	return n
}

// sameOrCleared reports whether each tool_use input of an output message
// (by ID) is that of the input message or a cleared one.
func sameOrCleared(out, in map[string]string) bool {
	for id, s := range out {
		if s != in[id] && !strings.HasPrefix(s, adaptertest.ClearedPrefix) {
			return false
		}
	}
	return true
}

// thinkingOptionSets are the option sets the thinking tests trim with:
// plain, the ladder's rungs (elision, step trimming, both, configured
// notices), step trimming with an assistant-role step notice, and last
// (so that the saved fuzz inputs keep their sets) the ladder's rung that
// clears the arguments of old calls.
func thinkingOptionSets() [][]history.Option {
	ladder := adapter.LadderOptions()
	sets := [][]history.Option{nil, {history.WithStepTrim()}}
	sets = append(sets, ladder[:4]...)
	sets = append(sets, []history.Option{history.WithStepTrim(),
		history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[I dropped some of my steps]"})})
	return append(sets, ladder[4:]...)
}

// checkThinkingTrim trims the request at budget with opts and checks the
// output: it passes ValidateRequest with thinking enabled (the input does),
// keeps thinking blocks exactly (checkThinkingKept; idx is msgs indexed),
// and is left alone by a second trim.
func checkThinkingTrim(t *testing.T, system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, idx *thinkingIndex, budget int, opts ...history.Option) []anthropic.MessageParam {
	t.Helper()
	out, _, err := Trim(system, msgs, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if err := ValidateRequest(thinkingParams(system, out)); err != nil {
		t.Fatalf("budget %d: output fails ValidateRequest: %v\nthe API would say: %s\n%s", budget, err, apiMessage(err), adaptertest.JSON(t, out))
	}
	idx.check(t, out)
	if err == nil {
		// The notices are recognised, also an assistant-role one rendered
		// as a user message: a second trim changes nothing.
		again, _, err := Trim(system, out, budget, opts...)
		if err != nil || adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
			t.Fatalf("budget %d: trimming the output again changed it (%v):\n once %s\ntwice %s", budget, err, adaptertest.JSON(t, out), adaptertest.JSON(t, again))
		}
	}
	return out
}

// TestThinkingGenerator: genThinking builds what its tests need: requests
// that pass ValidateRequest with thinking enabled, with thinking and
// redacted_thinking blocks, parallel calls, text beside results, and
// more than one turn.
func TestThinkingGenerator(t *testing.T) {
	var thinking, redacted, parallel, nudges, turns int
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 12) {
		system, msgs := genThinking(seed)
		// The generator marks more blocks for caching than a request may
		// hold, on purpose (a trim keeps at most four): every other rule
		// holds.
		var me *MessageError
		if err := ValidateRequest(thinkingParams(system, msgs)); err != nil && !(errors.As(err, &me) && strings.Contains(me.Reason, "cache_control")) {
			t.Fatalf("seed %v: %v", seed, err)
		}
		for i := range msgs {
			_, blocks, _ := readMessage(&msgs[i])
			calls, results, other := 0, 0, 0
			for j := range blocks {
				switch blockType(&blocks[j]) {
				case typeThinking:
					thinking++
				case typeRedactedThinking:
					redacted++
				case "tool_use":
					calls++
				case typeToolResult:
					results++
				default:
					other++
				}
			}
			if calls > 1 {
				parallel++
			}
			if results > 0 && other > 0 {
				nudges++
			}
			if msgs[i].Role == anthropic.MessageParamRoleUser && results == 0 {
				turns++
			}
		}
	}
	if thinking == 0 || redacted == 0 || parallel == 0 || nudges == 0 || turns < 20 {
		t.Fatalf("%d thinking, %d redacted_thinking blocks, %d parallel calls, %d messages with text beside results, %d tasks", thinking, redacted, parallel, nudges, turns)
	}
}

// TestTrimThinking trims thinking tool loops with every option set at
// budgets from 1 to above their size: every output passes ValidateRequest
// with thinking enabled and carries its thinking blocks exactly.
//
// 10 requests, 8 option sets (the last clearing arguments), about 10
// budgets each: 848 trims, each trimmed twice and its thinking compared
// block by block, the tool_use blocks beside it never cleared (8,061 sent
// with the caller's input) while others are (560); no trim modifies its
// input.
func TestTrimThinking(t *testing.T) {
	spared, cleared := thinkingCalls.spared.Load(), thinkingCalls.cleared.Load()
	trims := 0
	defer func() {
		spared, cleared = thinkingCalls.spared.Load()-spared, thinkingCalls.cleared.Load()-cleared
		t.Logf("%d trims: %d tool_use blocks sent beside thinking with the caller's input, %d elsewhere cleared", trims, spared, cleared)
		if spared == 0 || cleared == 0 {
			t.Error("the sweep did not both spare calls beside thinking and clear others")
		}
	}()
	// Under the race detector, 5 of the 10 requests (race.Sample) at a
	// third of the budgets (Budgets): the plain run checks all; the trims
	// are single-goroutine logic.
	for _, seed := range race.Sample(adaptertest.Seeds(adaptertest.LadderSeeds, 6), 5) {
		system, msgs := genThinking(seed)
		before := adaptertest.JSON(t, msgs)
		total := adapter.Tokens(t, request{system, msgs})
		idx := indexThinking(t, msgs)
		defer func() {
			if adaptertest.JSON(t, msgs) != before {
				t.Errorf("seed %v: a trim modified its input", seed)
			}
		}()
		for o, opts := range thinkingOptionSets() {
			for _, budget := range adaptertest.Budgets(total, 10) {
				trims++
				checkThinkingTrim(t, system, msgs, idx, budget, opts...)
				if t.Failed() {
					t.Fatalf("seed %v, options %d", seed, o)
				}
			}
		}
	}
}

// TestStepNoticePlacement: in a thinking tool loop trimmed by steps, the
// step notice is a user message of its own right after the task, before
// the kept first step, whose thinking opens the final assistant turn; it
// never lands between the tool loops, where the API would join it with
// the results before it into a user turn and require the step after it
// to open with thinking. An assistant-role notice there is sent as a user
// message: the API would join it with the first step, which would then
// open with text.
func TestStepNoticePlacement(t *testing.T) {
	big := adaptertest.OutputText(120, 0) + adaptertest.OutputText(121, 1)
	earlier := []anthropic.MessageParam{user(text("earlier task")), assistant(th("e"), text("earlier answer"))}
	loop := []anthropic.MessageParam{
		user(text("task")),
		assistant(th("a"), toolUse("a", "f")), user(result("a", "A")),
		assistant(toolUse("b", "f")), user(result("b", big)),
		assistant(toolUse("c", "f")), user(result("c", big)),
		assistant(toolUse("d", "f")), user(result("d", "D")),
	}
	assistantNotice := history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[I dropped some of my steps]"})
	cases := []struct {
		name string
		msgs []anthropic.MessageParam
		opts []history.Option
		// want is the output: "task", "notice:<text>", or the ID of the
		// tool_use or tool_result the message holds ("A:a", "R:a").
		want string
	}{
		{"user notice", loop, []history.Option{history.WithStepTrim()},
			"task notice:" + history.StepBreadcrumbText + " A:a R:a A:d R:d"},
		{"assistant notice sent as a user message", loop, []history.Option{history.WithStepTrim(), assistantNotice},
			"task notice:[I dropped some of my steps] A:a R:a A:d R:d"},
		{"earlier turns dropped too", append(append([]anthropic.MessageParam(nil), earlier...), loop...), []history.Option{history.WithStepTrim()},
			"notice:" + history.BreadcrumbText + " task notice:" + history.StepBreadcrumbText + " A:a R:a A:d R:d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hist, _ := ToHistory(nil, loop)
			out, res, err := Trim(nil, tc.msgs, history.Estimate(hist, nil)/3+20, tc.opts...)
			if err != nil || res.DroppedSteps == 0 {
				t.Fatalf("err %v, %d steps dropped", err, res.DroppedSteps)
			}
			var got []string
			for _, m := range out {
				b := m.Content[len(m.Content)-1]
				switch {
				case m.Role == anthropic.MessageParamRoleUser && b.OfText != nil && b.OfText.Text == "task":
					got = append(got, "task")
				case m.Role == anthropic.MessageParamRoleUser && b.OfText != nil:
					got = append(got, "notice:"+b.OfText.Text)
				case b.OfToolUse != nil:
					got = append(got, "A:"+b.OfToolUse.ID)
				case b.OfToolResult != nil:
					got = append(got, "R:"+b.OfToolResult.ToolUseID)
				default:
					got = append(got, string(m.Role)+"?")
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("output\n%s\nwant\n%s", strings.Join(got, " "), tc.want)
			}
			if err := ValidateRequest(thinkingParams(nil, out)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// genRandomThinking builds a request from data with no regard for the
// rules: tasks, answers, tool steps opening with thinking,
// redacted_thinking, both or neither, text before the thinking now and
// then, parallel calls (with inputs of a few tokens to a few dozen, see
// readInput), results in any order with text beside them,
// unanswered calls, stray results, and assistant messages of thinking
// alone. Some requests pass ValidateRequest with thinking enabled, many do
// not; FuzzTrimThinking checks the output of those that do.
func genRandomThinking(data []byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	seed := adaptertest.Bytes(data)
	next := seed.Next
	system := []anthropic.TextBlockParam{{Text: "sys"}}
	var msgs []anthropic.MessageParam
	id := 0
	for {
		b := next()
		if b < 0 {
			return system, msgs
		}
		// A byte from 240 up breaks a rule: 240 text before thinking, 241
		// an assistant message of thinking alone, 242 an unanswered call,
		// 243 a stray result; below, the history is well formed, but for
		// tool loops that do not open with thinking.
		broken := b - 240
		opening := func() []anthropic.ContentBlockParamUnion {
			switch {
			case broken == 0:
				return []anthropic.ContentBlockParamUnion{text("first"), th(strconv.Itoa(b))}
			case (b>>3)%8 < 2:
				return nil
			case (b>>3)%8 == 2:
				return []anthropic.ContentBlockParamUnion{red(strconv.Itoa(b))}
			case (b>>3)%8 == 3:
				return []anthropic.ContentBlockParamUnion{th(strconv.Itoa(b)), red(strconv.Itoa(b))}
			}
			return []anthropic.ContentBlockParamUnion{th(strconv.Itoa(b))}
		}
		switch {
		case broken == 1:
			msgs = append(msgs, assistant(th(strconv.Itoa(b))))
		case b%8 < 2:
			msgs = append(msgs, user(text(adaptertest.Words(b))))
		case b%8 == 2:
			msgs = append(msgs, assistant(append(opening(), text(adaptertest.Words(b)))...))
		default:
			blocks := opening()
			var ids []string
			for range 1 + b%3 {
				id++
				tid := "toolu_" + strconv.Itoa(id)
				blocks = append(blocks, anthropic.NewToolUseBlock(tid, readInput(b, len(ids)), "tool"))
				ids = append(ids, tid)
			}
			msgs = append(msgs, assistant(blocks...))
			var results []anthropic.ContentBlockParamUnion
			for k := range ids {
				if broken == 2 && k == 0 {
					continue // unanswered
				}
				results = append(results, result(ids[(k+b)%len(ids)], adaptertest.OutputText(b, k)))
			}
			if broken == 3 {
				results = append(results, result("stray_"+strconv.Itoa(b), "x"))
			}
			if b%3 == 0 {
				results = append(results, text("note "+strconv.Itoa(b)))
			}
			if len(results) > 0 {
				msgs = append(msgs, user(results...))
			}
		}
	}
}

// textBesideResults reports whether a user message after the last user
// message holding no tool_result block (the latest turn, as the core and
// the other reading see it) holds text or another block beside its
// tool_result blocks: the shape under which the two readings of where the
// final assistant turn begins differ.
func textBesideResults(msgs []anthropic.MessageParam) bool {
	types := typesOf(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != anthropic.MessageParamRoleUser {
			continue
		}
		if pureUser(types[i]) {
			return false
		}
		if userTurn(types[i]) {
			return true
		}
	}
	return false
}

// pureUser reports whether a user message of these block types holds no
// tool_result block: the other reading of where a final assistant turn
// begins, by which text beside tool results continues the tool loop.
func pureUser(types []string) bool {
	for _, t := range types {
		if t == typeToolResult {
			return false
		}
	}
	return true
}

func typesOf(msgs []anthropic.MessageParam) [][]string {
	types := make([][]string, len(msgs))
	for i := range msgs {
		_, blocks, _ := readMessage(&msgs[i])
		for j := range blocks {
			types[i] = append(types[i], blockType(&blocks[j]))
		}
	}
	return types
}

// validLoose is ValidateRequest with thinking enabled by the other
// reading of where the final assistant turn begins: after the last user
// message holding no tool_result block, text beside tool results
// continuing the tool loop.
func validLoose(system []anthropic.TextBlockParam, msgs []anthropic.MessageParam) error {
	return validateRequest(thinkingParams(system, msgs), pureUser)
}

var thinkingFuzzSeeds = [][]byte{
	{0, 4, 5, 6, 3, 8, 0, 20, 21, 37},
	{1, 52, 53, 54, 7, 0, 68, 69, 70, 71},
	{0, 16, 3, 5, 6, 3, 0, 2, 0, 84, 85},
	{10, 36, 14, 15, 9, 11, 22, 24, 25, 26},
}

// randomThinking is a request genRandomThinking built, with what
// checkRandomThinking reads of it once for all its trims: its thinking
// index and whether it is valid by either reading.
type randomThinking struct {
	system []anthropic.TextBlockParam
	msgs   []anthropic.MessageParam
	index  *thinkingIndex
	// valid: the request passes ValidateRequest with thinking enabled;
	// loose: it is valid by the other reading (validLoose); other: it
	// holds text beside tool results in its latest turn.
	valid, loose, other bool
}

func newRandomThinking(t *testing.T, data []byte) *randomThinking {
	system, msgs := genRandomThinking(data)
	r := &randomThinking{system: system, msgs: msgs, index: indexThinking(t, msgs)}
	r.loose = validLoose(system, msgs) == nil
	r.valid = ValidateRequest(thinkingParams(system, msgs)) == nil
	r.other = r.valid && textBesideResults(msgs)
	return r
}

// checkRandomThinking trims the request at budget with option set o:
// thinking blocks come back exactly, and the output is valid whenever the
// input is, by both readings of where the final assistant turn begins:
// ValidateRequest's (text beside tool results opens a new assistant turn)
// and the other one (it continues the tool loop).
//
// It returns whether the input passed ValidateRequest, and whether it
// holds text beside tool results in its latest turn, the shape where the
// two readings differ.
func checkRandomThinking(t *testing.T, r *randomThinking, budget int, o int) (valid, other bool) {
	sets := thinkingOptionSets()
	opts := sets[o%len(sets)]
	out, _, err := Trim(r.system, r.msgs, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	r.index.check(t, out)
	if r.loose {
		if err := validLoose(r.system, out); err != nil {
			t.Fatalf("budget %d, options %d: the input is valid by the other reading, the output is not: %v\n in %s\nout %s", budget, o, err, adaptertest.JSON(t, r.msgs), adaptertest.JSON(t, out))
		}
	}
	if !r.valid {
		return false, false
	}
	if verr := ValidateRequest(thinkingParams(r.system, out)); verr != nil {
		t.Fatalf("budget %d, options %d: the input passes ValidateRequest, the output does not: %v\n in %s\nout %s", budget, o, verr, adaptertest.JSON(t, r.msgs), adaptertest.JSON(t, out))
	}
	return true, r.other
}

// TestTrimRandomThinking runs checkRandomThinking over generated requests
// at budgets from 1 to above their size, with every option set.
func TestTrimRandomThinking(t *testing.T) {
	requests, valid, trims, checked, other := 0, 0, 0, 0, 0
	spared, cleared := thinkingCalls.spared.Load(), thinkingCalls.cleared.Load()
	for _, seed := range adaptertest.Seeds(thinkingFuzzSeeds, 16) {
		r := newRandomThinking(t, seed)
		requests++
		if r.valid {
			valid++
		}
		budgets := adaptertest.Budgets(adapter.Tokens(t, request{r.system, r.msgs}), 8)
		for o := range thinkingOptionSets() {
			for _, budget := range budgets {
				v, x := checkRandomThinking(t, r, budget, o)
				trims++
				if v {
					checked++
				}
				if x {
					other++
				}
			}
		}
	}
	t.Logf("%d requests (%d pass ValidateRequest), %d trims, %d outputs of valid inputs checked, %d of them with text beside results in the latest turn; %d tool_use blocks sent beside thinking with the caller's input, %d elsewhere cleared",
		requests, valid, trims, checked, other, thinkingCalls.spared.Load()-spared, thinkingCalls.cleared.Load()-cleared)
	if thinkingCalls.cleared.Load() == cleared {
		t.Error("no trim cleared arguments")
	}
	if valid < 10 {
		t.Fatalf("only %d of the generated requests pass ValidateRequest: the property is hardly tested", valid)
	}
}

// FuzzTrimThinking: random requests with thinking, redacted thinking and
// parallel calls, any budget, any option set (the last clears the
// arguments of old calls): thinking blocks come back exactly, the
// tool_use blocks beside them with their input, and a request that passes
// ValidateRequest with thinking enabled is trimmed to one that does.
func FuzzTrimThinking(f *testing.F) {
	clearing := uint8(len(thinkingOptionSets()) - 1)
	for _, s := range thinkingFuzzSeeds {
		f.Add(s, uint16(120), uint8(1))
		f.Add(s, uint16(120), clearing)
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		checkRandomThinking(t, newRandomThinking(t, data), int(budget)+1, int(o))
	})
}

// TestTrimThinkingTextBesideFirstResults is the shape FuzzTrimThinking
// found: text beside the results of the first step (a runtime's note, a
// user's interjection) is a user turn by ValidateRequest's reading, so the
// loop after it is a new assistant turn whose first message (the second
// step, which thought again) must start with thinking. The core keeps a
// step with reasoning that follows a nudge after the kept first step, so
// the output is valid by both readings.
func TestTrimThinkingTextBesideFirstResults(t *testing.T) {
	big := adaptertest.OutputText(200, 0) + adaptertest.OutputText(201, 0)
	msgs := []anthropic.MessageParam{
		user(text("task")),
		assistant(th("a"), toolUse("a", "f")), user(result("a", "A"), text("note: hurry")),
		assistant(th("b"), toolUse("b", "f")), user(result("b", big)),
		assistant(toolUse("c", "f")), user(result("c", big)),
		assistant(toolUse("d", "f")), user(result("d", "D")),
	}
	if err := ValidateRequest(request2(thinkingEnabled, msgs...)); err != nil {
		t.Fatal(err)
	}
	hist, _ := ToHistory(nil, msgs)
	out, res, _ := Trim(nil, msgs, history.Estimate(hist, nil)/2, history.WithStepTrim())
	if res.DroppedSteps == 0 {
		t.Fatal("no step dropped: the test does not test step trimming")
	}
	checkThinkingKept(t, msgs, out)
	if err := validLoose(nil, out); err != nil {
		t.Fatalf("the kept first step does not open the final tool loop: %v\n%s", err, adaptertest.JSON(t, out))
	}
	if err := ValidateRequest(request2(thinkingEnabled, out...)); err != nil {
		t.Fatalf("the thinking step after the note was dropped: %v\n%s", err, adaptertest.JSON(t, out))
	}
	if res.DroppedSteps != 1 {
		t.Fatalf("%d steps dropped, want 1 (the third; the first two hold the loops' thinking)", res.DroppedSteps)
	}
}

// Thinking tool loops trimmed by Trim and RecoverOverflow and sent by the
// real anthropic-sdk-go client to a local server that reads each request
// as the Messages API does, from the JSON on the wire, and answers a
// request that breaks a rule with the API's own 400 body. The server's
// checks are written here from the rules, apart from ValidateRequest, so
// that the two are checked against each other.

// wireAPI is the local Messages API. It knows the thinking blocks "it
// returned" (issued), and counts a prompt as a provider whose tokenizer
// counts 15% more than the library's estimate, against limit.
type wireAPI struct {
	mu     sync.Mutex
	issued map[string]string // thinking signature -> its text; redacted data -> "redacted"
	limit  int               // 0: no limit
	// rejected counts the 400s for a broken rule, by message; overflows
	// the "prompt is too long" ones; accepted the 200s.
	rejected            map[string]int
	overflows, accepted int
	// cleared counts the tool_use blocks of accepted requests whose input
	// is the object history.ElideOptions.ClearArguments leaves.
	cleared int
}

func newWireAPI() *wireAPI {
	return &wireAPI{issued: map[string]string{}, rejected: map[string]int{}}
}

// issue records the thinking blocks of msgs as ones the API returned.
func (a *wireAPI) issue(t testing.TB, msgs []anthropic.MessageParam) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range msgs {
		_, blocks, err := readMessage(&msgs[i])
		if err != nil {
			t.Fatal(err)
		}
		for j := range blocks {
			var b wireBlock
			if err := json.Unmarshal([]byte(canonical(t, &blocks[j])), &b); err != nil {
				t.Fatal(err)
			}
			switch b.Type {
			case typeThinking:
				a.issued[b.Signature] = b.Thinking
			case typeRedactedThinking:
				a.issued[b.Data] = "redacted"
			}
		}
	}
}

type wireBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	blocks  []wireBlock
}

func (a *wireAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Thinking struct {
			Type string `json:"type"`
		} `json:"thinking"`
		System   []anthropic.TextBlockParam `json:"system"`
		Messages []wireMessage              `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		a.reject(w, "malformed request body: "+err.Error())
		return
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			m.blocks = []wireBlock{{Type: "text"}}
		} else if err := json.Unmarshal(m.Content, &m.blocks); err != nil {
			a.reject(w, "malformed content: "+err.Error())
			return
		}
	}
	if msg := a.check(req.Messages, req.Thinking.Type == "enabled"); msg != "" {
		a.reject(w, msg)
		return
	}
	if a.limit > 0 {
		var msgs []anthropic.MessageParam
		var raw struct {
			Messages []anthropic.MessageParam `json:"messages"`
		}
		_ = json.Unmarshal(body, &raw)
		msgs = raw.Messages
		hist, err := ToHistory(req.System, msgs)
		if err != nil {
			a.reject(w, err.Error())
			return
		}
		if n := int(math.Ceil(1.15 * float64(history.Estimate(hist, nil)))); n > a.limit {
			a.mu.Lock()
			a.overflows++
			a.mu.Unlock()
			a.answer(w, http.StatusBadRequest, fmt.Sprintf(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"},"request_id":"req_011CTest"}`, n, a.limit))
			return
		}
	}
	a.mu.Lock()
	a.accepted++
	for _, m := range req.Messages {
		for _, b := range m.blocks {
			if b.Type == "tool_use" && strings.HasPrefix(string(b.Input), adaptertest.ClearedPrefix) {
				a.cleared++
			}
		}
	}
	a.mu.Unlock()
	a.answer(w, http.StatusOK, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}`)
}

// check returns the API's message for the first rule msgs break, or "".
// The messages are apiMessage's, each quoted from a public report.
func (a *wireAPI) check(msgs []wireMessage, thinking bool) string {
	isThink := func(t string) bool { return t == typeThinking || t == typeRedactedThinking }
	// A tool_use input is an object (anthropics/claude-code#6696,
	// anthropics/anthropic-sdk-typescript#648).
	for i, m := range msgs {
		for j, b := range m.blocks {
			var obj map[string]json.RawMessage
			if b.Type == "tool_use" && json.Unmarshal(b.Input, &obj) != nil {
				return fmt.Sprintf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
			}
		}
	}
	// Pairing.
	var prev []string
	for i, m := range msgs {
		var answered []string
		for j, b := range m.blocks {
			if b.Type != typeToolResult {
				continue
			}
			if m.Role != "user" || !strings.Contains(" "+strings.Join(prev, " ")+" ", " "+b.ToolUseID+" ") || strings.Contains(" "+strings.Join(answered, " ")+" ", " "+b.ToolUseID+" ") {
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			}
			answered = append(answered, b.ToolUseID)
		}
		for _, id := range prev {
			if !strings.Contains(" "+strings.Join(answered, " ")+" ", " "+id+" ") {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
			}
		}
		prev = nil
		if m.Role == "assistant" {
			for _, b := range m.blocks {
				if b.Type == "tool_use" {
					prev = append(prev, b.ID)
				}
			}
		}
	}
	if len(prev) > 0 {
		return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(msgs)-1, prev[0])
	}
	// Thinking blocks come back as the API returned them
	// (anthropics/claude-code#63203; the server holds every message to
	// it, not only the latest assistant one).
	a.mu.Lock()
	for i, m := range msgs {
		for j, b := range m.blocks {
			ok := true
			switch b.Type {
			case typeThinking:
				text, found := a.issued[b.Signature]
				ok = found && text == b.Thinking
			case typeRedactedThinking:
				ok = a.issued[b.Data] == "redacted"
			}
			if !ok {
				a.mu.Unlock()
				return fmt.Sprintf("messages.%d.content.%d: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.", i, j)
			}
		}
	}
	a.mu.Unlock()
	if !thinking {
		return ""
	}
	for i, m := range msgs {
		if m.Role != "assistant" || len(m.blocks) == 0 {
			continue
		}
		for _, b := range m.blocks {
			if isThink(b.Type) && !isThink(m.blocks[0].Type) {
				return fmt.Sprintf("messages.%d.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found %s.", i, m.blocks[0].Type)
			}
		}
		if m.blocks[len(m.blocks)-1].Type == typeThinking {
			return fmt.Sprintf("messages.%d: The final block in an assistant message cannot be `thinking`.", i)
		}
	}
	// The final assistant turn begins after the last user message with a
	// block that is not a tool_result.
	from := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		turn := len(msgs[i].blocks) == 0
		for _, b := range msgs[i].blocks {
			turn = turn || b.Type != typeToolResult
		}
		if turn {
			from = i + 1
			break
		}
	}
	for i := from; i < len(msgs); i++ {
		if msgs[i].Role == "assistant" {
			if first := msgs[i].blocks; len(first) == 0 || !isThink(first[0].Type) {
				found := "nothing"
				if len(first) > 0 {
					found = first[0].Type
				}
				return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking", i, found)
			}
			break
		}
	}
	return ""
}

func (a *wireAPI) reject(w http.ResponseWriter, msg string) {
	a.mu.Lock()
	a.rejected[msg]++
	a.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": msg}, "request_id": "req_011CTest"})
	a.answer(w, http.StatusBadRequest, string(body))
}

func (a *wireAPI) answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// send sends msgs with thinking enabled through the real client.
func send(client anthropic.Client, system []anthropic.TextBlockParam, msgs []anthropic.MessageParam) error {
	p := thinkingParams(system, msgs)
	_, err := client.Messages.New(context.Background(), p)
	return err
}

func wireClient(t *testing.T, api *wireAPI) anthropic.Client {
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
}

// TestThinkingLoopsThroughSDK trims generated thinking tool loops with
// step trimming and elision at budgets from 1% of their size up, sends
// each output through anthropic-sdk-go to a server whose tokenizer counts
// 15% more than the library and whose window is the budget, and retries
// each "prompt is too long" with RecoverOverflow: no request is rejected
// for a broken rule, and every overflow is recovered unless only the
// latest turn is left (history.ErrCannotRecover, which a caller surfaces).
// The last option set clears the arguments of old calls: their tool_use
// blocks reach the server with the cleared object as their input, which
// the server counts as sent.
func TestThinkingLoopsThroughSDK(t *testing.T) {
	api := newWireAPI()
	client := wireClient(t, api)
	sets := [][]history.Option{
		{history.WithStepTrim()},
		{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
		{history.WithElision(history.ElideOptions{MinTokens: 20}), history.WithStepTrim(),
			history.WithStepBreadcrumb(history.Message{Role: history.RoleAssistant, Content: "[I dropped some of my steps]"})},
		{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, ClearArguments: 8}), history.WithStepTrim()},
	}
	sent, recovered, tooLarge, cannot := 0, 0, 0, 0
	// Under the race detector, 8 of the 12 requests at 4 of the 9 budgets
	// (race.Sample): every request still goes through the SDK client and
	// its goroutines, overflows and is recovered; the plain run sends all.
	for _, seed := range race.Sample(adaptertest.Seeds(adaptertest.LadderSeeds, 8), 8) {
		system, msgs := genThinking(seed)
		api.issue(t, msgs)
		total := adapter.Tokens(t, request{system, msgs})
		for o, opts := range sets {
			for _, pct := range race.Sample([]int{1, 2, 5, 10, 20, 35, 50, 75, 100}, 4) {
				budget := max(1, total*pct/100)
				out, _, err := Trim(system, msgs, budget, opts...)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					t.Fatal(err)
				}
				api.mu.Lock()
				api.limit = budget
				api.mu.Unlock()
				if errors.Is(err, history.ErrLatestTurnTooLarge) {
					api.limit, tooLarge = 0, tooLarge+1 // the window the latest turn needs
				}
				for attempt := 1; ; attempt++ {
					sent++
					err = send(client, system, out)
					if err == nil || !history.IsContextOverflow(err) {
						break
					}
					if attempt > 3 {
						t.Fatalf("seed %v, options %d, %d%%: still too long after %d attempts: %v", seed, o, pct, attempt, err)
					}
					out, _, err = RecoverOverflow(system, out, err, attempt, opts...)
					if errors.Is(err, history.ErrCannotRecover) {
						break // the latest turn does not fit the window: the caller surfaces it
					}
					if err != nil {
						t.Fatalf("seed %v, options %d, %d%%: RecoverOverflow: %v", seed, o, pct, err)
					}
					recovered++
				}
				if errors.Is(err, history.ErrCannotRecover) {
					cannot++
					continue
				}
				if err != nil {
					t.Fatalf("seed %v, options %d, %d%%: the API rejected the request: %v", seed, o, pct, err)
				}
			}
		}
	}
	t.Logf("%d requests sent, %d accepted, %d rejected for a broken rule %v; %d overflows recovered by RecoverOverflow, %d where only the latest turn was left (ErrCannotRecover); %d trims with the latest turn over budget (sent with no window); %d tool_use blocks accepted with their arguments cleared",
		sent, api.accepted, len(api.rejected), api.rejected, recovered, cannot, tooLarge, api.cleared)
	if len(api.rejected) > 0 {
		t.Fatalf("rejections: %v", api.rejected)
	}
	if api.cleared == 0 {
		t.Fatal("no accepted request carried cleared arguments")
	}
	if recovered == 0 {
		t.Fatal("no request overflowed: RecoverOverflow was not exercised")
	}
}

// TestThinkingServerRejects: the server rejects what the API rejects, with
// the API's body, as the SDK reports it; so TestThinkingLoopsThroughSDK's
// zero could have been more.
func TestThinkingServerRejects(t *testing.T) {
	api := newWireAPI()
	client := wireClient(t, api)
	good := []anthropic.MessageParam{user(text("go")), assistant(th("a"), toolUse("a", "f")), user(result("a", "A")), assistant(toolUse("b", "f")), user(result("b", "B"))}
	api.issue(t, good)
	tampered := anthropic.NewThinkingBlock("sig-a==", "thinking about a, edited")
	cases := []struct {
		name string
		msgs []anthropic.MessageParam
		want string // "" accepted
	}{
		{"valid", good, ""},
		{"first step dropped", []anthropic.MessageParam{good[0], good[3], good[4]},
			"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."},
		{"thinking dropped", []anthropic.MessageParam{good[0], assistant(toolUse("a", "f")), good[2], good[3], good[4]},
			"messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."},
		{"notice between the loops", []anthropic.MessageParam{good[0], good[1], good[2], user(text(history.StepBreadcrumbText)), good[3], good[4]},
			"messages.4.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."},
		{"thinking edited", []anthropic.MessageParam{good[0], assistant(tampered, toolUse("a", "f")), good[2], good[3], good[4]},
			"messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified."},
		{"result lost", []anthropic.MessageParam{good[0], good[1], good[2], good[3]},
			"messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: b."},
		{"input not an object", []anthropic.MessageParam{good[0], good[1], good[2], assistant(anthropic.NewToolUseBlock("b", json.RawMessage(`"[arguments elided]"`), "f")), good[4]},
			"messages.3.content.0.tool_use.input: Input should be a valid dictionary"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := send(client, nil, tc.msgs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %v, want a 400 from the SDK", err)
			}
			var body struct {
				Error struct{ Type, Message string } `json:"error"`
			}
			if json.Unmarshal([]byte(apiErr.RawJSON()), &body) != nil || body.Error.Type != "invalid_request_error" || !strings.HasPrefix(body.Error.Message, tc.want) {
				t.Fatalf("the API said %s\nwant %s", apiErr.RawJSON(), tc.want)
			}
			// ValidateRequest reports the same rule (its apiMessage is the
			// server's message for it), except an edited block, which only
			// the API can tell by the signature, and an input that is not
			// an object, which no trim makes of one that is.
			if tc.name != "thinking edited" && tc.name != "input not an object" {
				if got := apiMessage(ValidateRequest(thinkingParams(nil, tc.msgs))); !strings.HasPrefix(got, tc.want) {
					t.Fatalf("ValidateRequest would say %q", got)
				}
			}
		})
	}
	n := 0
	for _, c := range api.rejected {
		n += c
	}
	if n != len(cases)-1 {
		t.Fatalf("the server rejected %d requests, want %d", n, len(cases)-1)
	}
}
