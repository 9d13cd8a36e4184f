package trpc

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

func text(s string) *string { return &s }

func TestToHistory(t *testing.T) {
	for _, tc := range []struct {
		in     model.Message
		want   history.Message
		reason string
	}{
		{model.NewSystemMessage("be brief"), history.Message{Role: history.RoleSystem, Content: "be brief"}, "system"},
		{model.Message{Role: model.RoleUser, Content: "look", ContentParts: []model.ContentPart{
			{Type: model.ContentTypeText, Text: text("here")},
			{Type: model.ContentTypeImage, Image: &model.Image{URL: "https://example.com/a.png", Detail: "low"}},
			{Type: model.ContentTypeFile, File: &model.File{Data: make([]byte, 300), MimeType: "application/pdf"}},
		}}, history.Message{Role: history.RoleUser, Content: "look", Parts: []history.Part{
			{Type: history.PartText, Text: "here"}, {Type: history.PartImage, Detail: "low"},
			{Type: history.PartFile, MIMEType: "application/pdf", Size: 300},
		}}, "user with text, image and file parts"},
		{model.Message{Role: model.RoleAssistant, Content: "ok", ReasoningContent: "think", ToolCalls: []model.ToolCall{
			{Type: "function", ID: "c1", Function: model.FunctionDefinitionParam{Name: "grep", Arguments: []byte(`{"q":1}`)}},
		}}, history.Message{Role: history.RoleAssistant, Content: "ok", Parts: []history.Part{{Type: history.PartReasoning, Text: "think"}},
			ToolCalls: []history.ToolCall{{ID: "c1", Name: "grep", Arguments: `{"q":1}`}}}, "assistant with reasoning and a call"},
		{model.Message{Role: model.RoleTool, ToolID: "c1", ToolName: "grep", Content: "out"},
			history.Message{Role: history.RoleTool, ToolCallID: "c1", Name: "grep", Content: "out"}, "tool result"},
	} {
		got, err := ToHistory([]model.Message{tc.in})
		if err != nil || !reflect.DeepEqual(got[0], tc.want) {
			t.Errorf("%s: got %+v, %v\nwant %+v", tc.reason, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in     model.Message
		reason string
	}{
		{model.Message{Role: "robot"}, "unknown role"},
		{model.Message{Role: model.RoleTool, Content: "x"}, "tool result without ToolID"},
		{model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{Function: model.FunctionDefinitionParam{Name: "f"}}}}, "call without id"},
		{model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a"}, {ID: "a"}}}, "two calls with one id"},
		{model.Message{Role: model.RoleUser, ToolCalls: []model.ToolCall{{ID: "a"}}}, "calls in a user message"},
	} {
		_, err := ToHistory([]model.Message{model.NewUserMessage("first"), tc.in})
		var me *MessageError
		if !errors.As(err, &me) || me.Index != 1 || !errors.Is(err, history.ErrInvalidMessage) || !strings.HasPrefix(err.Error(), "history/trpc: ") {
			t.Errorf("%s: %v", tc.reason, err)
		}
		out, serr := NewStrategy(Config{}).TailorMessages(context.Background(), []model.Message{model.NewUserMessage("first"), tc.in}, 1000)
		if !errors.As(serr, &me) || len(out) != 2 {
			t.Errorf("%s: TailorMessages: %v, %d messages", tc.reason, serr, len(out))
		}
	}
}

// gen is a deterministic conversation generator: a system prompt, then
// turns of a user message and steps of one or two calls with results of
// varied size (some empty), a few answered by nothing, with reasoning.
func gen(seed uint64, turns int) []model.Message {
	x := seed
	next := func(n int) int {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(n))
	}
	msgs := []model.Message{model.NewSystemMessage("You are an agent.")}
	for u := range turns {
		msgs = append(msgs, model.NewUserMessage("task "+strconv.Itoa(u)+strings.Repeat(" please", next(20))))
		for s := range next(4) {
			a := model.Message{Role: model.RoleAssistant}
			if next(3) == 0 {
				a.ReasoningContent = strings.Repeat("thinking ", next(30))
			}
			calls := 1 + next(2)
			for k := range calls {
				id := "c" + strconv.Itoa(u) + "_" + strconv.Itoa(s) + "_" + strconv.Itoa(k)
				a.ToolCalls = append(a.ToolCalls, model.ToolCall{Type: "function", ID: id,
					Function: model.FunctionDefinitionParam{Name: "read", Arguments: []byte(`{"path":"` + strings.Repeat("p", next(200)) + `"}`)}})
			}
			msgs = append(msgs, a)
			for k, c := range a.ToolCalls {
				if k == 1 && next(5) == 0 {
					continue // left unanswered
				}
				msgs = append(msgs, model.Message{Role: model.RoleTool, ToolID: c.ID, ToolName: "read", Content: strings.Repeat("word ", next(400))})
			}
		}
		if next(2) == 0 {
			msgs = append(msgs, model.NewAssistantMessage("done "+strconv.Itoa(u)))
		}
		if next(9) == 0 { // a result that answers nothing
			msgs = append(msgs, model.Message{Role: model.RoleTool, ToolID: "stray" + strconv.Itoa(u), Content: strings.Repeat("lost ", next(100))})
		}
	}
	return msgs
}

