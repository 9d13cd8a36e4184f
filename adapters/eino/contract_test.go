package eino

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// contractConversation is a system prompt and six turns of a task, a
// call, its result and an answer.
func contractConversation() []*schema.Message {
	msgs := []*schema.Message{schema.SystemMessage("be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs, schema.UserMessage("task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			schema.AssistantMessage("", []schema.ToolCall{call(id, "read", `{}`)}),
			schema.ToolMessage(strings.Repeat("output line\n", 40), id),
			schema.AssistantMessage("done "+strconv.Itoa(i), nil))
	}
	return msgs
}

// TestContract runs the adapter through the contract every adapter keeps.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[*schema.Message]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[*schema.Message] { return NewTrimmer(opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Invalid:    []*schema.Message{schema.UserMessage("hi"), nil},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows:    []error{adaptertest.OverflowText(1000, 2000)},
		NotOverflows: []error{errors.New("Rate limit reached for gpt-4o: please try again in 20s")},
	}
	c.Run(t)
}
