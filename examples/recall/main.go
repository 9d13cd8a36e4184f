// Command recall shows restorable elision: a Trimmer elides old tool results
// into placeholders that name a handle, keeps the originals in a
// history.MemoryStore, and a scripted model that needs one of them back calls
// the recall tool; the runtime answers with history.Recall and the model
// reads the original. It runs offline and prints what happens.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/histrim/history"
)

// file is the content of a file the agent read early in the session.
func file(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\n", name)
	for i := range 120 {
		fmt.Fprintf(&b, "func handler%d(w http.ResponseWriter, r *http.Request) { serve(w, r, %d) }\n", i, i)
	}
	return b.String()
}

var handle = regexp.MustCompile(`recall_tool_result with id (r[0-9a-f]{24})`)

// model is a scripted stand-in for an LLM: asked about config.go, which it
// read long ago, it sees that the result was elided and recalls it; once the
// recalled content is in the prompt, it answers from it.
func model(prompt []history.Message) history.Message {
	last := prompt[len(prompt)-1]
	if last.Role == history.RoleTool && last.ToolCallID == "recall_1" {
		first, _, _ := strings.Cut(last.Content, "\n")
		return history.Message{Role: history.RoleAssistant, Content: "config.go starts with " + first + " and defines handler0..handler119."}
	}
	for _, m := range prompt {
		if m.Kind == history.KindElided && strings.Contains(m.Content, "read_file") {
			if h := handle.FindStringSubmatch(m.Content); h != nil {
				args, _ := json.Marshal(map[string]string{"id": h[1]})
				return history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{
					{ID: "recall_1", Name: history.RecallToolName, Arguments: string(args)},
				}}
			}
		}
	}
	return history.Message{Role: history.RoleAssistant, Content: "I no longer have config.go."}
}

func main() {
	store := history.NewMemoryStore()
	tr := history.NewTrimmer(
		history.WithElision(history.ElideOptions{KeepRecent: 1, Store: store}),
		history.WithOnTrim(func(e history.Event) {
			fmt.Printf("trim: %d tool results elided, %d -> %d tokens (budget %d)\n", e.ElidedResults, e.TokensBefore, e.TokensAfter, e.Budget)
		}),
		history.WithFullCount(),
	)
	msgs := []history.Message{
		{Role: history.RoleSystem, Content: "You are a coding agent. Tools: read_file, " + history.RecallToolName + "."},
		{Role: history.RoleUser, Content: "Read the three source files."},
	}
	for i, name := range []string{"config.go", "server.go", "routes.go"} {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"` + name + `"}`}}},
			history.Message{Role: history.RoleTool, ToolCallID: id, Content: file(name)},
		)
	}
	msgs = append(msgs,
		history.Message{Role: history.RoleAssistant, Content: "Read all three."},
		history.Message{Role: history.RoleUser, Content: "What does config.go define?"},
	)
	const budget = 5000
	fmt.Printf("transcript: %d messages, %d tokens; budget %d\n", len(msgs), history.Estimate(msgs, nil), budget)

	for step := 1; step <= 3; step++ {
		res, err := tr.Trim(msgs, budget)
		if err != nil {
			fmt.Fprintln(os.Stderr, "trim:", err)
			os.Exit(1)
		}
		reply := model(res.Messages)
		msgs = append(msgs, reply)
		if len(reply.ToolCalls) == 0 {
			fmt.Printf("model: %s\n", reply.Content)
			if !strings.Contains(reply.Content, "// config.go") {
				fmt.Fprintln(os.Stderr, "the model did not get config.go back")
				os.Exit(1)
			}
			return
		}
		call := reply.ToolCalls[0]
		fmt.Printf("model calls %s(%s)\n", call.Name, call.Arguments)
		out, err := history.Recall(store, call.Arguments)
		if err != nil {
			out = err.Error() // the model can correct itself
		}
		fmt.Printf("runtime: recalled %d bytes from the store\n", len(out))
		msgs = append(msgs, history.Message{Role: history.RoleTool, ToolCallID: call.ID, Content: out})
	}
	fmt.Fprintln(os.Stderr, "no answer after 3 steps")
	os.Exit(1)
}
