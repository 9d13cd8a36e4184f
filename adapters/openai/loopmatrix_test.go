package openai_test

import (
	"testing"

	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
)

// TestLoopMatrix runs the agent loop of runLoop (the real openai-go client,
// Trim with a Calibration, the request's Overhead, elision and step
// trimming, RecoverOverflow up to twice, usage.prompt_tokens observed)
// against the local provider for each counting mode and window of issue
// 21, and checks each loop's bounds (adaptertest.Loop.Check). It is left
// out of the race detector's run for its cost; TestAgentLoop runs the same
// loop there.
func TestLoopMatrix(t *testing.T) {
	if race.Enabled {
		t.Skip("left out of the race detector's run for its cost (see the doc comment); go test without -race runs it")
	}
	adaptertest.RunMatrix(t, "openai", func(t *testing.T, l *adaptertest.Loop) { runLoop(t, l, "trim") })
}
