package main

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/race"
)

// TestAgent runs the program's agent, naming gpt-3.5-turbo (16,385 tokens
// in the table; the program is told nothing else), against a local OpenAI
// chat-completions endpoint (internal/loopserver) with a 16,000-token
// window that counts 1.3 times the library's estimate, whose scripted
// model calls the program's tools: requests are trimmed, none is refused
// for its length (the door's budget, its margin until the calibration is
// warm, then the calibration), no request breaks the tool pairing, and
// every turn ends with an answer.
func TestAgent(t *testing.T) {
	if !slices.Equal(toolNames, loopserver.ToolNames) {
		t.Fatalf("the program's tools %v are not those the scripted model calls, %v", toolNames, loopserver.ToolNames)
	}
	srv, ts := loopserver.ExampleOpenAI()
	defer ts.Close()
	turns := loopserver.ExampleTurns
	if race.Enabled {
		turns = 10 // as the framework loops do under the race detector
	}
	var tasks []string
	for turn := 1; turn <= turns; turn++ {
		tasks = append(tasks, loopserver.Task(turn))
	}
	rep, err := run(context.Background(), config{BaseURL: ts.URL + "/v1", APIKey: "sk-local", Model: "gpt-3.5-turbo",
		Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	trims := int(rep.Trims.Load())
	if err := loopserver.Report(st, "the runner's session kept whole", trims, 0, nil); err != nil {
		t.Error(err)
	}
	if sent, reported := rep.Sent.Load(), rep.Reported.Load(); sent > 0 {
		fmt.Printf("the provider counted %.3fx the Strategy's count (the model's tokenizer)\n", float64(reported)/float64(sent))
	}
	if trims == 0 || st.Accepted == 0 {
		t.Errorf("%d trims, %d requests accepted: the loop did not outgrow the window", trims, st.Accepted)
	}
	if st.Overflows > 0 {
		t.Errorf("%d requests refused for their length: the door's budget for the model named is over the window", st.Overflows)
	}
	if rep.Sent.Load() == 0 {
		t.Error("no response's usage was observed")
	}
	if p := srv.Problems(); len(p) > 0 {
		t.Errorf("the server found problems: %v", p)
	}
}
