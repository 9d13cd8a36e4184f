package adk_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	hadk "github.com/histrim/history/frameworks/adk"
	"github.com/histrim/history/internal/loopserver"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/model/gemini"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/genai"
)

// TestStateKey: with Config.StateKey, the Calibration is saved in the
// session state after every response, and callbacks that have learnt
// nothing yet (a restarted process) start from it.
func TestStateKey(t *testing.T) {
	const window, key = 16_000, "app:histrim.calibration"
	srv := &loopserver.Gemini{Judge: loopserver.Skew{Window: window, Factor: 1.3}, Window: window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m := geminiModel(t, ts.URL)
	sessions := session.InMemoryService()
	first, _ := hadk.New(hadk.Config{Budget: window, Model: m, StateKey: key, OnError: func(err error) { t.Error(err) }})
	runState(t, m, sessions, first, 3, nil)
	restored := savedCalibration(t, sessions, key)
	if restored.Budget(window) != first.Calibration().Budget(window) {
		t.Errorf("saved calibration gives %d, the live one %d", restored.Budget(window), first.Calibration().Budget(window))
	}
	second, _ := hadk.New(hadk.Config{Budget: window, Model: m, StateKey: key, OnError: func(err error) { t.Error(err) }})
	calls := 0
	runState(t, m, sessions, second, 1, func(agent.CallbackContext, *model.LLMRequest) (*model.LLMResponse, error) {
		// The agent's callbacks run after the plugin's BeforeModel and
		// before any response: the calibration was restored, not learnt.
		if _, _, _, ok := second.Calibration().Model(); calls == 0 && !ok {
			t.Error("the second callbacks did not start from the saved calibration")
		}
		calls++
		return nil, nil
	})
	if calls == 0 {
		t.Error("no model call")
	}
}

// TestStateKeyPerModel: under the door without a Calibration, each
// model's Calibration is saved under StateKey + "/" + the model's name,
// so that two models do not overwrite each other's, and callbacks that
// have learnt nothing yet start from it.
func TestStateKeyPerModel(t *testing.T) {
	const key, name = "app:histrim.calibration", "gemini-2.5-flash"
	srv := &loopserver.Gemini{Judge: loopserver.Skew{Window: 1 << 20, Factor: 1.3}, Window: 1 << 20}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m, err := gemini.NewModel(context.Background(), name, &genai.ClientConfig{
		APIKey: "local", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	sessions := session.InMemoryService()
	first, _ := hadk.New(hadk.Config{StateKey: key, OnError: func(err error) { t.Error(err) }})
	runState(t, m, sessions, first, 1, nil)
	restored := savedCalibration(t, sessions, key+"/"+name)
	if restored.Budget(100_000) != first.CalibrationFor(name).Budget(100_000) {
		t.Errorf("saved calibration gives %d, the live one %d", restored.Budget(100_000), first.CalibrationFor(name).Budget(100_000))
	}
	second, _ := hadk.New(hadk.Config{StateKey: key, OnError: func(err error) { t.Error(err) }})
	calls := 0
	runState(t, m, sessions, second, 1, func(agent.CallbackContext, *model.LLMRequest) (*model.LLMResponse, error) {
		// After the plugin's BeforeModel, before any response: restored,
		// not learnt.
		if _, _, _, ok := second.CalibrationFor(name).Model(); calls == 0 && !ok {
			t.Error("the second callbacks did not start from the saved calibration")
		}
		calls++
		return nil, nil
	})
	if calls == 0 {
		t.Error("no model call")
	}
}

// runState runs turns user turns of the loop's tasks in session "s" of
// sessions, through an ADK runner whose agent on m has cb's plugin and,
// when before is set, before as its BeforeModelCallback.
func runState(t *testing.T, m model.LLM, sessions session.Service, cb *hadk.Callbacks, turns int, before llmagent.BeforeModelCallback) {
	t.Helper()
	p, err := cb.Plugin()
	if err != nil {
		t.Fatal(err)
	}
	cfg := llmagent.Config{Name: "coder", Model: m, Instruction: loopserver.SystemPrompt, Tools: tools(t, loopserver.Words(150, 300))}
	if before != nil {
		cfg.BeforeModelCallbacks = []llmagent.BeforeModelCallback{before}
	}
	ag, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "loop", Agent: ag, SessionService: sessions, AutoCreateSession: true,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
	if err != nil {
		t.Fatal(err)
	}
	for turn := 1; turn <= turns; turn++ {
		for _, err := range r.Run(context.Background(), "user", "s", genai.NewContentFromText(loopserver.Task(turn), genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// savedCalibration returns the Calibration saved under key in the state
// of session "s" of sessions.
func savedCalibration(t *testing.T, sessions session.Service, key string) *history.Calibration {
	t.Helper()
	got, err := sessions.Get(context.Background(), &session.GetRequest{AppName: "loop", UserID: "user", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := got.Session.State().Get(key)
	if err != nil {
		t.Fatalf("nothing saved under %s: %v", key, err)
	}
	restored := new(history.Calibration)
	if err := restored.UnmarshalJSON([]byte(saved.(string))); err != nil {
		t.Fatal(err)
	}
	return restored
}
