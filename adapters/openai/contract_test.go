package openai

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
)

// contractConversation is a system prompt and six turns of a task, a call,
// its result and an answer.
func contractConversation() []openai.ChatCompletionMessageParamUnion {
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		a := openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read", Arguments: `{}`}}}}}
		msgs = append(msgs, openai.UserMessage("task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			openai.ChatCompletionMessageParamUnion{OfAssistant: &a},
			openai.ToolMessage(strings.Repeat("output line\n", 40), id),
			openai.AssistantMessage("done "+strconv.Itoa(i)))
	}
	return msgs
}

// TestContract runs the adapter through the contract every adapter keeps.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[openai.ChatCompletionMessageParamUnion]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewTrimmer: func(opts ...history.Option) adaptertest.Trimmer[openai.ChatCompletionMessageParamUnion] {
			return NewTrimmer(opts...)
		},
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Invalid:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), {}},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows:    []error{adaptertest.OverflowText(1000, 2000)},
		NotOverflows: []error{errors.New("Rate limit reached for gpt-4o: please try again in 20s")},
	}
	c.Run(t)
}
