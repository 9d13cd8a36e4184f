package langchaingo

import (
	"context"
	"errors"
	"fmt"
	"github.com/histrim/history/models"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

// TestDoor runs the loop through the door with langchaingo's OpenAI
// model: Fit names the model (gpt-3.5-turbo: the window from the table)
// and passes the call's options (the tools, which it counts), then
// RecoverOverflow on the same transcript, and Observe of each response.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "langchaingo", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, name string) {
		srv := &loopServer{loop: l}
		hs := httptest.NewServer(srv)
		defer hs.Close()
		llm, err := openai.New(openai.WithBaseURL(hs.URL), openai.WithToken("x"), openai.WithModel(name))
		if err != nil {
			t.Fatal(err)
		}
		tr := NewTrimmer()
		ctx := context.Background()
		tools := loopTools()
		r := rng(1300)
		full := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You are a coding agent. Use the tools to answer each task.")}
		call := 0
		for turn := range l.Turns {
			task := fmt.Sprintf("Task %d: %s", turn, words(&r, 10+r.intn(30)))
			full = append(full, llms.TextParts(llms.ChatMessageTypeHuman, task))
			l.Turn(turn+1, task)
			steps := 1 + r.intn(6)
		loop:
			for step := 0; step <= steps; step++ {
				next := reply{text: fmt.Sprintf("Done with task %d: %s", turn, words(&r, 20+r.intn(40)))}
				if step < steps {
					next = reply{}
					for range 1 + r.intn(4)/3 {
						call++
						c := wireCall{ID: fmt.Sprintf("call_%d", call), Type: "function"}
						c.Function.Name = fmt.Sprintf("tool_%02d", r.intn(20))
						c.Function.Arguments = fmt.Sprintf(`{"path":"src/file_%d.go","query":"%s"}`, r.intn(100), words(&r, 2))
						next.calls = append(next.calls, c)
					}
				}
				srv.mu.Lock()
				srv.next = next
				srv.mu.Unlock()
				send, res, err := tr.Fit(ctx, name, full, llms.WithTools(tools))
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					l.Error(fmt.Errorf("Fit: %w", err))
					break
				}
				resp, err := llm.GenerateContent(ctx, send, llms.WithTools(tools))
				for attempt := 1; err != nil && attempt <= 2 && IsContextOverflow(err); attempt++ {
					var rerr error
					if send, res, rerr = tr.RecoverOverflow(full, err, attempt); rerr != nil {
						l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
						break loop
					}
					resp, err = llm.GenerateContent(ctx, send, llms.WithTools(tools))
				}
				if err != nil {
					l.Error(fmt.Errorf("step %d: %w", step, err))
					break
				}
				if v := tr.Observe(resp); v == history.VerdictInvalid {
					t.Errorf("step %d: the response's usage was not observed", step)
				}
				l.Accepted(res.Trimmed, PromptTokens(resp))
				c := resp.Choices[0]
				if len(c.ToolCalls) == 0 {
					full = append(full, llms.TextParts(llms.ChatMessageTypeAI, c.Content))
					break
				}
				ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
				for _, tc := range c.ToolCalls {
					ai.Parts = append(ai.Parts, tc)
				}
				full = append(full, ai)
				for _, tc := range c.ToolCalls {
					n := l.MinWords + r.intn(l.MaxWords-l.MinWords+1)
					full = append(full, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
						ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: words(&r, n)}}})
				}
			}
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, p := range srv.problems {
			t.Errorf("server: %s", p)
		}
	})
}

// TestModelDoor: a Model given the model's name and no Budget trims every
// request to the model's window from the table (gpt-3.5-turbo's 16,385),
// the call's tools counted, and learns the provider's count from the
// usage with a Calibration it owns, with the default policy's task preset
// (old tool results elided before turns go; before, whole turns only, and
// trimmed requests filled 65.8% of the window, 73.0% now): through
// langchaingo's OpenAI model against the loop's server.
func TestModelDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "langchaingo", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, name string) {
		var tr adaptertest.DoorTrims
		runLoopModel(t, l, "trim", name, tr.Option(nil))
		tr.Check(t, "langchaingo")
	})
}

// TestModelDoorWindow: the same against a server whose window is far
// smaller than gpt-4o's, which the Model is not told: the first request
// past it is refused, and what the provider said bounds every later
// request, stateless and stateful, which still fill the window.
func TestModelDoorWindow(t *testing.T) {
	for _, kind := range []string{"trim", "trimmer"} {
		t.Run(kind, func(t *testing.T) {
			var tr adaptertest.DoorTrims
			l := adaptertest.DoorWindow(t, "langchaingo", "gpt-4o", 12_000, func(t *testing.T, l *adaptertest.Loop, name string) {
				runLoopModel(t, l, kind, name, tr.Option(nil))
			})
			// The door's policy: the task preset, and the cache policy's
			// low-water mark when stateful only (before, neither).
			tr.Check(t, "langchaingo")
			if kind != "trim" {
				tr.CheckLowWater(t, "langchaingo")
			}
			// What the provider said is learnt once: a stateful Model's
			// Trimmer keeps it, and the door's bound on top of it would
			// count it twice (trimmed requests filled 29.4% of the window,
			// 25.5% with the low-water mark). The mark trims down to half
			// the budget at each maintenance point: stateful trimmed
			// requests fill 66.2%, stateless ones 97.0%.
			want := 0.7
			if kind != "trim" {
				want = 0.55
			}
			if f := l.Stats().Fill(); !race.Enabled && f < want {
				t.Errorf("trimmed requests fill %.1f%% of the window, want at least %.0f%%", 100*f, 100*want)
			}
		})
	}
}

