package gemini

import (
	"testing"

	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
)

// TestLoopMatrix runs the agent loop of runLoop (the real genai client,
// Trim with a Calibration, the request's Overhead, elision and step
// trimming, RecoverOverflow up to twice, usageMetadata.promptTokenCount
// observed) against the local server for each counting mode and window of
// issue 21, and checks each loop's bounds (adaptertest.Loop.Check). It is
// left out of the race detector's run for its cost; TestAgentLoop runs
// the same loop there.
func TestLoopMatrix(t *testing.T) {
	if race.Enabled {
		t.Skip("left out of the race detector's run for its cost (see the doc comment); go test without -race runs it")
	}
	adaptertest.RunMatrix(t, "gemini", func(t *testing.T, l *adaptertest.Loop) { runLoop(t, l, true, false) })
}
