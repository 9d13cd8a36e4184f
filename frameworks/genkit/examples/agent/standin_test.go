package main

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/race"
)

// TestAgent runs the program's tool loop, naming gemini-2.5-flash (its
// window 1,048,576 in the table; the program is not told the endpoint's),
// against a local Gemini endpoint (internal/loopserver), which the genai
// client under the googlegenai plugin reaches through
// GOOGLE_GEMINI_BASE_URL, with a 16k window that counts 1.3 times the
// library's estimate, whose scripted model calls the program's tools: no
// request breaks the function-call pairing, the first overflow is
// recovered from and none follows it (what Gemini said bounds every later
// request), and every turn ends with an answer.
func TestAgent(t *testing.T) {
	if !slices.Equal(toolNames, loopserver.ToolNames) {
		t.Fatalf("the program's tools %v are not those the scripted model calls, %v", toolNames, loopserver.ToolNames)
	}
	srv, ts := loopserver.ExampleGemini()
	defer ts.Close()
	t.Setenv("GOOGLE_GEMINI_BASE_URL", ts.URL)
	turns := loopserver.ExampleTurns
	if race.Enabled {
		turns = 10 // Genkit copies and traces whole requests, some ten times slower under the race detector
	}
	var tasks []string
	for turn := 1; turn <= turns; turn++ {
		tasks = append(tasks, loopserver.Task(turn))
	}
	rep, err := run(context.Background(), config{APIKey: "local", Model: "gemini-2.5-flash", Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	if err := loopserver.Report(st, fmt.Sprintf("%d messages kept whole in the history", rep.Messages), rep.Trims, 0, &rep.Calibration); err != nil {
		t.Error(err)
	}
	if st.Overflows > 1 {
		t.Errorf("%d requests refused for their length: what the first refusal said did not bound the next requests", st.Overflows)
	}
	if rep.Trims == 0 || st.Accepted == 0 {
		t.Errorf("%d trims, %d requests accepted: the loop did not outgrow the window", rep.Trims, st.Accepted)
	}
	if p := srv.Problems(); len(p) > 0 {
		t.Errorf("the server found problems: %v", p)
	}
}
