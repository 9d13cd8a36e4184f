package fantasy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"charm.land/fantasy"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// fuzzConversation builds a conversation from data: each byte adds a user
// message, an assistant text, a step of one to three calls answered in one
// tool message or several (some left unanswered, some results answering
// nothing, a note among the results), a reasoning step, or an earlier
// notice.
func fuzzConversation(data []byte) []fantasy.Message {
	msgs := []fantasy.Message{fantasy.NewSystemMessage("sys")}
	for i, b := range data {
		id := "c" + strconv.Itoa(i)
		text := strings.Repeat("w ", 1+int(b)%97)
		switch b % 8 {
		case 0, 1:
			msgs = append(msgs, fantasy.NewUserMessage(text))
		case 2:
			msgs = append(msgs, msg(fantasy.MessageRoleAssistant, fantasy.TextPart{Text: text}))
		case 3, 4:
			n := 1 + int(b/8)%3
			a := msg(fantasy.MessageRoleAssistant, fantasy.TextPart{Text: "calling"})
			tool := msg(fantasy.MessageRoleTool)
			for k := range n {
				cid := id + string(rune('a'+k))
				a.Content = append(a.Content, call(cid, `{"q":"`+text+`"}`))
				if b%5 != 0 || k == 0 {
					tool.Content = append(tool.Content, result(cid, text+text))
				}
			}
			if b%7 == 0 {
				tool.Content = append(tool.Content, fantasy.TextPart{Text: "note"})
			}
			msgs = append(msgs, a)
			if b%2 == 0 && len(tool.Content) > 1 { // the results over two messages
				msgs = append(msgs, msg(fantasy.MessageRoleTool, tool.Content[0]), msg(fantasy.MessageRoleTool, tool.Content[1:]...))
			} else {
				msgs = append(msgs, tool)
			}
		case 5:
			msgs = append(msgs, msg(fantasy.MessageRoleAssistant, fantasy.ReasoningPart{Text: text}, call(id, "{}")),
				msg(fantasy.MessageRoleTool, result(id, text)))
		case 6:
			msgs = append(msgs, msg(fantasy.MessageRoleTool, result("stray"+id, text)))
		default:
			msgs = append(msgs, fantasy.NewUserMessage(history.BreadcrumbText))
		}
	}
	return msgs
}

// adapter describes this module to the shared ladder, fuzz and
// repeated-trim drivers: tool messages split into one message per result,
// exact counts, and an output that converts back to the Result's messages.
var adapter = adaptertest.Adapter[[]fantasy.Message]{
	Trim: Trim, ToHistory: ToHistory, Validate: Validate,
	Agent:          fuzzConversation,
	Exact:          true,
	ClearArguments: true,
	Check: func(t *testing.T, in, out []fantasy.Message, res history.Result) {
		checkOutput(t, in, out, res)
	},
	Start: func() []fantasy.Message { return []fantasy.Message{fantasy.NewSystemMessage("sys")} },
	Task: func(c []fantasy.Message, text string) []fantasy.Message {
		return append(slices.Clip(c), fantasy.NewUserMessage(text))
	},
	Step: func(c []fantasy.Message, id, output string) []fantasy.Message {
		return append(slices.Clip(c), msg(fantasy.MessageRoleAssistant, call(id, "{}")), msg(fantasy.MessageRoleTool, result(id, output)))
	},
	Len: func(c []fantasy.Message) int { return len(c) },
}

// FuzzTrim: for any conversation, budget and rung of the ladder, Trim's
// output passes Validate, converts back to the Result's messages, holds
// every kept result as the core kept it, leaves the input untouched, and
// is left alone by a second trim (adaptertest's ladder).
func FuzzTrim(f *testing.F) { adapter.FuzzLadder(f) }

// TestTrimLadder sweeps generated conversations over budgets and the
// rungs of the ladder (adaptertest.Adapter.Ladder).
func TestTrimLadder(t *testing.T) { adapter.Ladder(t) }

// TestRepeat trims a growing conversation again and again: notices never
// stack (adaptertest.Adapter.Repeat).
func TestRepeat(t *testing.T) { adapter.Repeat(t) }
