package main

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/models"
)

// model is the model the loop names: the local endpoint's window is its
// window in the models table.
const model = "gpt-3.5-turbo"

// TestAgentLoop runs the program's loop for 30 tasks against a local
// endpoint (internal/fakeprovider) with the window of the model it names,
// that counts 1.3 times the library's estimate plus its tool schemas, whose scripted model calls the
// program's tools: no request breaks the tool pairing, every overflow is
// recovered from, every turn ends with an answer.
func TestAgentLoop(t *testing.T) {
	if !slices.Equal(toolNames, loopserver.ToolNames) {
		t.Fatalf("the program's tools %v are not those the scripted model calls, %v", toolNames, loopserver.ToolNames)
	}
	m, err := models.Lookup(model)
	if err != nil {
		t.Fatal(err)
	}
	window := m.Window
	provider := &fakeprovider.Provider{Limit: window, Factor: 1.3}
	srv := httptest.NewServer(provider)
	defer srv.Close()
	var tasks []string
	for turn := 1; turn <= 30; turn++ {
		tasks = append(tasks, fakeprovider.Task(turn))
	}
	a, err := run(context.Background(), config{BaseURL: srv.URL, APIKey: "sk-local", Model: model, Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	st := provider.Stats()
	t.Logf("%d turns, %d requests (%d trimmed), %d overflows recovered, %d pairing rejections",
		len(tasks), a.requests, a.trimmed, a.overflows, st.PairingErrors)
	t.Logf("mean provider prompt of trimmed requests: %.1f%% of the %d-token window",
		100*float64(a.promptTrimmed)/float64(max(a.trimmed, 1))/float64(window), window)
	if st.PairingErrors > 0 || st.Overflows != a.overflows || a.trimmed == 0 {
		t.Errorf("%d pairing rejections, %d overflows of which the loop recovered %d, %d trimmed requests (want some)",
			st.PairingErrors, st.Overflows, a.overflows, a.trimmed)
	}
}
