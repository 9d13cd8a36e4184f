package goopenai

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
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

// adapter describes this package to the shared ladder, fuzz and
// repeated-trim drivers: one for one, exact counts, notices rendered with
// their names; kept messages are the caller's.
var adapter = adaptertest.Adapter[[]openai.ChatCompletionMessage]{
	Trim: Trim, ToHistory: ToHistory, Validate: Validate,
	Agent:          fuzzConversation,
	Exact:          true,
	OneForOne:      true,
	ClearArguments: true,
	Check:          callersOwn,
	Start:          func() []openai.ChatCompletionMessage { return conversation(0, 0) },
	Task: func(c []openai.ChatCompletionMessage, text string) []openai.ChatCompletionMessage {
		return append(slices.Clip(c), openai.ChatCompletionMessage{Role: "user", Content: text})
	},
	Step: func(c []openai.ChatCompletionMessage, id, output string) []openai.ChatCompletionMessage {
		return append(slices.Clip(c), openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call(id, "run", "{}")}},
			openai.ChatCompletionMessage{Role: "tool", ToolCallID: id, Content: output})
	},
	Len: func(c []openai.ChatCompletionMessage) int { return len(c) },
}

// callersOwn checks that every message the trim kept as it was is the
// caller's value.
func callersOwn(t *testing.T, in, out []openai.ChatCompletionMessage, res history.Result) {
	t.Helper()
	for j, i := range res.Kept {
		if i >= 0 && !slices.Contains(res.Modified, j) && !reflect.DeepEqual(out[j], in[i]) {
			t.Fatalf("output %d is not the caller's message %d", j, i)
		}
	}
}

// FuzzTrim: for any conversation, budget and rung of the ladder, Trim's
// output passes Validate, counts what the Result counts, holds every kept
// result as the core kept it, keeps the caller's values, leaves the input
// untouched, and is left alone by a second trim (adaptertest's ladder).
func FuzzTrim(f *testing.F) { adapter.FuzzLadder(f) }

// TestTrimLadder sweeps generated conversations over budgets and the
// rungs of the ladder (adaptertest.Adapter.Ladder).
func TestTrimLadder(t *testing.T) { adapter.Ladder(t) }

// TestRepeat trims a growing conversation again and again: notices never
// stack (adaptertest.Adapter.Repeat).
func TestRepeat(t *testing.T) { adapter.Repeat(t) }
