package anthropic

import (
	"strconv"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name, reason string
		msgs         []anthropic.MessageParam
		index        int // -1: valid
		id           string
	}{
		{"empty", "nothing to pair", nil, -1, ""},
		{"plain chat", "no tools", []anthropic.MessageParam{user(text("hi")), assistant(text("yo"))}, -1, ""},
		{"parallel calls", "results in any order, text after them",
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f"), toolUse("b", "g")), user(result("b", "B"), result("a", "A"), text("more"))}, -1, ""},
		{"consecutive users", "the API joins consecutive user messages (breadcrumb + turn)",
			[]anthropic.MessageParam{user(text(history.BreadcrumbText)), user(text("hi")), assistant(text("yo"))}, -1, ""},
		{"id reused later", "ids only need to pair with the neighbouring message",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(result("a", "1")), assistant(toolUse("a", "f")), user(result("a", "2"))}, -1, ""},
		{"unanswered at end", "a tool_use needs its tool_result in the next message",
			[]anthropic.MessageParam{user(text("go")), assistant(toolUse("a", "f"))}, 1, "a"},
		{"answer two messages later", "the result must be in the very next message",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(text("wait")), user(result("a", "A"))}, 0, "a"},
		{"one of two answered", "every tool_use of the message needs a result",
			[]anthropic.MessageParam{assistant(toolUse("a", "f"), toolUse("b", "g")), user(result("a", "A"))}, 0, "b"},
		{"orphan result", "a tool_result with no tool_use before it",
			[]anthropic.MessageParam{user(text("hi")), assistant(text("yo")), user(result("a", "A"))}, 2, "a"},
		{"result in first message", "no preceding assistant at all",
			[]anthropic.MessageParam{user(result("a", "A"))}, 0, "a"},
		{"answered twice", "one tool_use, one tool_result",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(result("a", "A"), result("a", "A"))}, 1, "a"},
		{"text before result", "tool_result blocks must come first",
			[]anthropic.MessageParam{assistant(toolUse("a", "f")), user(text("here:"), result("a", "A"))}, 1, "a"},
	}
	where := func(e *PairingError) (int, string) { return e.Index, e.ID }
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			adaptertest.Violation(t, Validate(tc.msgs), ErrUnpaired, where, tc.index, tc.id, tc.reason)
		})
	}
}

// genRequest builds a request from data: the fuzzer's bytes or a seed. It
// deliberately produces broken pairs (unanswered tool_use, stray and
// duplicate tool_result blocks, answers two messages late) as well as good
// ones, always with tool_result blocks first in their message.
func genRequest(data []byte) ([]anthropic.TextBlockParam, []anthropic.MessageParam) {
	seed := adaptertest.Bytes(data)
	next := seed.Next
	words := adaptertest.Words
	var system []anthropic.TextBlockParam
	if b := next(); b >= 0 && b%3 != 0 {
		system = append(system, anthropic.TextBlockParam{Text: words(b)})
	}
	var msgs []anthropic.MessageParam
	var pending []string
	id := 0
	for {
		b := next()
		if b < 0 {
			return system, msgs
		}
		switch b % 8 {
		case 0, 1:
			msgs = append(msgs, user(text(words(b))))
		case 2:
			msgs = append(msgs, assistant(anthropic.NewThinkingBlock("sig"+strconv.Itoa(b), words(b)), text(words(b))))
		case 3, 4:
			var blocks []anthropic.ContentBlockParamUnion
			if b%2 == 0 {
				blocks = append(blocks, anthropic.NewThinkingBlock("sig", words(b)))
			}
			pending = pending[:0]
			for range 1 + b%3 {
				id++
				tid := "toolu_" + strconv.Itoa(id)
				blocks = append(blocks, toolUse(tid, "tool"))
				pending = append(pending, tid)
			}
			msgs = append(msgs, assistant(blocks...))
		case 5, 6:
			// One user message answering some pending calls, in an order
			// chosen by b, maybe with a stray result and trailing text.
			var blocks []anthropic.ContentBlockParamUnion
			for k := range pending {
				if (b>>(k+3))&1 == 0 || b%7 == 0 {
					blocks = append(blocks, result(pending[(k+b)%len(pending)], words(b)))
				}
			}
			if b%5 == 0 {
				blocks = append(blocks, result("stray_"+strconv.Itoa(b), "x"))
			}
			if b%3 == 0 || len(blocks) == 0 {
				blocks = append(blocks, cached(text(words(b))))
			}
			msgs = append(msgs, user(blocks...))
		case 7:
			msgs = append(msgs, user(result("stray_"+strconv.Itoa(b), words(b))))
		}
	}
}

