package adapt

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/fit"
	"github.com/histrim/history/models"
)

// TestFitBudget: the door's budget is the named model's window less the
// output the request asks room for (else the model's), less
// history.MarginShare of the window while the Calibration is cold; the
// request's overhead counts in what is sent; an unknown name is the
// typed error.
func TestFitBudget(t *testing.T) {
	m, err := models.Lookup("gpt-3.5-turbo")
	if err != nil {
		t.Fatal(err)
	}
	margin := int(float64(m.Window) * history.MarginShare)
	for _, tc := range []struct {
		name       string
		req        Request[struct{}, history.Message]
		wantBudget int
		wantErr    error
	}{
		{"the model's output room, the margin while cold",
			Request[struct{}, history.Message]{Model: "gpt-3.5-turbo"}, m.Window - m.Output - margin, nil},
		{"the output the request asks room for replaces the model's",
			Request[struct{}, history.Message]{Model: "gpt-3.5-turbo", Output: 1000}, m.Window - 1000 - margin, nil},
		{"a dated snapshot is the same model",
			Request[struct{}, history.Message]{Model: "gpt-3.5-turbo-0125"}, m.Window - m.Output - margin, nil},
		{"an unknown name is an error, never a guess",
			Request[struct{}, history.Message]{Model: "no-such-model-anywhere"}, 0, models.ErrUnknownModel},
		{"a request that cannot be trimmed says why",
			Request[struct{}, history.Message]{Model: "gpt-3.5-turbo", Err: history.ErrNotOverflow}, 0, history.ErrNotOverflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Messages = turns(4)
			out, res, err := plain.NewTrimmer(struct{}{}, nil).Fit(context.Background(), tc.req)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || out != nil {
					t.Fatalf("err = %v, %d messages; want %v and none", err, len(out), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Budget != tc.wantBudget || len(out) != len(tc.req.Messages) {
				t.Errorf("budget %d, %d messages; want %d, %d", res.Budget, len(out), tc.wantBudget, len(tc.req.Messages))
			}
		})
	}
}

// TestFitOverheadAndObserve: the request's overhead, counted with the
// model's counter, is part of what the Result says was sent; Observe
// feeds the model's Calibration until it is warm, and then the margin
// goes.
func TestFitOverheadAndObserve(t *testing.T) {
	tr := plain.NewTrimmer(struct{}{}, nil)
	msgs := turns(4)
	var counted history.Counter
	req := Request[struct{}, history.Message]{Model: "gpt-4o", Messages: msgs,
		Overhead: func(c history.Counter) int { counted = c; return 500 }}
	_, bare, err := plain.NewTrimmer(struct{}{}, nil).Fit(context.Background(), Request[struct{}, history.Message]{Model: "gpt-4o", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := tr.Fit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if counted == nil || res.TokensAfter != bare.TokensAfter+500 {
		t.Errorf("sent %d with the overhead, %d without (counter %v): want 500 more", res.TokensAfter, bare.TokensAfter, counted)
	}
	m, _ := models.Lookup("gpt-4o")
	if v := tr.Observe(0); v != history.VerdictInvalid {
		t.Errorf("Observe(0) = %v, want VerdictInvalid", v)
	}
	// The provider counts 1.1 times: once warm, the budget is the window
	// less the output room in the provider's count (about /1.1), with no
	// margin.
	cal := tr.cals.For("gpt-4o")
	for i := 0; i < 20; i++ {
		if _, _, _, warm := cal.Model(); warm {
			break
		}
		if v := tr.Observe(res.TokensAfter * 11 / 10); v == history.VerdictInvalid {
			t.Fatalf("observation %d: %v", i, v)
		}
		if _, res, err = tr.Fit(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if _, res, err = tr.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	full, cold := float64(m.Window-m.Output)/1.1, float64(m.Window-m.Output-int(float64(m.Window)*history.MarginShare))/1.1
	if got := float64(res.Budget); got < full*0.99 || got > full || got <= cold {
		t.Errorf("budget %d once warm, want about %.0f (no margin; with it %.0f)", res.Budget, full, cold)
	}
}

// TestFitThenTrim: Trim after Fit trims with the Trimmer's own options
// (the door's are not kept), and RecoverOverflow after Fit recovers with
// the Fit's: its Result is that of the Fit's options (its overhead
// counted).
func TestFitThenTrim(t *testing.T) {
	tr := plain.NewTrimmer(struct{}{}, nil)
	msgs := turns(30)
	req := Request[struct{}, history.Message]{Model: "gpt-4o", Messages: msgs,
		Overhead: func(history.Counter) int { return 700 }}
	if _, _, err := tr.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	overflow := errors.New(`{"error":{"message":"This model's maximum context length is 1000 tokens. However, your messages resulted in 1400 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	_, rec, err := tr.RecoverOverflow(msgs, overflow, 1)
	if err != nil {
		t.Fatalf("RecoverOverflow after Fit: %v", err)
	}
	if rec.TokensAfter < 700 {
		t.Errorf("the recovery sent %d tokens: the Fit's overhead (700) is not counted", rec.TokensAfter)
	}
	_, res, err := tr.Trim(msgs, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	_, fresh, _ := plain.Trim(struct{}{}, msgs, 100_000, nil)
	if res.TokensAfter != fresh.TokensAfter {
		t.Errorf("Trim after Fit sent %d tokens, a fresh Trim %d: the door's options (overhead 700) stayed", res.TokensAfter, fresh.TokensAfter)
	}
}

// TestFitConversations: the door through two replicas' Conversations
// over one store, the calls alternating: each restores what the other
// saved under the door's options (none refused; before, a replica that
// had not fitted yet refused every state as saved under other options),
// sends what one Trimmer sends, and Observe feeds the model's Calibration
// the conversations share.
func TestFitConversations(t *testing.T) {
	store := &history.MemoryStateStore{}
	var states []string
	replicas := []*Conversations[struct{}, history.Message]{NewConversations(plain, struct{}{}, store, nil), NewConversations(plain, struct{}{}, store, nil)}
	for _, r := range replicas {
		r.OnState = func(_, state string) { states = append(states, state) }
	}
	one := plain.NewTrimmer(struct{}{}, nil)
	msgs := turns(2)
	for i := range 12 {
		msgs = append(msgs, history.Message{Role: history.RoleUser, Content: "more " + strings.Repeat("z", 30*i)})
		req := Request[struct{}, history.Message]{Model: "gpt-4o", Messages: msgs}
		got, res, err := FitModel[struct{}, history.Message](context.Background(), replicas[i%2], "k", req)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := one.Fit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("call %d: the replicas sent %d messages, one Trimmer %d", i, len(got), len(want))
		}
		if v := ObserveModel[struct{}, history.Message](replicas[i%2], "gpt-4o", res, res.TokensAfter+10); v == history.VerdictInvalid {
			t.Errorf("call %d: Observe = VerdictInvalid", i)
		}
	}
	for i, s := range states {
		if s == history.StateRefused {
			t.Errorf("call %d: the state was refused (%v)", i, states)
			break
		}
	}
	if _, _, _, warm := replicas[0].s.cals.For("gpt-4o").Model(); !warm {
		t.Error("the conversations' Calibration of the model learnt nothing")
	}
}

// TestDoorOptions: the options of a wrapper's door are the fit package's
// policy: the task preset (old tool results elided before whole turns
// go), and the low-water mark only for a stateful wrapper (a stateless
// trim of the whole transcript would lose context to it and save no
// rewrite); an unknown name is the typed error. The caller's options come
// after and override them.
func TestDoorOptions(t *testing.T) {
	msgs := []history.Message{{Role: history.RoleSystem, Content: "You are an agent."}}
	for i := range 30 {
		id := "c" + strings.Repeat("x", i+1)
		msgs = append(msgs,
			history.Message{Role: history.RoleUser, Content: "task " + strings.Repeat("word ", 20)},
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "read", Arguments: `{"path":"a.go"}`}}},
			history.Message{Role: history.RoleTool, ToolCallID: id, Content: strings.Repeat("result line of a file ", 150)},
			history.Message{Role: history.RoleAssistant, Content: "done " + strings.Repeat("word ", 20)})
	}
	const budget = 20_000
	for _, tc := range []struct {
		name      string
		stateful  bool
		caller    []history.Option
		wantElide bool    // the trim elided results
		maxShare  float64 // the most of the budget the trim keeps
		minShare  float64 // the least
	}{
		{"stateless: the task preset, no low-water mark", false, nil, true, 1, 0.9},
		{"stateful: the task preset and the low-water mark", true, nil, true, fit.DefaultLowWater, 0},
		{"the caller's options override the door's", false,
			[]history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1000})}, false, 1, 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			door, err := DoorOptions("gemini-2.5-flash", tc.stateful)
			if err != nil {
				t.Fatal(err)
			}
			var ev history.Event
			opts := append(append(door, tc.caller...), history.WithOnTrim(func(e history.Event) { ev = e }))
			res, err := history.TrimToRecentTurns(msgs, budget, opts...)
			if err != nil {
				t.Fatal(err)
			}
			share := float64(res.TokensAfter) / budget
			if (ev.ElidedResults > 0) != tc.wantElide || share > tc.maxShare || share < tc.minShare {
				t.Errorf("the trim elided %d results and kept %.2f of the budget; want elision %v, a share in [%.2f, %.2f]",
					ev.ElidedResults, share, tc.wantElide, tc.minShare, tc.maxShare)
			}
		})
	}
	if _, err := DoorOptions("no-such-model-anywhere", false); !errors.Is(err, models.ErrUnknownModel) {
		t.Errorf("an unknown name: %v, want models.ErrUnknownModel", err)
	}
}

// TestCalibrationsBounded: a Calibrations holds one Calibration per model,
// the same one for every call naming it, and at most maxLimits of them.
func TestCalibrationsBounded(t *testing.T) {
	var cs Calibrations
	a := cs.For("a")
	if cs.For("a") != a || cs.For("b") == a {
		t.Fatal("For does not keep one Calibration per model")
	}
	for i := range 2 * maxLimits {
		cs.For(strings.Repeat("m", i+1))
	}
	if n := len(cs.m); n > maxLimits {
		t.Errorf("%d models held, want at most %d", n, maxLimits)
	}
}
