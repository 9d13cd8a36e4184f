package fantasy_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"charm.land/fantasy"
	"charm.land/fantasy/providers/openaicompat"
	"github.com/histrim/history"
	hfantasy "github.com/histrim/history/frameworks/fantasy"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/models"
)

// namedModel returns fantasy's OpenAI-compatible model name for the
// endpoint at url.
func namedModel(t testing.TB, url, name string) fantasy.LanguageModel {
	t.Helper()
	p, err := openaicompat.New(openaicompat.WithBaseURL(url), openaicompat.WithAPIKey("sk-local"))
	if err != nil {
		t.Fatal(err)
	}
	lm, err := p.LanguageModel(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return lm
}

// TestDoor runs fantasy's Agent over a Model with the zero Config: the
// budget comes from the model the agent calls (gpt-3.5-turbo, its window
// from the table), the counter from its tokenizer, the Calibration is the
// Model's own, and the default policy's task preset: old tool results are
// elided before turns go (before, the door trimmed whole turns only, and
// trimmed requests filled 58.0% of the window).
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "fantasy", "gpt-3.5-turbo", runDoor)
}

// TestDoorWindow runs the door naming gpt-4.1 (a window of a million
// tokens in the table) against an endpoint whose window is 16,000: what
// the first refusal said bounds every later call of the Model (issue 34).
func TestDoorWindow(t *testing.T) {
	adaptertest.DoorWindow(t, "fantasy", "gpt-4.1", loopWindow, runDoor)
}

// runDoor runs l through fantasy's Agent over a Model with the zero
// Config, its inner model named name, against an OpenAI endpoint with l's
// window.
func runDoor(t *testing.T, l *adaptertest.Loop, name string) {
	srv := &loopserver.OpenAI{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var trimmed atomic.Int64
	var tr adaptertest.DoorTrims
	defer tr.Check(t, "fantasy")
	cfg := hfantasy.Config{Options: []history.Option{tr.Option(func(history.Event) { trimmed.Add(1) })},
		OnObserve: func(_, reported int, _ history.Verdict) { l.Accepted(trimmed.Swap(0) > 0, reported) }}
	agent := fantasy.NewAgent(hfantasy.NewModel(namedModel(t, ts.URL+"/v1", name), cfg),
		fantasy.WithSystemPrompt(loopserver.SystemPrompt), fantasy.WithTools(tools(l.Words)...))
	var msgs []fantasy.Message
	ctx := context.Background()
	for turn := 1; turn <= l.Turns; turn++ {
		task := loopserver.Task(turn)
		l.Turn(turn, task)
		res, err := agent.Generate(ctx, fantasy.AgentCall{Prompt: task, Messages: msgs})
		if err != nil {
			l.Error(fmt.Errorf("turn %d: %w", turn, err))
			continue
		}
		msgs = append(msgs, fantasy.NewUserMessage(task))
		for _, s := range res.Steps {
			msgs = append(msgs, s.Messages...)
		}
	}
	for _, p := range srv.Problems() {
		t.Error("server: " + p)
	}
}

// TestDoorUnknownModel: with the zero Config, a call to a model the table
// does not know fails with the typed error before any request.
func TestDoorUnknownModel(t *testing.T) {
	l := adaptertest.NewLoop("fantasy", adaptertest.Skew(1), 16_000)
	srv := &loopserver.OpenAI{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m := hfantasy.NewModel(namedModel(t, ts.URL+"/v1", "local-model-of-nobody"), hfantasy.Config{})
	_, err := m.Generate(context.Background(), fantasy.Call{Prompt: fantasy.Prompt{fantasy.NewUserMessage("hi")}})
	if !errors.Is(err, models.ErrUnknownModel) {
		t.Errorf("err = %v, want one wrapping models.ErrUnknownModel", err)
	}
	if st := srv.Stats(); st.Requests != 0 {
		t.Errorf("%d requests reached the provider", st.Requests)
	}
}