// checkTrim is the property every trim must have: the output passes
// Validate, the input is untouched, every output message is an original or
// a breadcrumb or holds only blocks of one original message in their
// original order, and trimming the output again changes nothing (see below
// for the one exception).
func checkTrim(t *testing.T, system []anthropic.TextBlockParam, msgs []anthropic.MessageParam, budget int) {
	t.Helper()
	r, res, err := adapter.Trimmed(t, request{system, msgs}, budget)
	out := r.Messages
	// Every output block comes from the input, in input order, except in
	// the notices the core inserted, each a message of its own.
	pos, notices := 0, 0
	for j, m := range out {
		p := pos
		for p < len(msgs) && !adaptertest.Subsequence(m.Content, msgs[p].Content, adaptertest.SameJSON[anthropic.ContentBlockParamUnion]) {
			p++
		}
		if p < len(msgs) {
			pos = p + 1
			continue
		}
		notices++
		if len(m.Content) != 1 || m.Content[0].OfText == nil {
			t.Fatalf("budget %d: output message %d is neither made of an input message's blocks nor a notice: %s", budget, j, adaptertest.JSON(t, m))
		}
	}
	want := 0
	for _, k := range res.Kept {
		if k < 0 {
			want++
		}
	}
	if notices != want {
		t.Fatalf("budget %d: %d messages not from the input, %d notices inserted: %s", budget, notices, want, adaptertest.JSON(t, out))
	}
	// Trimming the output again changes nothing, unless the latest turn
	// was over budget and the input was broken: then the sweep may have
	// turned a message with orphaned tool_results and text into a plain
	// user message, which opens a turn the second trim can drop.
	again, _, _ := Trim(system, out, budget)
	if (err == nil || Validate(msgs) == nil) && adaptertest.JSON(t, again) != adaptertest.JSON(t, out) {
		t.Fatalf("budget %d: trimming the output again changed it:\n once %s\ntwice %s", budget, adaptertest.JSON(t, out), adaptertest.JSON(t, again))
	}
}

var fuzzSeeds = [][]byte{
	{1, 0, 3, 5, 2, 0, 4, 6, 1, 8},
	{2, 0, 11, 13, 0, 3, 7, 0, 2, 1, 12, 14, 9},
	{0, 4, 0, 8, 7, 15, 3, 0, 3, 5, 23},
	{1, 1, 9, 17, 25, 2, 3, 6, 0, 4, 4, 5, 5, 0},
	{5, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 8},
	{1, 0, 11, 0, 13, 21, 8, 3, 45, 0, 2},
}

// TestTrimProperty runs checkTrim over generated requests at budgets from 1
// to just above their size.
func TestTrimProperty(t *testing.T) {
	for _, seed := range adaptertest.Seeds(fuzzSeeds, 40) {
		system, msgs := genRequest(seed)
		for _, budget := range adaptertest.Budgets(adapter.Tokens(t, request{system, msgs}), 40) {
			checkTrim(t, system, msgs, budget)
		}
	}
}

func FuzzTrim(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, uint16(50))
	}
	f.Fuzz(func(t *testing.T, data []byte, budget uint16) {
		system, msgs := genRequest(data)
		checkTrim(t, system, msgs, int(budget)+1)
	})
}
