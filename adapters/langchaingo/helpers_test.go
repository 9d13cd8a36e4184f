package langchaingo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/tmc/langchaingo/llms"
)

// overflowErr is LangChainGo's OpenAI provider's error for a request over
// the window.
func overflowErr(limit, used int) error {
	return fmt.Errorf("API returned unexpected status code: 400: This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, used)
}

// tokens is the Heuristic's count of msgs.
func tokens(t testing.TB, msgs []llms.MessageContent) int {
	t.Helper()
	hist, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(hist, nil)
}

// chat returns a system message followed by n turns of a task, a tool
// step and an answer, each turn about 300 tokens.
func chat(n int) []llms.MessageContent {
	out := []llms.MessageContent{msg(llms.ChatMessageTypeSystem, txt("You are an agent."))}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		out = append(out,
			msg(llms.ChatMessageTypeHuman, txt(fmt.Sprintf("task %d: %s", i, strings.Repeat("do it well ", 20)))),
			msg(llms.ChatMessageTypeAI, call(id, "read", `{"path":"a.go"}`)),
			msg(llms.ChatMessageTypeTool, resp(id, "read", strings.Repeat("func f() { return 42 }\n", 25))),
			msg(llms.ChatMessageTypeAI, txt(fmt.Sprintf("answer %d: %s", i, strings.Repeat("it is done ", 10)))))
	}
	return out
}
