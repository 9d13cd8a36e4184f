package main

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/race"
)

// TestAgentLoop runs the program's loop, naming gpt-3.5-turbo (16,385
// tokens in the models table), against a local OpenAI endpoint
// (internal/loopserver) that enforces a 16,000-token window and counts
// 1.3 times the library's estimate, whose scripted model calls the program's tools: no
// request breaks the tool pairing, every overflow is recovered from, and
// every turn ends with an answer.
func TestAgentLoop(t *testing.T) {
	if !slices.Equal(toolNames, loopserver.ToolNames) {
		t.Fatalf("the program's tools %v are not those the scripted model calls, %v", toolNames, loopserver.ToolNames)
	}
	srv, ts := loopserver.ExampleOpenAI()
	defer ts.Close()
	turns := loopserver.ExampleTurns
	if race.Enabled {
		turns = 10
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
	if err := loopserver.Report(st, fmt.Sprintf("%d messages kept whole, %d usages observed", rep.Messages, rep.Observed), rep.Trimmed, 0, nil); err != nil {
		t.Error(err)
	}
	if st.Requests != rep.Requests || st.Overflows != rep.Overflows || rep.Trimmed == 0 || rep.Observed == 0 {
		t.Errorf("the server saw %d requests, %d overflows; the loop sent %d, recovered %d, trimmed %d, observed %d (want some of each)",
			st.Requests, st.Overflows, rep.Requests, rep.Overflows, rep.Trimmed, rep.Observed)
	}
	if p := srv.Problems(); len(p) > 0 {
		t.Errorf("the server found problems: %v", p)
	}
}