func deepCopy(t testing.TB, msgs []model.Message) []model.Message {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var out []model.Message
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// strategyConfigs are the option sets the equivalence is checked with;
// the last has a calibration whose budget is above the one asked for.
func strategyConfigs() []Config {
	cal := &history.Calibration{}
	cal.Observe(1000, 700) // a provider counting less than the library
	cal.Observe(2000, 1400)
	return []Config{
		{},
		{Elision: &history.ElideOptions{}},
		{Elision: &history.ElideOptions{MinTokens: -1, KeepRecent: 1, ClearArguments: 16}, StepTrim: true},
		{StepTrim: true, Options: []history.Option{history.WithLowWater(0.6)}},
		{Calibration: cal, Elision: &history.ElideOptions{}},
	}
}

// checkEquivalent checks that TailorMessages, reading the end of msgs,
// decides what a trim of the whole history decides, keeps every pair and
// leaves msgs untouched.
func checkEquivalent(t *testing.T, msgs []model.Message, cfg Config, budget int) {
	t.Helper()
	before := deepCopy(t, msgs)
	hist, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	s := NewStrategy(cfg)
	got, err := s.TailorMessages(context.Background(), msgs, budget)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatal(err)
	}
	// The whole history's trim, with what the Strategy trims with: its
	// Config's options, or under the door (Config.Model) the door's, to
	// the door's budget when it is the lower.
	c, perr := s.plan("", 0)
	if perr != nil {
		t.Fatal(perr)
	}
	whole := budget
	if c.door {
		whole = min(budget, c.budget)
	}
	res, werr := history.TrimToRecentTurns(hist, whole, c.opts...)
	if errors.Is(werr, history.ErrLatestTurnTooLarge) != errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Errorf("budget %d: errors %v and %v", budget, err, werr)
	}
	if want := apply(msgs, res); !reflect.DeepEqual(got, want) {
		t.Errorf("budget %d: %d messages, the whole history's trim %d", budget, len(got), len(want))
	}
	out, _ := ToHistory(got)
	if _, rep := history.SweepOrphans(out); rep.Total() != 0 {
		t.Errorf("budget %d: broken pairs %+v", budget, rep)
	}
	if !reflect.DeepEqual(deepCopy(t, msgs), before) {
		t.Fatal("TailorMessages modified its input")
	}
}

// TestStrategyReadsOnlyTheEnd: reading the end of a history decides what
// a trim of the whole history decides, whatever the options, budgets and
// calibration, with calls left unanswered and results answering nothing.
func TestStrategyReadsOnlyTheEnd(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ { // FuzzStrategy tries more

		msgs := gen(seed, 30)
		hist, _ := ToHistory(msgs)
		total := history.Estimate(hist, nil)
		for _, cfg := range strategyConfigs() {
			for _, budget := range []int{40, total / 20, total / 5, total / 2, total + 10} {
				checkEquivalent(t, msgs, cfg, budget)
			}
		}
	}
}

// TestStrategyDoorReadsOnlyTheEnd: under the door (Config.Model), where
// the task preset elides, clears arguments, trims steps and opens turns
// only at the messages history.UserWritten accepts, reading the end of a
// history decides what a trim of the whole history decides, with system
// reminders in the user role among the steps (which open no turn).
func TestStrategyDoorReadsOnlyTheEnd(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		msgs := withReminders(gen(seed, 30), 3)
		hist, _ := ToHistory(msgs)
		total := history.Estimate(hist, nil)
		for _, cfg := range []Config{
			{Model: "gpt-3.5-turbo"},
			{Model: "claude-sonnet-4-5", StepTrim: true},
			{Model: "gpt-4o", Elision: &history.ElideOptions{KeepRecent: 1}},
		} {
			for _, budget := range []int{40, total / 20, total / 5, total / 2, total + 10} {
				checkEquivalent(t, msgs, cfg, budget)
			}
		}
	}
}

// withReminders returns msgs with a system reminder in the user role
// after every nth tool result, as agent runtimes inject them.
func withReminders(msgs []model.Message, n int) []model.Message {
	var out []model.Message
	k := 0
	for _, m := range msgs {
		out = append(out, m)
		if m.Role == model.RoleTool {
			if k++; k%n == 0 {
				out = append(out, model.NewUserMessage("<system-reminder>The file changed on disk.</system-reminder>"))
			}
		}
	}
	return out
}

