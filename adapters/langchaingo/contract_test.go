package langchaingo

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
)

// contractConversation is a system prompt and six turns of a task, a
// call, its response and an answer.
func contractConversation() []llms.MessageContent {
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, "task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "read", Arguments: `{}`}}}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Name: "read", Content: strings.Repeat("output line\n", 40)}}},
			llms.TextParts(llms.ChatMessageTypeAI, "done "+strconv.Itoa(i)))
	}
	return msgs
}

// TestContract runs the adapter through the contract every adapter keeps,
// with the errors LangChainGo's providers return: an overflow under
// LangChainGo's rate_limit label, and a 429 whose text reads like one.
func TestContract(t *testing.T) {
	overflow := adaptertest.OverflowText(1000, 2000)
	c := &adaptertest.Contract[llms.MessageContent]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[llms.MessageContent] { return NewTrimmer(opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Invalid:    []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi"), {Role: "narrator"}},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows: []error{overflow, &llms.Error{Code: llms.ErrCodeRateLimit, Message: "Rate limit exceeded", Provider: "openai", Cause: overflow}},
		NotOverflows: []error{errors.New("Rate limit reached for gpt-4o: please try again in 20s"),
			errors.New("API returned unexpected status code: 429: This model's maximum context length is 1000 tokens. However, your messages resulted in 2000 tokens.")},
	}
	c.Run(t)
}