// TestModelDoorNames: the model's name comes from Config.Model or from the
// call's llms.WithModel, which wins; a name the table does not know, or
// no name and no Budget, fails the call before anything is sent, never
// with a guessed budget.
func TestModelDoorNames(t *testing.T) {
	gpt35 := float64(16_385) // gpt-3.5-turbo's window in the table
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "sys"), llms.TextParts(llms.ChatMessageTypeHuman, "hello")}
	tests := []struct {
		name   string
		cfg    Config
		opts   []llms.CallOption
		err    error // errors.Is, nil: none
		budget int   // the budget of the request sent
	}{
		{name: "Config.Model: the model's window less its output and the margin", cfg: Config{Model: "gpt-3.5-turbo"},
			budget: int(gpt35) - 4_096 - int(gpt35*history.MarginShare)},
		{name: "the call's WithMaxTokens is the output room", cfg: Config{Model: "gpt-3.5-turbo"}, opts: []llms.CallOption{llms.WithMaxTokens(1000)},
			budget: int(gpt35) - 1000 - int(gpt35*history.MarginShare)},
		{name: "the call's WithModel wins", cfg: Config{Model: "gpt-4o"}, opts: []llms.CallOption{llms.WithModel("gpt-3.5-turbo")},
			budget: int(gpt35) - 4_096 - int(gpt35*history.MarginShare)},
		{name: "the call's WithModel alone", opts: []llms.CallOption{llms.WithModel("gpt-3.5-turbo")},
			budget: int(gpt35) - 4_096 - int(gpt35*history.MarginShare)},
		{name: "a Budget is used as it is", cfg: Config{Budget: 5000, Model: "gpt-4o"}, budget: 5000},
		{name: "no Budget and no model", err: history.ErrInvalidBudget},
		{name: "a negative Budget", cfg: Config{Budget: -1, Model: "gpt-4o"}, err: history.ErrInvalidBudget},
		{name: "an unknown Config.Model", cfg: Config{Model: "no-such-model-7"}, err: models.ErrUnknownModel},
		{name: "an unknown WithModel", cfg: Config{Model: "gpt-4o"}, opts: []llms.CallOption{llms.WithModel("no-such-model-7")}, err: models.ErrUnknownModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeModel{}
			var events []Event
			tt.cfg.OnEvent = func(ev Event) { events = append(events, ev) }
			_, err := NewModel(fake, tt.cfg).GenerateContent(context.Background(), msgs, tt.opts...)
			if tt.err != nil {
				if !errors.Is(err, tt.err) || len(events) > 0 {
					t.Fatalf("GenerateContent: %v after %d requests, want an error wrapping %v before any", err, len(events), tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 1 || events[0].Result.Budget != tt.budget {
				t.Errorf("events %+v, want one request trimmed to %d", events, tt.budget)
			}
		})
	}
}

// TestModelStatefulModels: a stateful Model whose calls alternate two
// models of different tokenizers and windows (gpt-3.5-turbo: cl100k,
// 16,385; claude-sonnet-4-5: the heuristic, 200,000) trims each call as a
// stateful Model serving that model alone does: its own model's counter,
// Calibration and budget. Before, the conversation's one Trimmer was
// made with the first call's model's options and kept them: the calls to
// the other model were counted with the first model's counter.
func TestModelStatefulModels(t *testing.T) {
	names := [2]string{"gpt-3.5-turbo", "claude-sonnet-4-5"}
	const calls = 6
	inputs := make([][]llms.MessageContent, calls)
	transcript := []llms.MessageContent{msg(llms.ChatMessageTypeSystem, txt("You are a careful assistant."))}
	for i := range calls {
		for turn := range 8 { // about 3,000 tokens a call: gpt-3.5-turbo's window is passed by the fourth
			transcript = append(transcript,
				msg(llms.ChatMessageTypeHuman, txt(fmt.Sprintf("Call %d, question %d: %s", i, turn, strings.Repeat(fmt.Sprintf("explain item_%d.%d of the Überprüfung (größer, naïve) ", i, turn), 20)))),
				msg(llms.ChatMessageTypeAI, txt(fmt.Sprintf("Answer %d.%d: %s", i, turn, strings.Repeat("the value is 42; ", 30)))))
		}
		inputs[i] = append(transcript[:len(transcript):len(transcript)], msg(llms.ChatMessageTypeHuman, txt(fmt.Sprintf("Now call %d.", i))))
	}
	// run sends inputs[i] for the calls i that pick, through one stateful
	// Model, and returns what its events say.
	run := func(pick func(i int) (string, bool)) []adaptertest.Sent {
		var sent []adaptertest.Sent
		fake := &fakeModel{prompt: -1, count: func(m []llms.MessageContent) int { return tokens(t, m) }}
		m := NewModel(fake, Config{Model: names[0], Stateful: true, OnEvent: func(ev Event) {
			sent = append(sent, adaptertest.Sent{Messages: ev.Messages, Tokens: ev.Result.TokensAfter, Budget: ev.Result.Budget, Trimmed: ev.Result.Trimmed})
		}})
		for i := range calls {
			if name, ok := pick(i); ok {
				if _, err := m.GenerateContent(context.Background(), inputs[i], llms.WithModel(name)); err != nil {
					t.Fatalf("call %d (%s): %v", i, name, err)
				}
			}
		}
		return sent
	}
	adaptertest.SameAsAlone(t, names, run)
}
