package fantasy

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"charm.land/fantasy"
	"github.com/histrim/history"
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

// FuzzTrim: for any conversation and budget, Trim's output passes
// Validate, converts back to the Result's messages, fits the budget unless
// the latest turn alone does not, and leaves the input untouched; a
// second trim at the same budget drops nothing more.
func FuzzTrim(f *testing.F) {
	f.Add([]byte{0, 3, 4, 2, 0, 5, 6, 1, 11, 7}, 200, false)
	f.Add([]byte{0, 35, 28, 40, 9, 0, 12, 13, 16}, 80, true)
	f.Add([]byte{7, 0, 3, 19, 27, 0, 4, 4, 2, 6}, 50, true)
	f.Fuzz(func(t *testing.T, data []byte, budget int, ladder bool) {
		if len(data) > 64 {
			data = data[:64]
		}
		if budget < 0 {
			budget = -(budget + 1)
		}
		budget = 1 + budget%2000
		var opts []history.Option
		if ladder {
			opts = []history.Option{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: 1, ClearArguments: 8}), history.WithStepTrim()}
		}
		msgs := fuzzConversation(data)
		before := snapshot(msgs)
		out, res, err := Trim(msgs, budget, opts...)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatal(err)
		}
		if snapshot(msgs) != before {
			t.Fatal("Trim modified its input")
		}
		if err == nil && res.TokensAfter > budget {
			t.Fatalf("%d tokens for a budget of %d", res.TokensAfter, budget)
		}
		checkOutput(t, msgs, out, res)
		if err == nil {
			if _, res2, err := Trim(out, budget, opts...); err != nil || res2.DroppedTurns != 0 {
				t.Fatalf("a second trim dropped more: %v, %+v", err, res2)
			}
		}
	})
}
