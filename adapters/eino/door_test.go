package eino

import (
	"context"
	"errors"
	"fmt"
	"github.com/histrim/history/models"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
)

// doorSender binds the tools to Eino's OpenAI model and sends through the
// door: Fit names the model (and passes the tools as the call's option,
// which the door counts), RecoverOverflow on the same transcript (attempts
// 1 and 2), Observe of each reply's usage.
func doorSender(name string) makeSender {
	return func(t *testing.T, l *adaptertest.Loop, cm model.ToolCallingChatModel, tools []*schema.ToolInfo, _ *history.Calibration, st *loopStats) sendFunc {
		cm, err := cm.WithTools(tools)
		if err != nil {
			t.Fatal(err)
		}
		tr := NewTrimmer()
		return func(ctx context.Context, full []*schema.Message) (*schema.Message, error) {
			send, res, err := tr.Fit(ctx, name, full, model.WithTools(tools))
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				return nil, err
			}
			for attempt := 1; ; attempt++ {
				out, err := cm.Generate(ctx, send)
				if err == nil {
					if out.ResponseMeta == nil || tr.Observe(out.ResponseMeta.Usage) == history.VerdictInvalid {
						t.Errorf("the reply's usage was not observed: %+v", out.ResponseMeta)
					}
					st.accept(l, promptTokens(out), res.Trimmed || attempt > 1, 0, false)
					return out, nil
				}
				if attempt > MaxRetries || !history.IsContextOverflow(err) {
					return nil, err
				}
				if send, res, err = tr.RecoverOverflow(full, err, attempt); err != nil {
					return nil, err
				}
			}
		}
	}
}

// TestDoor runs the loop through the door with Eino's OpenAI model: the
// Trimmer takes the window from the model's name (gpt-3.5-turbo's
// 16,385), the tools from the call's options, and learns the provider's
// count from each reply's usage.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "eino", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, name string) {
		runLoop(t, l, doorSender(name))
	})
}

// TestChatModelDoor: a ChatModel given the model's name and no Budget
// trims every request to the model's window from the table (gpt-3.5-turbo's
// 16,385), with the tools bound to it counted, and learns the provider's
// count from the usage with a Calibration it owns: through Eino's real
// OpenAI chat model against the loop's server.
func TestChatModelDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "eino", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, name string) {
		runLoop(t, l, wrapper(Config{Model: name, Options: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}}))
	})
}

// TestChatModelDoorWindow: the same against a server whose window
// (loopLimit) is far smaller than gpt-4o's, which the ChatModel is not
// told: the first request past it is refused, and what the provider said
// bounds every later request, stateless and stateful, which still fill
// the window.
func TestChatModelDoorWindow(t *testing.T) {
	for _, stateful := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateful=%v", stateful), func(t *testing.T) {
			var tr adaptertest.DoorTrims
			l := adaptertest.DoorWindow(t, "eino", "gpt-4o", loopLimit, func(t *testing.T, l *adaptertest.Loop, name string) {
				runLoop(t, l, wrapper(Config{Model: name, Stateful: stateful, Options: []history.Option{tr.Option(nil)}}))
			})
			// The door's policy: the task preset, and the cache policy's
			// low-water mark under Stateful only (before, neither).
			tr.Check(t, "eino")
			if stateful {
				tr.CheckLowWater(t, "eino")
			}
			// What the provider said is learnt once: a stateful ChatModel's
			// Trimmer keeps it, and the door's bound on top of it would
			// count it twice (trimmed requests filled 40.8% of the window,
			// 26.3% with the low-water mark). The mark itself trims down
			// to half the budget at each maintenance point: stateful
			// trimmed requests fill 68.9%, stateless ones 97.5%.
			want := 0.7
			if stateful {
				want = 0.55
			}
			if f := l.Stats().Fill(); !race.Enabled && f < want {
				t.Errorf("trimmed requests fill %.1f%% of the window, want at least %.0f%%", 100*f, 100*want)
			}
		})
	}
}

