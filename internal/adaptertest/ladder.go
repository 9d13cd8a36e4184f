package adaptertest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/histrim/history"
)

// Adapter describes an SDK adapter to the drivers of this package, for
// conversations of type C: the native message slice, or a struct holding
// it together with a system prompt the adapter takes separately. C must
// encode to JSON whole (exported fields), since the drivers compare
// conversations by their JSON.
//
// Trim, ToHistory, Validate and Agent are required; the rest is optional.
type Adapter[C any] struct {
	// Trim is the adapter's Trim.
	Trim func(c C, budget int, opts ...history.Option) (C, history.Result, error)
	// ToHistory converts c as the core counts it: the adapter's ToHistory,
	// with the separate system prompt, if any, as the first message.
	ToHistory func(c C) ([]history.Message, error)
	// Validate is the adapter's Validate.
	Validate func(c C) error
	// Unsendable, when set, reports whether out, which fails Validate, is
	// what the adapter documents for in, an input no trim can make
	// sendable (Gemini: contents without a user message of a person, which
	// the sweep leaves without any); the drivers then check the rest of
	// the trim.
	Unsendable func(in, out C) bool

	// Agent builds an agent conversation from seed bytes: tasks followed
	// by many tool steps, in every form a tool result takes in the SDK.
	// The ladder sweep and the fuzz target use it.
	Agent func(data []byte) C
	// More are further generators the ladder sweep runs (the adapter's
	// property-test generators, for example).
	More []func(data []byte) C
	// Notices is the fourth option set of the ladder, the one that shows
	// how the adapter renders configured notices (roles, names); nil
	// stands for a system-role turn notice and a user-role step notice
	// under step trimming.
	Notices []history.Option

	// Exact says that the native output converts back to exactly
	// Result.TokensAfter; otherwise to at most that.
	Exact bool
	// OneForOne says that each native message converts to one history
	// message, so that the output and Result.Messages correspond element
	// for element: each notice is then checked at its position.
	OneForOne bool
	// ElidedAsPart says that an elided result reads back as one text part
	// holding the placeholder, not as its content.
	ElidedAsPart bool
	// PositionalIDs says that tool call IDs are derived from positions
	// (an SDK whose IDs are optional), so they change when earlier
	// messages are dropped: they are not compared, and placeholders name
	// the tool instead.
	PositionalIDs bool
	// ClearArguments says that the adapter rebuilds the calls whose
	// arguments the core cleared (history.ElideOptions.ClearArguments):
	// the ladder then trims with a fifth option set that clears them, and
	// compares every call of the output with Result.Messages'.
	ClearArguments bool
	// Check, when set, checks what is specific to the adapter on each
	// ladder trim: in was trimmed to out, with res.
	Check func(t *testing.T, in, out C, res history.Result)

	// Start, Task and Step grow the conversation of the repeated-trim
	// driver: Start returns one holding only a system prompt, Task appends
	// a user message with the text given, Step appends an assistant
	// message calling one tool with the ID given and the tool's result.
	// Each returns a new conversation, leaving its argument's messages
	// as they are.
	Start func() C
	Task  func(c C, text string) C
	Step  func(c C, id, output string) C
	// Len returns the number of native messages of c.
	Len func(c C) int
	// Store, when set, is how the runtime stores each trimmed output
	// before the next round of the repeated-trim driver (dropping what a
	// store does not keep).
	Store func(c C) C
	// RepeatSets are option sets the repeated-trim driver runs beside
	// RepeatOptions.
	RepeatSets [][]history.Option
}

// ClearedPrefix begins the arguments of a call the core cleared
// (history.ElideOptions.ClearArguments).
const ClearedPrefix = `{"elided":"[arguments elided: `

// LadderSeeds are the fixed seeds of the ladder sweep and the fuzz target.
var LadderSeeds = [][]byte{
	{0, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 2, 3},
	{0, 2, 8, 7, 2, 0, 11, 12, 13, 14, 15, 22, 7},
	{9, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 17, 26, 35, 44},
	{0, 1, 2, 3, 9, 0, 20, 29, 38, 47, 56, 65, 74, 83, 88},
}

