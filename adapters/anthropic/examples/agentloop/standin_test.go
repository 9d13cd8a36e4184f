package main

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/histrim/history/adapters/anthropic/internal/fakeprovider"
)

// window is the local server's window, in its tokens.
const window = 10_000

// TestAgentLoop runs the program's loop for 30 tasks against a local
// server speaking the Messages API (internal/fakeprovider) that counts
// 1.3 times the library's estimate, and from task 20 on 1.7 times, whose
// scripted model calls the program's tools: no error reaches the loop,
// every overflow is recovered from.
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
	a, err := run(context.Background(), config{BaseURL: srv.URL, APIKey: "sk-ant-example", Model: fakeprovider.Model,
		Window: window, Tasks: tasks, beforeTask: func(n int) {
			if n == 20 {
				prov.SetFactor(1.7)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	scale, overhead, margin, _ := a.cal.Model()
	t.Logf("%d turns, %d requests (%d trimmed), transcript of %d messages", len(tasks), a.requests, a.trimmed, len(a.transcript))
	t.Logf("rejected for length: %d, all recovered by RecoverOverflow", a.overflows)
	t.Logf("trimmed requests used %.1f%% of the window on average, as the provider counts", 100*float64(a.promptSum)/float64(max(a.trimmed, 1))/window)
	t.Logf("calibration: provider = %.3f x estimate + %.0f tokens (margin %.0f)", scale, overhead, margin)
	if a.trimmed == 0 {
		t.Error("no request was trimmed: the loop did not outgrow the window")
	}
}
