package notice

import (
	"slices"
	"testing"

	"github.com/histrim/history"
)

// plain reads a notice back as a message of its role holding its text, as
// an adapter that renders it as a plain-text message of its role does.
func plain(b history.Message) []history.Message {
	return []history.Message{{Role: b.Role, Content: b.Content, Name: b.Name}}
}

// asUserPart reads a notice back as a user message holding its text as one
// text part, as an adapter without system or named messages does.
func asUserPart(b history.Message) []history.Message {
	return []history.Message{{Role: history.RoleUser, Parts: []history.Part{{Type: history.PartText, Text: b.Content}}}}
}

func TestMark(t *testing.T) {
	var (
		sys     = history.Message{Role: history.RoleSystem, Content: "sys"}
		summary = history.Message{Role: history.RoleUser, Content: "summary", Kind: history.KindSummary}
		task    = history.Message{Role: history.RoleUser, Content: "task"}
		call    = history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: "a"}}}
		result  = history.Message{Role: history.RoleTool, ToolCallID: "a", Content: "r"}
		turn    = history.Message{Role: history.RoleUser, Content: history.BreadcrumbText}
		step    = history.Message{Role: history.RoleUser, Content: history.StepBreadcrumbText}
		custom  = history.Message{Role: history.RoleSystem, Content: "[trimmed]", Name: "trimmer"}
		turnOpt = []history.Option{history.WithBreadcrumb(custom)}
	)
	with := func(m history.Message, f func(*history.Message)) history.Message { f(&m); return m }
	tests := []struct {
		name     string
		hist     []history.Message
		opts     []history.Option
		read     ReadFunc
		eligible func(int) bool
		want     []int // indices marked as notices
		reason   string
	}{
		{"default turn notice after system", []history.Message{sys, turn, task}, nil, plain, nil, []int{1},
			"a trim puts the turn notice right after the leading system messages"},
		{"turn notice after summary", []history.Message{sys, summary, turn, task}, nil, plain, nil, []int{2},
			"pinned summaries belong to the leading block, as in the core"},
		{"turn notice after a compaction", []history.Message{{Role: history.RoleAssistant, Kind: history.KindCompaction}, turn, task}, nil, plain, nil, []int{1},
			"a provider's compaction opens the prefix and a trim puts the notice after it (issue 33: unrecognised, it was a turn a recovery dropped for a new notice)"},
		{"turn notice first", []history.Message{turn, task}, nil, plain, nil, []int{0},
			"a history without a system prompt starts with the notice"},
		{"late turn text", []history.Message{sys, task, turn}, nil, plain, nil, nil,
			"outside the leading block the turn notice's text is an ordinary message"},
		{"step notice anywhere", []history.Message{sys, turn, task, step, call, result, task, step}, nil, plain, nil, []int{1, 3, 7},
			"later turns leave a step notice behind, so it is recognised wherever it stands"},
		{"configured and default", []history.Message{sys, with(custom, func(m *history.Message) {}), turn, task}, turnOpt, plain, nil, []int{1, 2},
			"the notices of opts and the defaults are both recognised"},
		{"configured name must match", []history.Message{sys, with(custom, func(m *history.Message) { m.Name = "" }), task}, turnOpt, plain, nil, nil,
			"a message reads as a notice only with the notice's name too"},
		{"default step in the configured turn role", []history.Message{sys, task, with(step, func(m *history.Message) { m.Role = history.RoleSystem })}, turnOpt, plain, nil, []int{2},
			"the default step notice takes the role of the configured turn notice"},
		{"kind kept", []history.Message{sys, with(turn, func(m *history.Message) { m.Kind = history.KindNudge }), task}, nil, plain, nil, nil,
			"a message that already has a kind is left alone"},
		{"parts must match", []history.Message{asUserPart(turn)[0], task, with(turn, func(m *history.Message) { m.Parts = []history.Part{{Type: history.PartText, Text: "x"}} })}, nil, asUserPart, nil, []int{0},
			"the rendered form is compared whole, parts included"},
		{"not eligible", []history.Message{sys, turn, task, step}, nil, plain, func(i int) bool { return i != 1 }, []int{3},
			"eligible limits the marking"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hist := slices.Clone(tc.hist)
			Mark(hist, tc.opts, tc.read, tc.eligible)
			var got []int
			for i := range hist {
				if hist[i].Kind == history.KindBreadcrumb && tc.hist[i].Kind != history.KindBreadcrumb {
					got = append(got, i)
				}
				if hist[i].Kind != tc.hist[i].Kind && hist[i].Kind != history.KindBreadcrumb {
					t.Errorf("message %d: kind %q became %q", i, tc.hist[i].Kind, hist[i].Kind)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("marked %v, want %v: %s", got, tc.want, tc.reason)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	form := history.Message{Role: history.RoleUser, Content: "n", Name: "x", Parts: []history.Part{{Type: history.PartText, Text: "p"}}}
	tests := []struct {
		name   string
		change func(*history.Message)
		want   bool
		reason string
	}{
		{"same", func(*history.Message) {}, true, "role, content, name and parts equal"},
		{"kind ignored", func(m *history.Message) { m.Kind = history.KindBreadcrumb }, true, "kinds are not compared"},
		{"role", func(m *history.Message) { m.Role = history.RoleAssistant }, false, "another role"},
		{"content", func(m *history.Message) { m.Content = "m" }, false, "another text"},
		{"name", func(m *history.Message) { m.Name = "" }, false, "another name"},
		{"parts", func(m *history.Message) { m.Parts = nil }, false, "other parts"},
		{"tool call", func(m *history.Message) { m.ToolCalls = []history.ToolCall{{ID: "a"}} }, false, "a notice never calls a tool"},
		{"tool call id", func(m *history.Message) { m.ToolCallID = "a" }, false, "a notice never answers a call"},
	}
	for _, tc := range tests {
		m := form
		tc.change(&m)
		if got := Matches(&m, []history.Message{{Role: history.RoleSystem}, form}); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
	if Matches(&form, nil) {
		t.Error("a message matches no form of an empty list")
	}
}