// LadderOptions returns the option sets the ladder trims with: elision of
// every result with step trimming, elision of large results with step
// trimming, elision with a placeholder of its own, and a.Notices; with
// a.ClearArguments, a fifth: elision of every result, clearing the
// arguments of their calls from 8 tokens, with step trimming.
func (a *Adapter[C]) LadderOptions() [][]history.Option {
	notices := a.Notices
	if notices == nil {
		notices = []history.Option{history.WithStepTrim(),
			history.WithBreadcrumb(history.Message{Role: history.RoleSystem, Content: "[context trimmed]"}),
			history.WithStepBreadcrumb(history.Message{Role: history.RoleUser, Content: "[steps trimmed]"})}
	}
	sets := [][]history.Option{
		{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1}), history.WithStepTrim()},
		{history.WithElision(history.ElideOptions{MinTokens: 20}), history.WithStepTrim()},
		{history.WithElision(history.ElideOptions{MinTokens: -1, Placeholder: a.placeholder})},
		notices,
	}
	if a.ClearArguments {
		sets = append(sets, []history.Option{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, ClearArguments: 8}), history.WithStepTrim()})
	}
	return sets
}

// placeholder names the elided result by its call ID, or by its tool when
// IDs are positional, in quotes and with a line break, so that the native
// output must carry its exact text.
func (a *Adapter[C]) placeholder(m history.Message, _ int) string {
	key := m.ToolCallID
	if a.PositionalIDs {
		key = m.Name
	}
	return "[gone: " + strconv.Quote(key) + "]\n"
}

// Ladder trims the conversations a.Agent and a.More build from
// Seeds(LadderSeeds, 12) with each of a.LadderOptions at budgets from 1 to
// above their size, and checks each trim with CheckLadder; with
// a.ClearArguments, some output must send calls with their arguments
// cleared.
func (a *Adapter[C]) Ladder(t *testing.T) {
	t.Helper()
	var cleared atomic.Int64 // calls sent with their arguments cleared
	defer func() {
		if n := cleared.Load(); a.ClearArguments {
			t.Logf("%d calls sent with their arguments cleared", n)
			if n == 0 {
				t.Error("no trim of the ladder cleared arguments")
			}
		}
	}()
	gens := append([]func([]byte) C{a.Agent}, a.More...)
	derived := 12
	if race.Enabled {
		derived = 2 // the plain run sweeps all; see Budgets
	}
	for _, seed := range Seeds(LadderSeeds, derived) {
		for _, gen := range gens {
			in := gen(seed)
			before := JSON(t, in) // once for the sweep's trims of in
			Sweep(t, seed, a.Tokens(t, in), a.LadderOptions(), func(t *testing.T, budget int, opts []history.Option) {
				a.checkLadder(t, in, before, budget, &cleared, opts...)
			})
		}
	}
}

// FuzzLadder is the fuzz target of the ladder: a.Agent's conversation for
// the fuzzer's bytes, trimmed at its budget with one of a.LadderOptions:
// the one o&7 selects among the first four, or with a.ClearArguments and
// o&8 set, the fifth (so that the inputs of the first four keep their
// meaning).
func (a *Adapter[C]) FuzzLadder(f *testing.F) {
	for _, s := range LadderSeeds {
		f.Add(s, uint16(300), uint8(0))
		if a.ClearArguments {
			f.Add(s, uint16(300), uint8(8))
		}
	}
	sets := a.LadderOptions()
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, o uint8) {
		set := sets[int(o)%4]
		if a.ClearArguments && o&8 != 0 {
			set = sets[4]
		}
		a.CheckLadder(t, a.Agent(data), int(budget)+1, set...)
	})
}

// Trimmed trims in at budget with opts and checks what every trim must
// keep true: no error other than history.ErrLatestTurnTooLarge, the input
// untouched, the output valid. It returns what Trim returned.
func (a *Adapter[C]) Trimmed(t *testing.T, in C, budget int, opts ...history.Option) (C, history.Result, error) {
	t.Helper()
	return a.trimmed(t, in, JSON(t, in), budget, opts...)
}

