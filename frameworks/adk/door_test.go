package adk_test

import (
	"context"
	"errors"
	"math"
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
// callbacks own, and the default policy's task preset: old function
// responses are elided before turns go (before, the door trimmed whole
// turns only: 0 of 49 trims elided one, and trimmed requests filled 71.5%
// of the window, 93.1% now). Over adaptertest.FrameworkDoorTurns user
// turns: the window is a million tokens.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoopTurns(t, "adk", "gemini-2.5-flash", adaptertest.FrameworkDoorTurns, func(t *testing.T, l *adaptertest.Loop, name string) {
		cb, tr := runDoor(t, l, name)
		if _, _, _, warm := cb.Calibration().Model(); !warm {
			t.Error("the callbacks' Calibration learnt nothing from the responses")
		}
		tr.Check(t, "adk")
	})
}

// TestDoorWindow runs the door against a Gemini endpoint whose window
// (16,000) is far below the table's for gemini-2.5-flash: what Gemini's
// first refusal said bounds every later request (issue 34; before, every
// request planned at the table's window again and 136 of 281 were
// refused).
func TestDoorWindow(t *testing.T) {
	adaptertest.DoorWindow(t, "adk", "gemini-2.5-flash", loopWindow, func(t *testing.T, l *adaptertest.Loop, name string) {
		_, tr := runDoor(t, l, name)
		tr.Check(t, "adk")
	})
}

// runDoor runs l through ADK's runner with the plugin and no Budget,
// naming the model name, against a Gemini endpoint with l's window, and
// returns the callbacks.
func runDoor(t *testing.T, l *adaptertest.Loop, name string) (*hadk.Callbacks, *adaptertest.DoorTrims) {
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
	c := new(adaptertest.DoorTrims)
	cb, err := hadk.New(hadk.Config{Model: m, OnError: func(err error) { l.Note("histrim: %v", err) },
		Options:   []history.Option{c.Option(func(history.Event) { trimmed.Add(1) })},
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
	return cb, c
}

// TestDoorCalibrationPerModel: under the door without a Calibration, the
// callbacks keep one per model the requests name, since what one learns
// of a model's tokenizer is wrong for another's. Two agents share the
// plugin, one on gemini-2.5-flash behind an endpoint counting 1.0 times
// the library's estimate, one on gemini-2.5-pro counting 1.5 times, their
// turns alternating: each model's Calibration learns its own ratio.
// Before, the callbacks kept one Calibration for both, which learnt
// neither.
func TestDoorCalibrationPerModel(t *testing.T) {
	cb, err := hadk.New(hadk.Config{OnError: func(err error) { t.Error(err) }})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cb.Plugin()
	if err != nil {
		t.Fatal(err)
	}
	type agentRun struct {
		name   string
		factor float64
		r      *runner.Runner
	}
	runs := []*agentRun{{name: "gemini-2.5-flash", factor: 1.0}, {name: "gemini-2.5-pro", factor: 1.5}}
	for _, a := range runs {
		srv := &loopserver.Gemini{Judge: loopserver.Skew{Window: 1 << 20, Factor: a.factor}, Window: 1 << 20}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		m, err := gemini.NewModel(context.Background(), a.name, &genai.ClientConfig{
			APIKey: "local", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}})
		if err != nil {
			t.Fatal(err)
		}
		a.r, _ = newRunner(t, m, loopserver.Words(150, 300), func(_ *llmagent.Config, rc *runner.Config) { rc.PluginConfig.Plugins = []*plugin.Plugin{p} })
	}
	for turn := 1; turn <= 3; turn++ {
		for _, a := range runs {
			for _, err := range a.r.Run(context.Background(), "user", a.name, genai.NewContentFromText(loopserver.Task(turn), genai.RoleUser), agent.RunConfig{}) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, a := range runs {
		scale, overhead, _, ok := cb.CalibrationFor(a.name).Model()
		t.Logf("%s (counting %.1fx): scale %.3f, overhead %.0f", a.name, a.factor, scale, overhead)
		if !ok || math.Abs(scale-a.factor) > 0.1 {
			t.Errorf("%s's Calibration learnt a scale of %.3f (ok %v), want %.1f: the models share one", a.name, scale, ok, a.factor)
		}
	}
	if cb.CalibrationFor(runs[0].name) == cb.CalibrationFor(runs[1].name) {
		t.Error("the two models share one Calibration")
	}
	if cb.Calibration() != cb.CalibrationFor(runs[1].name) {
		t.Error("Calibration is not that of the model of the latest request")
	}
}

// TestDoorCalibrationGiven: a Calibration the caller gives is used for
// every model, as documented.
func TestDoorCalibrationGiven(t *testing.T) {
	cal := new(history.Calibration)
	cb, err := hadk.New(hadk.Config{Calibration: cal})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gemini-2.5-flash", "gemini-2.5-pro"} {
		if cb.CalibrationFor(name) != cal {
			t.Errorf("requests naming %s learn into another Calibration than the one given", name)
		}
	}
	if cb.Calibration() != cal {
		t.Error("Calibration is not the one given")
	}
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
