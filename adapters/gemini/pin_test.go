package gemini

import (
	"errors"
	"slices"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/pins"
	"google.golang.org/genai"
)

// pinConv is a conversation whose contents convert to one message each,
// to several messages (responses beside text), or to a message with calls:
//
//	0 user task          -> message 0
//	1 model, two calls   -> message 1
//	2 user, two responses and a text part -> messages 2, 3 (nudge), 4
//	3 model text         -> message 5
//	4 user task          -> message 6
//	5 model text         -> message 7
func pinConv() []*genai.Content {
	return []*genai.Content{
		text("user", "remember: the answer is 42"),
		{Role: "model", Parts: []*genai.Part{call("a", "read", nil), call("", "grep", nil)}},
		{Role: "user", Parts: []*genai.Part{resp("a", "read", map[string]any{"output": "x"}), {Text: "note"}, resp("", "grep", map[string]any{"output": "y"})}},
		text("model", "read and grepped"),
		text("user", "next task"),
		text("model", "done"),
	}
}

// TestPinTranslation: pins given as indices into contents reach the core
// as indices into the converted request, past a system instruction and
// the contents that convert to several messages; a content that cannot be
// pinned is refused with a *history.OptionError naming it.
func TestPinTranslation(t *testing.T) {
	sys := text("", "be brief")
	notice := append([]*genai.Content{text("user", history.BreadcrumbText)}, pinConv()...)
	cases := []struct {
		name     string
		system   *genai.Content
		contents []*genai.Content
		opts     []history.Option
		want     []int  // pins the core receives; nil: opts unchanged
		reason   string // the OptionError's reason, when refused
	}{
		{name: "no pins", contents: pinConv(), opts: []history.Option{history.WithStepTrim()}},
		{name: "one for one before the split", contents: pinConv(), opts: []history.Option{history.WithPin(0)}, want: []int{0}},
		{name: "after the split", contents: pinConv(), opts: []history.Option{history.WithPin(3, 4, 5)}, want: []int{5, 6, 7}},
		{name: "after a system instruction", system: sys, contents: pinConv(), opts: []history.Option{history.WithPin(0, 3)}, want: []int{1, 6}},
		{name: "the later WithPin wins", contents: pinConv(), opts: []history.Option{history.WithPin(1), history.WithPin(4)}, want: []int{6}},
		{name: "duplicates", contents: pinConv(), opts: []history.Option{history.WithPin(4, 0, 4)}, want: []int{0, 6}},
		{name: "function calls", contents: pinConv(), opts: []history.Option{history.WithPin(0, 1)},
			reason: "content 1 has tool calls; it cannot be kept without their results"},
		{name: "function responses", system: sys, contents: pinConv(), opts: []history.Option{history.WithPin(2)},
			reason: "content 2 is a tool result; it cannot be kept without its call"},
		{name: "outside", contents: pinConv(), opts: []history.Option{history.WithPin(6)},
			reason: "index 6 is outside the history of 6 contents"},
		{name: "a notice", contents: notice, opts: []history.Option{history.WithPin(0)},
			reason: "content 0 is a notice, which a trim replaces"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := codec.Convert(tc.system, tc.contents, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			all := v.Hist
			opts, err := codec.TranslatePins(v, tc.opts)
			if tc.reason != "" {
				var oe *history.OptionError
				if !errors.As(err, &oe) || !errors.Is(err, history.ErrInvalidOption) || oe.Option != "WithPin" || oe.Reason != tc.reason {
					t.Fatalf("err = %v, want a WithPin *history.OptionError: %s", err, tc.reason)
				}
				// Trim and RecoverOverflow return it, with nothing else.
				out, res, err := Trim(tc.system, tc.contents, 1000, tc.opts...)
				if !errors.As(err, &oe) || oe.Reason != tc.reason || out != nil || res.Messages != nil {
					t.Fatalf("Trim = %d contents, %d messages, %v; want none and the OptionError", len(out), len(res.Messages), err)
				}
				out, _, err = RecoverOverflow(tc.system, tc.contents, overflowErr(100, 50), 1, tc.opts...)
				if !errors.As(err, &oe) || oe.Reason != tc.reason || out != nil {
					t.Fatalf("RecoverOverflow = %d contents, %v; want none and the OptionError", len(out), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if len(opts) != len(tc.opts) {
					t.Fatalf("%d options, want the caller's %d", len(opts), len(tc.opts))
				}
				return
			}
			if got := pins.Read(opts); !slices.Equal(got, tc.want) {
				t.Fatalf("the core is given pins %v, want %v", got, tc.want)
			}
			for _, j := range tc.want {
				if m := all[j]; m.Role == history.RoleTool || len(m.ToolCalls) > 0 || m.Kind != "" {
					t.Fatalf("pin %d names %+v", j, m)
				}
			}
		})
	}
}

// TestPinSurvivesEveryBudget: a pinned content (a user task, a model note)
// is in the output, as the caller's very pointer, at every budget of the
// ladder's option sets and through RecoverOverflow, and the output stays
// valid.
func TestPinSurvivesEveryBudget(t *testing.T) {
	for _, seed := range adaptertest.Seeds(adaptertest.LadderSeeds, 6) {
		for _, sys := range []*genai.Content{nil, text("", "You are an agent.")} {
			contents := genAgent(seed)
			pinned := pinnable(contents)
			if len(pinned) < 2 {
				continue
			}
			// The first pinnable content and one from the middle.
			pinned = []int{pinned[0], pinned[len(pinned)/2]}
			in := request{sys, contents}
			base := []history.Option{history.WithPin(pinned...)}
			sets := adapter.LadderOptions()
			for i := range sets {
				sets[i] = append(slices.Clone(base), sets[i]...)
			}
			adaptertest.Sweep(t, seed, adapter.Tokens(t, in), sets, func(t *testing.T, budget int, opts []history.Option) {
				out, res, err := adapter.Trimmed(t, in, budget, opts...)
				for _, i := range pinned {
					if !slices.Contains(out.Contents, contents[i]) {
						t.Fatalf("budget %d: pinned content %d is not in the output (%d dropped turns, err %v)", budget, i, res.DroppedTurns, err)
					}
				}
				if err != nil || res.DroppedTurns == 0 {
					return
				}
				// The request was rejected anyway: recovery keeps the pins
				// too, given as indices into what was sent.
				var sent []int
				for _, i := range pinned {
					sent = append(sent, slices.Index(out.Contents, contents[i]))
				}
				opts = append(slices.Clone(opts), history.WithPin(sent...))
				rec, _, err := RecoverOverflow(sys, out.Contents, overflowErr(2*res.TokensAfter, res.TokensAfter), 2, opts...)
				if err != nil && !errors.Is(err, history.ErrCannotRecover) {
					t.Fatalf("budget %d: RecoverOverflow: %v", budget, err)
				}
				if err := Validate(rec); err != nil {
					t.Fatalf("budget %d: recovered output fails Validate: %v", budget, err)
				}
				for _, i := range pinned {
					if !slices.Contains(rec, contents[i]) {
						t.Fatalf("budget %d: pinned content %d is not in the recovered output", budget, i)
					}
				}
			})
		}
	}
}

// pinnable returns the indices of the contents that convert to one
// message of no kind without calls or responses.
func pinnable(contents []*genai.Content) []int {
	var out []int
	for i, c := range contents {
		msgs, err := ToHistory([]*genai.Content{c})
		if err == nil && len(msgs) == 1 && msgs[0].Kind == "" && len(msgs[0].ToolCalls) == 0 && msgs[0].Role != history.RoleTool {
			out = append(out, i)
		}
	}
	return out
}
