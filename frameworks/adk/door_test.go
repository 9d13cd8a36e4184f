package adk_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/histrim/history"
	hadk "github.com/histrim/history/frameworks/adk"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/models"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model/gemini"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/genai"
)

// TestDoor runs ADK's runner with the plugin and no Budget: the budget
// comes from the model the request names (LLMRequest.Model, here
// gemini-2.5-flash, its window from the table), with a Calibration the
// callbacks own.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "adk", "gemini-2.5-flash", func(t *testing.T, l *adaptertest.Loop, name string) {
		if cb := runDoor(t, l, name); cb != nil {
			if _, _, _, warm := cb.Calibration().Model(); !warm {
				t.Error("the callbacks' Calibration learnt nothing from the responses")
			}
		}
	})
}

// TestDoorWindow runs the door against a Gemini endpoint whose window
// (16,000) is far below the table's for gemini-2.5-flash: what Gemini's
// first refusal said bounds every later request (issue 34; before, every
// request planned at the table's window again and 136 of 281 were
// refused).
func TestDoorWindow(t *testing.T) {
	adaptertest.DoorWindow(t, "adk", "gemini-2.5-flash", loopWindow, func(t *testing.T, l *adaptertest.Loop, name string) {
		runDoor(t, l, name)
	})
}

// runDoor runs l through ADK's runner with the plugin and no Budget,
// naming the model name, against a Gemini endpoint with l's window, and
// returns the callbacks.
func runDoor(t *testing.T, l *adaptertest.Loop, name string) *hadk.Callbacks {
	t.Helper()
	srv := &loopserver.Gemini{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m, err := gemini.NewModel(context.Background(), name, &genai.ClientConfig{
		APIKey: "local", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	var trimmed atomic.Int64
	cb, err := hadk.New(hadk.Config{Model: m, OnError: func(err error) { l.Note("histrim: %v", err) },
		Options:   []history.Option{history.WithOnTrim(func(history.Event) { trimmed.Add(1) })},
		OnObserve: func(sent, reported int, _ history.Verdict) { l.Accepted(trimmed.Swap(0) > 0, reported) }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cb.Plugin()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := newRunner(t, m, l.Words, func(_ *llmagent.Config, rc *runner.Config) { rc.PluginConfig.Plugins = []*plugin.Plugin{p} })
	runTurns(t, r, l)
	for _, p := range srv.Problems() {
		t.Error("server: " + p)
	}
	return cb
}

// TestDoorUnknownModel: without a Budget, a request naming a model the
// table does not know fails with the typed error, never a guess.
func TestDoorUnknownModel(t *testing.T) {
	cb, err := hadk.New(hadk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l := adaptertest.NewLoop("adk", adaptertest.Skew(1), 16_000)
	l.Turns = 1
	srv := &loopserver.Gemini{Judge: l, Window: l.Window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m, err := gemini.NewModel(context.Background(), "gemini-of-nobody", &genai.ClientConfig{
		APIKey: "local", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cb.Plugin()
	if err != nil {
		t.Fatal(err)
	}
	r, _ := newRunner(t, m, l.Words, func(_ *llmagent.Config, rc *runner.Config) { rc.PluginConfig.Plugins = []*plugin.Plugin{p} })
	var got error
	for _, err := range r.Run(context.Background(), "user", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		if err != nil && got == nil {
			got = err
		}
	}
	if !errors.Is(got, models.ErrUnknownModel) {
		t.Errorf("the run's error is %v, want one wrapping models.ErrUnknownModel", got)
	}
	if st := srv.Stats(); st.Requests != 0 {
		t.Errorf("%d requests reached the provider", st.Requests)
	}
}