// TestChatModelDoorNames: the model's name comes from Config.Model or from
// the call's model.WithModel, which wins; a name the table does not know,
// or no name and no Budget, is an error, never a guessed budget.
func TestChatModelDoorNames(t *testing.T) {
	gpt35 := float64(16_385) // gpt-3.5-turbo's window in the table
	p := &provider{scale: 1, limit: 1 << 30}
	in := []*schema.Message{schema.SystemMessage("sys"), schema.UserMessage("hello")}
	tests := []struct {
		name    string
		cfg     Config
		opts    []model.Option
		newErr  error // NewChatModel's error (errors.Is), nil: none
		callErr error // Generate's error (errors.Is), nil: none
		budget  int   // the budget of the request's event, when it is sent
	}{
		{name: "Config.Model: the model's window less its output and the margin", cfg: Config{Model: "gpt-3.5-turbo"},
			budget: int(gpt35) - 4_096 - int(gpt35*history.MarginShare)},
		{name: "the call's WithMaxTokens is the output room", cfg: Config{Model: "gpt-3.5-turbo"}, opts: []model.Option{model.WithMaxTokens(1000)},
			budget: int(gpt35) - 1000 - int(gpt35*history.MarginShare)},
		{name: "the call's WithModel wins", cfg: Config{Model: "gpt-4o"}, opts: []model.Option{model.WithModel("gpt-3.5-turbo")},
			budget: int(gpt35) - 4_096 - int(gpt35*history.MarginShare)},
		{name: "a Budget is used as it is", cfg: Config{Budget: 5000, Model: "gpt-4o"}, budget: 5000},
		{name: "no Budget and no Model", cfg: Config{}, newErr: history.ErrInvalidBudget},
		{name: "a negative Budget", cfg: Config{Budget: -1, Model: "gpt-4o"}, newErr: history.ErrInvalidBudget},
		{name: "an unknown Config.Model", cfg: Config{Model: "no-such-model-7"}, newErr: models.ErrUnknownModel},
		{name: "an unknown WithModel fails the call", cfg: Config{Model: "gpt-4o"}, opts: []model.Option{model.WithModel("no-such-model-7")},
			callErr: models.ErrUnknownModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec record
			tt.cfg.OnEvent = rec.add
			m, err := NewChatModel(&fakeModel{t: t, p: p}, tt.cfg)
			if tt.newErr != nil {
				if !errors.Is(err, tt.newErr) || !strings.HasPrefix(err.Error(), "history/eino: ") {
					t.Fatalf("NewChatModel: %v, want an error wrapping %v", err, tt.newErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = m.Generate(context.Background(), in, tt.opts...)
			if tt.callErr != nil {
				if !errors.Is(err, tt.callErr) {
					t.Fatalf("Generate: %v, want an error wrapping %v", err, tt.callErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.events) == 0 || rec.events[0].Type != EventRequest || rec.events[0].Budget != tt.budget {
				t.Errorf("events %+v, want a request trimmed to %d", rec.events, tt.budget)
			}
		})
	}
}

// TestChatModelStatefulModels: a stateful ChatModel whose calls alternate
// two models of different tokenizers and windows (gpt-3.5-turbo: cl100k,
// 16,385; claude-sonnet-4-5: the heuristic, 200,000) trims each call as a
// stateful ChatModel serving that model alone does: its own model's
// counter, Calibration and budget. Before, the conversation's one Trimmer
// was made with the first call's model's options and kept them: the
// calls to the other model were counted with the first model's counter.
func TestChatModelStatefulModels(t *testing.T) {
	names := [2]string{"gpt-3.5-turbo", "claude-sonnet-4-5"}
	const calls = 6
	inputs := make([][]*schema.Message, calls)
	transcript := []*schema.Message{schema.SystemMessage("You are a careful assistant.")}
	for i := range calls {
		for turn := range 8 { // about 3,000 tokens a call: gpt-3.5-turbo's window is passed by the fourth
			transcript = append(transcript,
				schema.UserMessage(fmt.Sprintf("Call %d, question %d: %s", i, turn, strings.Repeat(fmt.Sprintf("explain item_%d.%d of the Überprüfung (größer, naïve) ", i, turn), 20))),
				schema.AssistantMessage(fmt.Sprintf("Answer %d.%d: %s", i, turn, strings.Repeat("the value is 42; ", 30)), nil))
		}
		inputs[i] = append(transcript[:len(transcript):len(transcript)], schema.UserMessage(fmt.Sprintf("Now call %d.", i)))
	}
	// run sends inputs[i] for the calls i that pick, through one stateful
	// ChatModel, and returns what its request events say.
	run := func(pick func(i int) (string, bool)) []adaptertest.Sent {
		var rec record
		m, err := NewChatModel(&fakeModel{t: t, p: &provider{scale: 1.2, limit: 1 << 30}}, Config{Model: names[0], Stateful: true, OnEvent: rec.add})
		if err != nil {
			t.Fatal(err)
		}
		for i := range calls {
			if name, ok := pick(i); ok {
				if _, err := m.Generate(context.Background(), inputs[i], model.WithModel(name)); err != nil {
					t.Fatalf("call %d (%s): %v", i, name, err)
				}
			}
		}
		var out []adaptertest.Sent
		for _, ev := range rec.events {
			if ev.Type == EventRequest {
				out = append(out, adaptertest.Sent{Messages: ev.Messages, Tokens: ev.Tokens, Budget: ev.Budget, Trimmed: ev.Trimmed})
			}
		}
		return out
	}
	adaptertest.SameAsAlone(t, names, run)
}
