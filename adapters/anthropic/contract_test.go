package anthropic

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// contractConversation is six turns of a task, a tool_use, its result and
// an answer (the system prompt is contractSystem).
func contractConversation() []anthropic.MessageParam {
	var msgs []anthropic.MessageParam
	for i := range 6 {
		id := "toolu_" + strconv.Itoa(i)
		msgs = append(msgs, user(text("task "+strconv.Itoa(i)+strings.Repeat(" words", 20))), assistant(toolUse(id, "read")),
			user(result(id, strings.Repeat("output line\n", 40))), assistant(text("done "+strconv.Itoa(i))))
	}
	return msgs
}

var contractSystem = []anthropic.TextBlockParam{{Text: "be brief"}}

// TestContract runs the adapter through the contract every adapter keeps,
// with a system prompt: the Result describes msgs alone.
func TestContract(t *testing.T) {
	type msg = anthropic.MessageParam
	c := &adaptertest.Contract[msg]{
		Trim: func(msgs []msg, budget int, opts ...history.Option) ([]msg, history.Result, error) {
			return Trim(contractSystem, msgs, budget, opts...)
		},
		RecoverOverflow: func(msgs []msg, err error, attempt int, opts ...history.Option) ([]msg, history.Result, error) {
			return RecoverOverflow(contractSystem, msgs, err, attempt, opts...)
		},
		Positions: Positions, Validate: Validate,
		ToHistory:    func(msgs []msg) ([]history.Message, error) { return ToHistory(nil, msgs) },
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[msg] { return NewTrimmer(contractSystem, opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 12, Calls: 1, Results: 2,
		Invalid:    []msg{user(text("hi")), user(toolUse("toolu_x", "read"))},
		Bad:        1,
		Unpaired:   contractConversation()[:2],
		UnpairedAt: 1, UnpairedID: "toolu_0",
		Overflows:    []error{errors.New(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 2000 tokens > 1000 maximum"}}`)},
		NotOverflows: []error{errors.New(`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)},
	}
	c.Run(t)
}