// trimmed is Trimmed with the input's JSON before the trim, before, which
// a sweep encodes once for all its trims of in.
func (a *Adapter[C]) trimmed(t *testing.T, in C, before string, budget int, opts ...history.Option) (C, history.Result, error) {
	t.Helper()
	out, res, err := a.Trim(in, budget, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		t.Fatalf("budget %d: %v", budget, err)
	}
	if JSON(t, in) != before {
		t.Fatalf("budget %d: Trim modified its input", budget)
	}
	if err := a.Validate(out); err != nil && (a.Unsendable == nil || !a.Unsendable(in, out)) {
		t.Fatalf("budget %d: output fails Validate: %v\n%s", budget, err, JSON(t, out))
	}
	return out, res, err
}

// Tokens returns the size of c, as the core counts its conversion.
func (a *Adapter[C]) Tokens(t *testing.T, c C) int {
	t.Helper()
	hist, err := a.ToHistory(c)
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(hist, nil)
}

// CheckLadder trims in at budget with opts and checks what the degradation
// ladder must keep true through an adapter: the output is valid, counts as
// the core's Result does (so it fits whenever the Result does), holds every
// tool result the core kept as the core kept it (an elided one as its
// placeholder), shows each notice at its position (one-for-one adapters),
// leaves the input untouched, and is left alone by a second trim; then
// a.Check, if set.
func (a *Adapter[C]) CheckLadder(t *testing.T, in C, budget int, opts ...history.Option) {
	t.Helper()
	a.checkLadder(t, in, JSON(t, in), budget, nil, opts...)
}

// checkLadder is CheckLadder with the input's JSON before the trim
// (before), counting in cleared, when not nil, the calls the output sends
// with their arguments cleared.
func (a *Adapter[C]) checkLadder(t *testing.T, in C, before string, budget int, cleared *atomic.Int64, opts ...history.Option) {
	t.Helper()
	out, res, err := a.trimmed(t, in, before, budget, opts...)
	back, err2 := a.ToHistory(out)
	if err2 != nil {
		t.Fatalf("budget %d: output does not convert: %v", budget, err2)
	}
	if got := history.Estimate(back, nil); got > res.TokensAfter || (a.Exact && got != res.TokensAfter) {
		t.Fatalf("budget %d: native output counts %d, core counted %d", budget, got, res.TokensAfter)
	}
	if err == nil && res.TokensAfter > budget {
		t.Fatalf("budget %d: no error but %d tokens", budget, res.TokensAfter)
	}
	if a.OneForOne {
		checkNotices(t, budget, back, res)
	}
	if msg := a.compareResults(back, res); msg != "" {
		t.Fatalf("budget %d: %s", budget, msg)
	}
	if a.ClearArguments {
		if msg := a.compareCalls(back, res); msg != "" {
			t.Fatalf("budget %d: %s", budget, msg)
		}
		for _, m := range back {
			for _, c := range m.ToolCalls {
				if cleared != nil && strings.HasPrefix(c.Arguments, ClearedPrefix) {
					cleared.Add(1)
				}
			}
		}
	}
	if err == nil {
		again, _, err := a.Trim(out, budget, opts...)
		if err != nil || JSON(t, again) != JSON(t, out) {
			t.Fatalf("budget %d: trimming the output again changed it (%v)", budget, err)
		}
	}
	if a.Check != nil {
		a.Check(t, in, out, res)
	}
}

// checkNotices checks, for a one-for-one adapter, that back (the converted
// output) holds each notice the core inserted at its position, with its
// role, content and name.
func checkNotices(t *testing.T, budget int, back []history.Message, res history.Result) {
	t.Helper()
	if len(back) != len(res.Messages) {
		t.Fatalf("budget %d: %d native messages, Result has %d", budget, len(back), len(res.Messages))
	}
	for j, k := range res.Kept {
		m := &res.Messages[j]
		if k < 0 && (back[j].Role != m.Role || back[j].Content != m.Content || back[j].Name != m.Name) {
			t.Fatalf("budget %d: notice %d reads %+v, core inserted %+v", budget, j, back[j], *m)
		}
	}
}

