package langchaingo

import (
	"testing"

	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
)

// TestLoopMatrix runs the agent loop of runLoop through Model (Config with
// a Calibration, elision and step trimming; it trims, recovers and
// observes the usage itself) around LangChainGo's OpenAI provider, against
// the local server for each counting mode and window of issue 21, and
// checks each loop's bounds (adaptertest.Loop.Check). It is left out of
// the race detector's run for its cost; TestModelLoop runs the same loop
// there.
func TestLoopMatrix(t *testing.T) {
	if race.Enabled {
		t.Skip("left out of the race detector's run for its cost (see the doc comment); go test without -race runs it")
	}
	adaptertest.RunMatrix(t, "langchaingo", func(t *testing.T, l *adaptertest.Loop) { runLoop(t, l, "trim") })
}
