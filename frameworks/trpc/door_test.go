package trpc_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	htrpc "github.com/histrim/history/frameworks/trpc"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/models"
	"trpc.group/trpc-go/trpc-agent-go/model"
	"trpc.group/trpc-go/trpc-agent-go/model/openai"
)

// doorModel returns trpc-agent-go's OpenAI model named name for the
// endpoint at url, as a user sets it up with the door: tailoring with s
// and its Counter, wrapped, and told nothing of the window (trpc-agent-go
// takes it from its own table, with its default reserves and margin).
func doorModel(url, name string, s *htrpc.Strategy) model.Model {
	return htrpc.Wrap(openai.New(name,
		openai.WithBaseURL(url), openai.WithAPIKey("sk-local"),
		openai.WithEnableTokenTailoring(true),
		openai.WithTailoringStrategy(s), openai.WithTokenCounter(s.Counter())), s)
}

// runDoor runs l through trpc-agent-go's runner over a wrapped model named
// name whose Strategy has no Counter, Calibration nor window (the door:
// what the name says), against an OpenAI endpoint with l's window; every
// trim is counted by tr.
func runDoor(t *testing.T, l *adaptertest.Loop, name string, tr *adaptertest.DoorTrims) {
	var trimmed atomic.Int64
	s := htrpc.NewStrategy(htrpc.Config{Options: []history.Option{tr.Option(func(history.Event) { trimmed.Add(1) })},
		OnObserve: func(_, reported int, _ history.Verdict) { l.Accepted(trimmed.Swap(0) > 0, reported) }})
	runLoop(t, l, func(url string) model.Model { return doorModel(url, name, s) })
}

// TestDoor runs trpc-agent-go's runner over a wrapped model named
// gpt-3.5-turbo with a Strategy configured with nothing: the budget is
// bounded by the model's window from the table less its output limit and
// the margin until warm, the counter is its tokenizer's, the Calibration
// the Strategy's own for the model, and the default policy's task preset
// elides old tool results before turns go. Before, the same set-up
// trimmed whole turns only to trpc-agent-go's budget, counting with the
// heuristic and calibrating nothing: the failures reached the user.
func TestDoor(t *testing.T) {
	var tr adaptertest.DoorTrims
	adaptertest.DoorLoop(t, "trpc", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, name string) {
		runDoor(t, l, name, &tr)
	})
	tr.Check(t, "trpc")
}

// TestDoorWindow runs the door naming gpt-4.1 (a window of a million
// tokens, in histrim's table and in trpc-agent-go's) against an endpoint
// whose window is 16,000: what the first refusal said bounds every later
// request of the Strategy (issue 34).
func TestDoorWindow(t *testing.T) {
	var tr adaptertest.DoorTrims
	adaptertest.DoorWindow(t, "trpc", "gpt-4.1", loopWindow, func(t *testing.T, l *adaptertest.Loop, name string) {
		runDoor(t, l, name, &tr)
	})
	tr.Check(t, "trpc")
}

// TestDoorModel: Config.Model names the model in place of the wrapped
// model's name (a deployment's name the table does not know): the door is
// that model's; an unknown Config.Model fails the request with the typed
// error before anything is sent, and an unknown wrapped name with no
// Config.Model leaves the Strategy trimming to trpc-agent-go's budget.
func TestDoorModel(t *testing.T) {
	// A message whose count differs between gpt-3.5-turbo's tokenizer
	// and the heuristic: the Strategy's Counter counts with the door's.
	probe := model.NewUserMessage("Überprüfung der größeren naïve Einträge: item_42.7, item_43.8 (ok?)")
	gpt35, err := models.Lookup("gpt-3.5-turbo")
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := htrpc.NewCounter(fit.Counter(gpt35)).CountTokens(context.Background(), probe)
	rough, _ := htrpc.NewCounter(nil).CountTokens(context.Background(), probe)
	if exact == rough {
		t.Fatalf("the probe counts %d with both counters", exact)
	}
	tests := []struct {
		name, wrapped, model string
		err                  error // GenerateContent's (errors.Is), nil: none
		requests             int   // that reach the provider
		count                int   // the Strategy's Counter's count of probe
	}{
		{name: "Config.Model names a known model", wrapped: "my-deployment", model: "gpt-3.5-turbo", requests: 1, count: exact},
		{name: "an unknown Config.Model fails before sending", wrapped: "gpt-3.5-turbo", model: "local-model-of-nobody", err: models.ErrUnknownModel, count: rough},
		{name: "an unknown wrapped name: trpc-agent-go's budget", wrapped: "local-model-of-nobody", requests: 1, count: rough},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := adaptertest.NewLoop("trpc", adaptertest.Skew(1), loopWindow)
			srv := &loopserver.OpenAI{Judge: l, Window: l.Window}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			s := htrpc.NewStrategy(htrpc.Config{Model: tt.model})
			if n, _ := s.Counter().CountTokens(context.Background(), probe); n != tt.count {
				t.Errorf("the Strategy's Counter counts the probe %d, want %d", n, tt.count)
			}
			m := doorModel(ts.URL+"/v1", tt.wrapped, s)
			req := &model.Request{Messages: []model.Message{model.NewSystemMessage(loopserver.SystemPrompt), model.NewUserMessage(loopserver.Task(1))}}
			ch, err := m.GenerateContent(context.Background(), req)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("GenerateContent: %v, want an error wrapping %v", err, tt.err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				for r := range ch {
					if r.Error != nil {
						t.Errorf("response error: %s", r.Error.Message)
					}
				}
			}
			if st := srv.Stats(); st.Requests != tt.requests {
				t.Errorf("%d requests reached the provider, want %d", st.Requests, tt.requests)
			}
		})
	}
}
