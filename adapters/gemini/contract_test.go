package gemini

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"google.golang.org/genai"
)

// contractConversation is six turns of a task, a function call, its
// response and an answer (the system instruction is contractSystem).
func contractConversation() []*genai.Content {
	var contents []*genai.Content
	for i := range 6 {
		id := "call_" + strconv.Itoa(i)
		contents = append(contents, text("user", "task "+strconv.Itoa(i)+strings.Repeat(" words", 20)),
			&genai.Content{Role: "model", Parts: []*genai.Part{call(id, "read", nil)}},
			&genai.Content{Role: "user", Parts: []*genai.Part{resp(id, "read", map[string]any{"output": strings.Repeat("output line\n", 40)})}},
			text("model", "done "+strconv.Itoa(i)))
	}
	return contents
}

var contractSystem = text("", "be brief")

// TestContract runs the adapter through the contract every adapter keeps,
// with a system instruction: the Result describes the contents alone.
func TestContract(t *testing.T) {
	type content = *genai.Content
	c := &adaptertest.Contract[content]{
		Trim: func(msgs []content, budget int, opts ...history.Option) ([]content, history.Result, error) {
			return Trim(contractSystem, msgs, budget, opts...)
		},
		RecoverOverflow: func(msgs []content, err error, attempt int, opts ...history.Option) ([]content, history.Result, error) {
			return RecoverOverflow(contractSystem, msgs, err, attempt, opts...)
		},
		Positions: Positions, Validate: Validate, ToHistory: ToHistory,
		NewTrimmer:   func(opts ...history.Option) adaptertest.Trimmer[content] { return NewTrimmer(contractSystem, opts...) },
		ErrUnpaired:  ErrUnpaired,
		Conversation: contractConversation, Pinnable: 12, Calls: 1, Results: 2,
		Invalid:    []content{text("user", "hi"), nil},
		Bad:        1,
		Unpaired:   contractConversation()[:2],
		UnpairedAt: 1, UnpairedID: "call_0",
		Overflows:    []error{genai.APIError{Code: 400, Status: "INVALID_ARGUMENT", Message: "The input token count (2000) exceeds the maximum number of tokens allowed (1000)."}},
		NotOverflows: []error{genai.APIError{Code: 429, Status: "RESOURCE_EXHAUSTED", Message: "Resource has been exhausted (e.g. check quota)."}, errors.New("connection reset")},
	}
	c.Run(t)
}
