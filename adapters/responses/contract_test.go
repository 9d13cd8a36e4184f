package responses

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// contractConversation is a developer message and six turns of a task, a
// function call, its output and an answer.
func contractConversation() []Item {
	items := []Item{developer("be brief")}
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		items = append(items, user("task "+strconv.Itoa(i)+strings.Repeat(" words", 20)), functionCall(id, "read", `{}`),
			functionOutput(id, strings.Repeat("output line\n", 40)), output("msg_"+strconv.Itoa(i), "done "+strconv.Itoa(i)))
	}
	return items
}

// TestContract runs the adapter through the contract every adapter keeps.
func TestContract(t *testing.T) {
	c := &adaptertest.Contract[Item]{
		Trim: Trim, RecoverOverflow: RecoverOverflow, Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[Item] { return NewTrimmer(opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 13, Calls: 2, Results: 3,
		Invalid:    []Item{user("hi"), {}},
		Bad:        1,
		Unpaired:   contractConversation()[:3],
		UnpairedAt: 2, UnpairedID: "call_0",
		Overflows:    []error{errors.New(`{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`)},
		NotOverflows: []error{errors.New("Rate limit reached for o4-mini: please try again in 20s")},
	}
	c.Run(t)
}
