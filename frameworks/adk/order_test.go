package adk_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	hadk "github.com/histrim/history/frameworks/adk"
	"github.com/histrim/history/internal/loopserver"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/genai"
)

// recorder logs the model callbacks ADK calls, in order, with the number
// of contents each request holds, and the requests the server received.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, fmt.Sprintf(format, args...))
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// judge is a loopserver.Judge that counts factor times the library's
// estimate (a factor the test changes in mid-session) and logs every
// request it receives, by its number of messages, to a recorder.
type judge struct {
	window int
	rec    *recorder
	mu     sync.Mutex
	factor float64
}

func (j *judge) set(f float64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.factor = f
}

func (j *judge) Receive(msgs []history.Message, tools string, holds func(string) bool) (int, bool) {
	j.mu.Lock()
	f := j.factor
	j.mu.Unlock()
	n, fits := loopserver.Skew{Window: j.window, Factor: f}.Receive(msgs, tools, holds)
	j.rec.add("server: %d messages, fits %v (%d tokens at %.1fx)", len(msgs), fits, n, f)
	return n, fits
}

func (j *judge) Unpaired(why string) { j.rec.add("server: pairing error %s", why) }

// recording returns a plugin that logs the model callbacks ADK calls on
// it, with the number of contents the request holds.
func recording(t *testing.T, name string, rec *recorder) *plugin.Plugin {
	t.Helper()
	p, err := plugin.New(plugin.Config{Name: name,
		BeforeModelCallback: func(_ agent.CallbackContext, req *model.LLMRequest) (*model.LLMResponse, error) {
			rec.add("%s before: %d contents", name, len(req.Contents))
			return nil, nil
		},
		OnModelErrorCallback: func(agent.CallbackContext, *model.LLMRequest, error) (*model.LLMResponse, error) {
			rec.add("%s error", name)
			return nil, nil
		},
		AfterModelCallback: func(agent.CallbackContext, *model.LLMResponse, error) (*model.LLMResponse, error) {
			rec.add("%s after", name)
			return nil, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCallbackOrder documents what ADK v1.6.0 does with the callbacks and
// the trimmed request, on a session that outgrows a window of 8,000
// tokens of a Gemini that starts counting 3 times the library's
// estimate at turn 4 (the first request after the switch is rejected),
// with a recording plugin, the histrim plugin and a second recording
// plugin, in that order, and recording agent callbacks:
//
//   - the plugins' BeforeModel callbacks run in order, then the agent's;
//     each sees the request as the one before left it: the first plugin
//     the whole session, everything after the histrim plugin (and the
//     model) the trimmed contents;
//   - on a model error, the plugins' OnModelError run in order, then the
//     agent's, until one answers: the first plugin's runs, the histrim
//     plugin recovers and resends, and the second plugin's and the
//     agent's OnModelError are not called; the flow goes on with the
//     answer;
//   - AfterModel runs for the plugins, then the agent, on the recovered
//     answer as on any other;
//   - the session's events are untouched: every event of every turn is
//     there, whatever was trimmed from the requests.
func TestCallbackOrder(t *testing.T) {
	const window = 8000
	rec := &recorder{}
	j := &judge{window: window, rec: rec, factor: 1}
	srv := &loopserver.Gemini{Judge: j, Window: window}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	m := geminiModel(t, ts.URL)
	cb, err := hadk.New(hadk.Config{Budget: window, Model: m, OnError: func(err error) { rec.add("histrim error: %v", err) },
		Options: []history.Option{history.WithStepTrim()}})
	if err != nil {
		t.Fatal(err)
	}
	ours, err := cb.Plugin()
	if err != nil {
		t.Fatal(err)
	}
	words := loopserver.Words(150, 300)
	r, sessions := newRunner(t, m, words, func(ac *llmagent.Config, rc *runner.Config) {
		rc.PluginConfig.Plugins = []*plugin.Plugin{recording(t, "first", rec), ours, recording(t, "second", rec)}
		ac.BeforeModelCallbacks = append(ac.BeforeModelCallbacks, func(_ agent.CallbackContext, req *model.LLMRequest) (*model.LLMResponse, error) {
			rec.add("agent before: %d contents", len(req.Contents))
			return nil, nil
		})
		ac.OnModelErrorCallbacks = append(ac.OnModelErrorCallbacks, func(agent.CallbackContext, *model.LLMRequest, error) (*model.LLMResponse, error) {
			rec.add("agent error")
			return nil, nil
		})
		ac.AfterModelCallbacks = append(ac.AfterModelCallbacks, func(_ agent.CallbackContext, resp *model.LLMResponse, err error) (*model.LLMResponse, error) {
			rec.add("agent after")
			return nil, nil
		})
	})
	const turns = 8
	for turn := 1; turn <= turns; turn++ {
		if turn == 4 {
			j.set(3)
		}
		for _, err := range r.Run(context.Background(), "user", "s", genai.NewContentFromText(loopserver.Task(turn), genai.RoleUser), agent.RunConfig{}) {
			if err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
		}
	}
	log := rec.lines()

	// The model call that was rejected and recovered.
	at := slices.IndexFunc(log, func(s string) bool { return strings.Contains(s, "fits false") })
	if at < 3 || at+7 > len(log) {
		t.Fatalf("no rejected request in the log:\n%s", strings.Join(log, "\n"))
	}
	t.Logf("the callbacks and requests of the model call that was rejected and recovered:\n%s", strings.Join(log[at-3:at+7], "\n"))
	var whole, trimmed, agentSaw, sent, resent int
	fmt.Sscanf(log[at-3], "first before: %d contents", &whole)
	fmt.Sscanf(log[at-2], "second before: %d contents", &trimmed)
	fmt.Sscanf(log[at-1], "agent before: %d contents", &agentSaw)
	fmt.Sscanf(log[at], "server: %d messages", &sent)
	fmt.Sscanf(log[at+2], "server: %d messages, fits true", &resent)
	if trimmed == 0 || trimmed >= whole || agentSaw != trimmed || log[at+1] != "first error" || resent == 0 || resent >= sent ||
		!slices.Equal(log[at+3:at+7], []string{"first after", "second after", "agent after", log[at+6]}) || !strings.HasPrefix(log[at+6], "first before") {
		t.Errorf("around the rejection:\n%s", strings.Join(log[at-3:at+7], "\n"))
	}
	if slices.Contains(log, "second error") || slices.Contains(log, "agent error") {
		t.Error("an OnModelError after the histrim plugin ran although it recovered")
	}
	// The session holds every event of every turn: the user's message,
	// each step's calls and responses, the final answer.
	got, err := sessions.Get(context.Background(), &session.GetRequest{AppName: "loop", UserID: "user", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for turn := 1; turn <= turns; turn++ {
		want += 2 + 2*loopserver.Steps(turn)
	}
	if n := got.Session.Events().Len(); n != want || n <= whole {
		t.Errorf("the session holds %d events, want %d (all of them, more than the %d contents of the rejected request)", n, want, whole)
	}
}
