package goopenai

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	openai "github.com/sashabaranov/go-openai"
)

// fuzzConversation builds a conversation from data: each byte adds a user
// message, an assistant text, a step of one or two calls with their
// results (some left unanswered or answered by a stray result), a legacy
// function pair, a reasoning step, or an earlier notice.
func fuzzConversation(data []byte) []openai.ChatCompletionMessage {
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: "sys"}}
	for i, b := range data {
		id := "c" + strconv.Itoa(i)
		text := strings.Repeat("w ", 1+int(b)%97)
		switch b % 9 {
		case 0, 1:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: text})
		case 2:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "assistant", Content: text})
		case 3, 4:
			a := openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call(id+"a", "grep", `{"q":"`+text+`"}`)}}
			if b%2 == 0 {
				a.ToolCalls = append(a.ToolCalls, call(id+"b", "read", "{}"))
			}
			msgs = append(msgs, a)
			for _, c := range a.ToolCalls {
				msgs = append(msgs, openai.ChatCompletionMessage{Role: "tool", ToolCallID: c.ID, Content: text + text})
			}
		case 5:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "assistant", ReasoningContent: text, ToolCalls: []openai.ToolCall{call(id, "grep", "{}")}})
			if b%2 == 0 {
				msgs = append(msgs, openai.ChatCompletionMessage{Role: "tool", ToolCallID: id, Content: text})
			}
		case 6:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "stray" + id, Content: text})
		case 7:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "assistant", FunctionCall: &openai.FunctionCall{Name: "f", Arguments: "{}"}},
				openai.ChatCompletionMessage{Role: "function", Name: "f", Content: text})
		default:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: history.BreadcrumbText})
		}
	}
	return msgs
}

// FuzzTrim: for any conversation and budget, Trim's output passes
// Validate, converts back to the Result's messages, keeps the caller's
// values, fits the budget unless the latest turn alone does not, and
// leaves the input untouched; trimming it again at the same budget
// changes nothing.
func FuzzTrim(f *testing.F) {
	f.Add([]byte{0, 3, 4, 2, 0, 5, 6, 1, 3, 7}, 200, false)
	f.Add([]byte{0, 30, 31, 40, 9, 0, 12, 13, 16}, 80, true)
	f.Add([]byte{8, 0, 3, 3, 3, 0, 4, 4, 2, 7}, 50, true)
	f.Fuzz(func(t *testing.T, data []byte, budget int, ladder bool) {
		if len(data) > 64 {
			data = data[:64]
		}
		budget = 1 + abs(budget)%2000
		var opts []history.Option
		if ladder {
			opts = []history.Option{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: 1}), history.WithStepTrim()}
		}
		msgs := fuzzConversation(data)
		before := deepCopy(t, msgs)
		out, res, err := Trim(msgs, budget, opts...)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(deepCopy(t, msgs), before) {
			t.Fatal("Trim modified its input")
		}
		if err == nil && res.TokensAfter > budget {
			t.Fatalf("%d tokens for a budget of %d", res.TokensAfter, budget)
		}
		if verr := Validate(out); verr != nil {
			t.Fatalf("output breaks the pairing: %v", verr)
		}
		back, cerr := ToHistory(out)
		if cerr != nil || len(back) != len(res.Messages) {
			t.Fatalf("round trip: %v, %d for %d", cerr, len(back), len(res.Messages))
		}
		for j := range back {
			want := res.Messages[j]
			back[j].Kind, want.Kind = "", ""
			if !reflect.DeepEqual(back[j], want) {
				t.Fatalf("message %d converts back to %+v, want %+v", j, back[j], want)
			}
			if i := res.Kept[j]; i >= 0 && res.Messages[j].Kind == "" && !reflect.DeepEqual(out[j], msgs[i]) && !modified(res, j) {
				t.Fatalf("output %d is not the caller's message %d", j, i)
			}
		}
		if err == nil {
			again, res2, err := Trim(out, budget, opts...)
			if err != nil || res2.DroppedTurns != 0 || len(again) != len(out) {
				t.Fatalf("a second trim changed the output: %v, %+v", err, res2)
			}
		}
	})
}

func modified(res history.Result, j int) bool {
	for _, m := range res.Modified {
		if m == j {
			return true
		}
	}
	return false
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