// TestStrategyOptionsCountOtherwise: elision, a counter or a calibration
// given in Config.Options, not in the fields the Strategy reads the
// history's end by, make the trim keep more than the read assumed it
// could: the Strategy then decides on the whole history, as the trim of
// the whole history does. It sent the stand-in for the unread messages
// back as the first of them (a tool result without its call, found by
// FuzzHostile).
func TestStrategyOptionsCountOtherwise(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		msgs := gen(seed, 30)
		hist, _ := ToHistory(msgs)
		total := history.Estimate(hist, nil)
		cal := &history.Calibration{}
		cal.Observe(1000, 500) // a provider counting half what the library does
		cal.Observe(2000, 1000)
		for _, opts := range [][]history.Option{
			{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1})},
			{history.WithCounter(history.CounterFunc(func(m history.Message) int { return len(m.Content) / 16 }))},
			{history.WithCalibration(cal)},
		} {
			for _, budget := range []int{40, total / 20, total / 5, total / 2} {
				checkEquivalent(t, msgs, Config{Options: opts}, budget)
			}
		}
	}
}

// FuzzStrategy is TestStrategyReadsOnlyTheEnd over any seed, length,
// budget and option set.
func FuzzStrategy(f *testing.F) {
	f.Add(uint64(1), 30, 2000, 0)
	f.Add(uint64(5), 30, 8298, 3)
	f.Add(uint64(9), 12, 40, 4)
	f.Fuzz(func(t *testing.T, seed uint64, turns, budget, cfg int) {
		turns = 1 + abs(turns)%60
		budget = 1 + abs(budget)%30000
		cfgs := append(strategyConfigs(), Config{Model: "gpt-3.5-turbo"})
		msgs := gen(seed|1, turns)
		if cfg < 0 {
			msgs = withReminders(msgs, 1+abs(cfg)%5)
		}
		checkEquivalent(t, msgs, cfgs[abs(cfg)%len(cfgs)], budget)
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1)
	}
	return n
}

// TestStrategyEvents: OnTrim sees the figures of the whole history
// (results that answered nothing before the part read count as dropped
// messages, not as orphans).
func TestStrategyEvents(t *testing.T) {
	msgs := gen(7, 40)
	hist, _ := ToHistory(msgs)
	var got history.Event
	s := NewStrategy(Config{OnTrim: func(e history.Event) { got = e }})
	if _, err := s.TailorMessages(context.Background(), msgs, 2000); err != nil {
		t.Fatal(err)
	}
	res, _ := history.TrimToRecentTurns(hist, 2000)
	if got.DroppedTurns != res.DroppedTurns || got.DroppedMessages < res.DroppedMessages ||
		got.KeptTurns != res.KeptTurns || got.TokensAfter != res.TokensAfter || got.TokensBefore != -1 {
		t.Errorf("event %+v, the whole history's Result dropped %d turns, %d messages, kept %d, %d tokens", got, res.DroppedTurns, res.DroppedMessages, res.KeptTurns, res.TokensAfter)
	}
}

// TestStrategyNotices: the notice is a user message after the system
// prompt, and trimming an output again replaces it instead of keeping it
// as a turn.
func TestStrategyNotices(t *testing.T) {
	s := NewStrategy(Config{})
	out, err := s.TailorMessages(context.Background(), gen(3, 30), 1500)
	if err != nil {
		t.Fatal(err)
	}
	if out[1].Role != model.RoleUser || out[1].Content != history.BreadcrumbText {
		t.Fatalf("output starts %+v", out[:2])
	}
	again, err := s.TailorMessages(context.Background(), append(out, gen(4, 3)[1:]...), 1200)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range again {
		if m.Content == history.BreadcrumbText {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d notices after a second trim", n)
	}
}

func TestCounter(t *testing.T) {
	msgs := gen(5, 3)
	c := NewCounter(nil)
	hist, _ := ToHistory(msgs)
	sum := 0
	for i := range msgs {
		n, err := c.CountTokens(context.Background(), msgs[i])
		if want := history.Heuristic().CountMessage(hist[i]); err != nil || n != want {
			t.Errorf("message %d: %d, %v; want %d", i, n, err, want)
		}
		sum += n
	}
	if n, err := c.CountTokensRange(context.Background(), msgs, 0, len(msgs)); err != nil || n != sum {
		t.Errorf("range: %d, %v; want %d", n, err, sum)
	}
	if _, err := c.CountTokensRange(context.Background(), msgs, 2, 1); err == nil {
		t.Error("an empty range is not an error")
	}
}