// compareResults compares the tool results of back, the converted output,
// with those of res.Messages, in order, and returns what differs, or "":
// their number, and each result's call ID (unless positional), name,
// content and parts, an elided one read as the adapter renders its
// placeholder; and the count of elided results against res.ElidedResults.
func (a *Adapter[C]) compareResults(back []history.Message, res history.Result) string {
	got, want := ToolResults(back), ToolResults(res.Messages)
	if len(got) != len(want) {
		return fmt.Sprintf("%d tool results in the output, core kept %d", len(got), len(want))
	}
	elided := 0
	for i := range want {
		g, w := got[i], want[i]
		if w.Kind == history.KindElided {
			elided++
			if a.ElidedAsPart {
				w.Parts, w.Content = []history.Part{{Type: history.PartText, Text: w.Content}}, ""
			}
		}
		if (!a.PositionalIDs && g.ToolCallID != w.ToolCallID) || g.Name != w.Name || g.Content != w.Content || !slices.Equal(g.Parts, w.Parts) {
			return fmt.Sprintf("result %d reads %+v, core kept %+v", i, g, w)
		}
	}
	if elided != res.ElidedResults {
		return fmt.Sprintf("%d elided results in the output, Result says %d", elided, res.ElidedResults)
	}
	return ""
}

// compareCalls is CompareCalls with the adapter's PositionalIDs.
func (a *Adapter[C]) compareCalls(back []history.Message, res history.Result) string {
	return CompareCalls(back, res, a.PositionalIDs)
}

// CompareCalls compares the tool calls of back, the converted output, with
// those of res.Messages, in order, and returns what differs, or "": their
// number, and each call's ID (unless positionalIDs), name and arguments,
// so that a call whose arguments the core cleared is sent cleared.
func CompareCalls(back []history.Message, res history.Result, positionalIDs bool) string {
	var got, want []history.ToolCall
	for _, m := range back {
		got = append(got, m.ToolCalls...)
	}
	for _, m := range res.Messages {
		want = append(want, m.ToolCalls...)
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d tool calls in the output, core kept %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if (!positionalIDs && g.ID != w.ID) || g.Name != w.Name || g.Arguments != w.Arguments {
			return fmt.Sprintf("call %d reads %+v, core kept %+v", i, g, w)
		}
	}
	return ""
}

// SentAsCounted checks that back, a trim's output as the adapter's
// ToHistory reads it back, counts exactly what the core counted
// (res.TokensAfter, with the default counter) and sends the calls the core
// kept, one for one (CompareCalls): a cleared call is sent cleared, and
// only then.
func SentAsCounted(t testing.TB, back []history.Message, res history.Result, positionalIDs bool) {
	t.Helper()
	if got := history.Estimate(back, nil); got != res.TokensAfter {
		t.Fatalf("the output counts %d, the core counted %d", got, res.TokensAfter)
	}
	if msg := CompareCalls(back, res, positionalIDs); msg != "" {
		t.Fatal(msg)
	}
}

// ToolResults returns the tool results (RoleTool messages) of hist, in
// order.
func ToolResults(hist []history.Message) []history.Message {
	var out []history.Message
	for _, m := range hist {
		if m.Role == history.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// CheckGenerators checks that a.Agent and a.More build what the drivers
// need, over Seeds(LadderSeeds, 12): conversations that convert, each
// generator's holding tool calls, tool results and more than one user
// message, and all of them together some pairing defect for the orphan
// sweep to repair.
func (a *Adapter[C]) CheckGenerators(t *testing.T) {
	t.Helper()
	orphans := 0
	for g, gen := range append([]func([]byte) C{a.Agent}, a.More...) {
		var calls, results, users int
		for _, seed := range Seeds(LadderSeeds, 12) {
			hist, err := a.ToHistory(gen(seed))
			if err != nil {
				t.Fatalf("generator %d, seed %v: %v", g, seed, err)
			}
			for _, m := range hist {
				calls += len(m.ToolCalls)
				switch {
				case m.Role == history.RoleTool:
					results++
				case m.Role == history.RoleUser && m.Kind == "":
					users++
				}
			}
			_, rep := history.SweepOrphans(hist)
			orphans += rep.Total()
		}
		if calls == 0 || results == 0 || users < 2 {
			t.Errorf("generator %d builds %d tool calls, %d results and %d user messages over the seeds; want some of each, and more than one user message", g, calls, results, users)
		}
	}
	if orphans == 0 {
		t.Error("no generator builds a pairing defect for the orphan sweep")
	}
}
