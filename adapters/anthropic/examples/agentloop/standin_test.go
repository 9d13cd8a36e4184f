package main

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/histrim/history/adapters/anthropic/internal/fakeprovider"
)

// window is the local server's window, in its tokens: far below that of
// the model it answers as (fakeprovider.Model), which the program's
// Trimmer takes from the models table, so that 30 tasks outgrow it.
const window = 10_000

// TestAgentLoop runs the program's loop for 30 tasks against a local
// server speaking the Messages API (internal/fakeprovider) that counts
// 1.3 times the library's estimate, and from task 20 on 1.7 times, whose
// scripted model calls the program's tools: no error reaches the loop,
// every overflow is recovered from, and after the first the Trimmer keeps
// below the window the server stated (a few more overflows follow the
// change of count, not one per request).
func TestAgentLoop(t *testing.T) {
	var names []string
	for _, tool := range fakeprovider.Tools() {
		names = append(names, tool.OfTool.Name)
	}
	if !slices.Equal(toolNames, names) {
		t.Fatalf("the program's tools %v are not those the scripted model calls, %v", toolNames, names)
	}
	prov := fakeprovider.New(1.3, window)
	srv := httptest.NewServer(prov)
	defer srv.Close()
	var tasks []string
	for turn := 1; turn <= 30; turn++ {
		tasks = append(tasks, fakeprovider.Task(turn))
	}
	a, err := run(context.Background(), config{BaseURL: srv.URL, APIKey: "sk-ant-example", Model: string(fakeprovider.Model),
		Tasks: tasks, beforeTask: func(n int) {
			if n == 20 {
				prov.SetFactor(1.7)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	st := prov.Stats()
	t.Logf("%d turns, %d requests (%d trimmed), transcript of %d messages", len(tasks), a.requests, a.trimmed, len(a.params.Messages))
	t.Logf("rejected for length: %d, all recovered by RecoverOverflow; %d usages observed", a.overflows, a.observed)
	if st.Overflows != a.overflows || a.overflows > 10 || a.observed == 0 || st.PairingViolations+st.Malformed > 0 {
		t.Errorf("the server rejected %d requests for length, the loop recovered %d (want the same, and at most 10: the window is learnt), %d usages observed, %d pairing and %d other rejections",
			st.Overflows, a.overflows, a.observed, st.PairingViolations, st.Malformed)
	}
	if a.trimmed == 0 {
		t.Error("no request was trimmed: the loop did not outgrow the window")
	}
}
