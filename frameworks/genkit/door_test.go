package genkit_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/histrim/history"
	hgenkit "github.com/histrim/history/frameworks/genkit"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/models"
)

// TestDoor runs Genkit's tool loop through the Middleware with no Budget:
// the budget is the named model's (googleai/gemini-2.5-flash, its window
// from the table), the Calibration the Middleware's own, and the default
// policy's task preset: old tool results are elided before turns go
// (before, the door trimmed whole turns only, and trimmed requests filled
// 72.4% of the window). Over adaptertest.FrameworkDoorTurns user turns:
// the window is a million tokens.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoopTurns(t, "genkit", "gemini-2.5-flash", adaptertest.FrameworkDoorTurns, runDoor)
}

// TestDoorWindow runs the door against a Gemini endpoint whose window
// (16,000) is far below the table's for gemini-2.5-flash: what the first
// refusal said bounds every later request of the Middleware (issue 34;
// before, every request planned at the table's window again and 135 of
// 280 were refused).
func TestDoorWindow(t *testing.T) {
	adaptertest.DoorWindow(t, "genkit", "gemini-2.5-flash", loopWindow, runDoor)
}

// runDoor runs l's generations through one Middleware with no Budget,
// naming modelName.
func runDoor(t *testing.T, l *adaptertest.Loop, _ string) {
	var trimmed atomic.Int64
	var tr adaptertest.DoorTrims
	defer tr.Check(t, "genkit")
	mw := hgenkit.Middleware(hgenkit.Config{Model: modelName,
		Options:   []history.Option{tr.Option(func(history.Event) { trimmed.Add(1) })},
		OnError:   func(err error) { l.Note("histrim: %v", err) },
		OnObserve: func(_, reported int, _ history.Verdict) { l.Accepted(trimmed.Swap(0) > 0, reported) }})
	runLoop(t, l, ai.WithMiddleware(mw))
}

// TestDoorUnknownModel: with no Budget, a Middleware for a model the
// table does not know fails the generation with the typed error before
// any request.
func TestDoorUnknownModel(t *testing.T) {
	l := adaptertest.NewLoop("genkit", adaptertest.Skew(1), 16_000)
	srv := &loopserver.Gemini{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	g, _ := newGenkit(t, ts.URL, l.Words)
	_, err := genkit.Generate(context.Background(), g, ai.WithModelName(modelName), ai.WithPrompt("hi"),
		ai.WithMiddleware(hgenkit.Middleware(hgenkit.Config{Model: "googleai/gemini-of-nobody"})))
	if !errors.Is(err, models.ErrUnknownModel) {
		t.Errorf("err = %v, want one wrapping models.ErrUnknownModel", err)
	}
	if st := srv.Stats(); st.Requests != 0 {
		t.Errorf("%d requests reached the provider", st.Requests)
	}
}
