package history

import (
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/histrim/history/internal/race"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTurns(t *testing.T) {
	tests := []struct {
		name   string
		reason string
		in     []string
		want   []Turn
	}{
		{"empty", "no messages, no turns", nil, nil},
		{"only prefix", "the prefix is not a turn", []string{"S:s", "M:sum", "B"}, nil},
		{"two turns", "each user message opens a turn", []string{"S:s", "U:1", "A:a", "U:2", "A:b"}, []Turn{{1, 3}, {3, 5}}},
		{"leading assistant", "messages before the first user message join the first turn", []string{"S:s", "A:hi", "T:x", "U:1", "A:a", "U:2"}, []Turn{{1, 5}, {5, 6}}},
		{"specials do not open turns", "nudge, late breadcrumb and late summary stay in their turn", []string{"U:1", "N:n", "B", "M:m", "U:2"}, []Turn{{0, 4}, {4, 5}}},
		{"tool results stay", "a tool result never opens a turn", []string{"U:1", "A:>c", "T:c", "U:2"}, []Turn{{0, 3}, {3, 4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Turns(parse(t, tc.in...)), tc.reason)
		})
	}
}

func TestSweepOrphansReport(t *testing.T) {
	in := parse(t, "T:a", "U:q", "A:>c1,c2", "T:c1", "T:zz", "A:>c3", "A:ok")
	orig := clone(in)
	out, rep := SweepOrphans(in)
	assert.Equal(t, []string{"U:q", "A:>c1", "T:c1", "A:ok"}, render(out))
	assert.Equal(t, SweepReport{Results: 2, Calls: 2, Messages: 1}, rep)
	assert.Equal(t, 4, rep.Total())
	assert.Equal(t, orig, in, "input untouched, including the ToolCalls backing array")
}

func TestSweepOrphansCleanInputIsNotCopied(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector changes allocation counts")
	}
	in := parse(t, "U:q", "A:>c1,c2", "T:c2", "T:c1", "A:ok")
	allocs := testing.AllocsPerRun(50, func() { _, _ = SweepOrphans(in) })
	assert.Zero(t, allocs)
	out, rep := SweepOrphans(in)
	assert.Equal(t, SweepReport{}, rep)
	assert.Equal(t, len(out), cap(out), "clipped")
}

func TestSweepOrphansManyParallelCalls(t *testing.T) {
	// More calls than the exchange tracker holds inline.
	m := Message{Role: RoleAssistant}
	var msgs []Message
	for i := range 100 {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: "c" + strings.Repeat("x", i), Name: "f"})
	}
	msgs = append(msgs, Message{Role: RoleUser, Content: "q"}, m)
	for i := 99; i >= 1; i-- { // the first call stays unanswered
		msgs = append(msgs, Message{Role: RoleTool, ToolCallID: "c" + strings.Repeat("x", i)})
	}
	out, rep := SweepOrphans(msgs)
	assert.Equal(t, SweepReport{Calls: 1}, rep)
	assert.Len(t, out[1].ToolCalls, 99)
	assert.Len(t, msgs[1].ToolCalls, 100, "caller's message untouched")
}

func TestInsertBreadcrumb(t *testing.T) {
	tests := []struct {
		name, reason string
		in, want     []string
	}{
		{"after system", "lands after the system prefix", []string{"S:a", "S:b", "U:q"}, []string{"S:a", "S:b", "B", "U:q"}},
		{"after summaries", "pinned summaries stay before it", []string{"S:a", "M:sum", "U:q"}, []string{"S:a", "M:sum", "B", "U:q"}},
		{"replaces", "an existing leading breadcrumb is replaced, never stacked", []string{"S:a", "B:old", "B:older", "U:q"}, []string{"S:a", "B", "U:q"}},
		{"empty", "an empty history gets just the breadcrumb", nil, []string{"B"}},
		{"later breadcrumbs stay", "only the leading block is touched", []string{"U:q", "B:inside"}, []string{"B", "U:q", "B:inside"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := parse(t, tc.in...)
			orig := clone(in)
			got := InsertBreadcrumb(in, Message{Role: RoleUser, Content: BreadcrumbText})
			assert.Equal(t, tc.want, render(got), tc.reason)
			assert.Equal(t, orig, in)
		})
	}
}

func TestNormalizeSystem(t *testing.T) {
	in := parse(t, "U:q1", "S:one", "A:a", "S:two", "M:sum", "U:q2")
	orig := clone(in)
	got := NormalizeSystem(in)
	assert.Equal(t, []string{"S:one\n\ntwo", "U:q1", "A:a", "M:sum", "U:q2"}, render(got))
	assert.Equal(t, orig, in)
	plain := parse(t, "U:q")
	cp := NormalizeSystem(plain)
	assert.Equal(t, plain, cp)
	cp[0].Content = "changed"
	assert.Equal(t, "q", plain[0].Content, "a copy even when nothing merges")
}

func TestBudgetInput(t *testing.T) {
	tests := []struct {
		b    Budget
		want int
		why  string
	}{
		{Budget{}, 0, "zero value has no budget"},
		{Budget{Window: 128000, Output: 4096, Reserve: 2000}, 121904, "window minus output and reserve"},
		{Budget{Window: 128000, Output: 4096, Limit: 50000}, 50000, "operator cap wins when lower"},
		{Budget{Window: 8000, Limit: 50000}, 8000, "cap above the window changes nothing"},
		{Budget{Limit: 3000}, 3000, "no window: the cap"},
		{Budget{Window: 1000, Output: 2000}, 0, "never negative"},
		{Budget{Window: 1000, Output: -5, Reserve: -5}, 1000, "negative output and reserve count as zero"},
		{Budget{Window: 10, Output: math.MaxInt, Reserve: 12}, 0, "a huge output saturates at no input, never wraps to MaxInt"},
		{Budget{Window: 10, Output: 4, Reserve: math.MaxInt}, 0, "a huge reserve saturates at no input"},
		{Budget{Window: math.MaxInt, Output: math.MinInt, Reserve: math.MinInt}, math.MaxInt, "the most negative output and reserve count as zero"},
		{Budget{Window: math.MaxInt}, math.MaxInt, "a huge window is a huge budget"},
		{Budget{Window: 1000, Output: 2000, Limit: 500}, 0, "a limit never raises an exhausted window"},
		{Budget{Window: -1, Limit: math.MaxInt}, math.MaxInt, "no window: any limit, however large"},
		{Budget{Window: math.MinInt, Limit: math.MinInt}, 0, "nothing known: no budget"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.b.Input(), tc.why)
	}
}

func TestEventJSONAndLog(t *testing.T) {
	e := Event{Type: EventType, Reason: ReasonBudget, DroppedMessages: 4, DroppedTurns: 1, KeptTurns: 2,
		TokensBefore: 900, TokensAfter: 500, Budget: 600, Labels: map[string]string{"session_id": "s1", "agent": "a"}}
	b, err := json.Marshal(e)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"history_trimmed","reason":"budget","dropped_messages":4,"dropped_turns":1,"kept_turns":2,"dropped_steps":0,"elided_results":0,
		"orphans_removed":0,"dropped_instructions":0,"tokens_before":900,"tokens_after":500,"budget":600,"attempt":0,"labels":{"session_id":"s1","agent":"a"}}`, string(b))

	var sb strings.Builder
	l := slog.New(slog.NewTextHandler(&sb, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	LogTrims(l)(e)
	assert.Equal(t, "level=INFO msg=\"history trimmed\" trim.type=history_trimmed trim.reason=budget trim.dropped_messages=4 "+
		"trim.dropped_turns=1 trim.kept_turns=2 trim.dropped_steps=0 trim.elided_results=0 trim.orphans_removed=0 trim.dropped_instructions=0 trim.tokens_before=900 trim.tokens_after=500 trim.budget=600 trim.attempt=0 "+
		"trim.agent=a trim.session_id=s1\n", sb.String())
}

func TestApply(t *testing.T) {
	type native struct{ id string }
	in := parse(t, "S:sys", "U:q1", "A:a1", "U:q2", "A:a2")
	nat := []native{{"sys"}, {"q1"}, {"a1"}, {"q2"}, {"a2"}}
	res, err := TrimToRecentTurns(in, 40, WithCounter(unit))
	require.NoError(t, err)
	got := Apply(nat, res, func() native { return native{"crumb"} })
	assert.Equal(t, []native{{"sys"}, {"crumb"}, {"q2"}, {"a2"}}, got)
	assert.Equal(t, []native{{"sys"}, {"q2"}, {"a2"}}, Apply(nat, res, nil), "nil breadcrumb leaves it out")

	fits, err := TrimToRecentTurns(in, 1000, WithCounter(unit))
	require.NoError(t, err)
	same := Apply(nat, fits, nil)
	assert.Equal(t, nat, same)
	assert.Equal(t, len(same), cap(same), "clipped")
}

func TestPartTokens(t *testing.T) {
	tests := []struct {
		p    Part
		want int
		why  string
	}{
		{Part{Type: PartImage, Tokens: 42, Width: 4000, Height: 4000}, 42, "a known cost wins"},
		{Part{Type: PartImage, Detail: "low", Width: 4000, Height: 3000}, 85, "low detail is flat"},
		{Part{Type: PartImage}, 765, "unknown size: a 1024x1024 image"},
		{Part{Type: PartImage, Width: 1024, Height: 1024}, 765, "1024 square scales to 768: 4 tiles"},
		{Part{Type: PartImage, Width: 2048, Height: 4096}, 1105, "OpenAI's worked example: 768x1536, 6 tiles"},
		{Part{Type: PartImage, Width: 512, Height: 512}, 255, "one tile"},
		{Part{Type: PartImage, Width: 3840, Height: 2160}, 1105, "4K screenshot: 1365x768, 6 tiles"},
		{Part{Type: PartFile, Size: 4000, MIMEType: "text/plain"}, 1000, "text files by size/4"},
		{Part{Type: PartFile, Size: 3200, MIMEType: "application/pdf"}, 100, "binary files by size/32"},
		{Part{Type: PartFile}, 1000, "unknown file size"},
		{Part{Type: PartReasoning, Text: "abcdefg"}, EstimateText("abcdefg"), "reasoning counts as text"},
		{Part{Type: PartFile, Size: math.MaxInt64}, int(min(math.MaxInt64/32+1, math.MaxInt)), "a huge binary file is rounded up without overflow"},
		{Part{Type: PartFile, Size: math.MaxInt64, MIMEType: "text/plain"}, int(min(math.MaxInt64/4+1, math.MaxInt)), "a huge text file is rounded up without overflow"},
		{Part{Type: PartFile, Size: math.MaxInt64 - 2, MIMEType: "application/json"}, int(min(math.MaxInt64/4+1, math.MaxInt)), "size+3 would overflow: ceil computed by division"},
		{Part{Type: PartFile, Size: -1}, 1000, "negative size means unknown"},
		{Part{Type: PartFile, Size: math.MinInt64}, 1000, "the most negative size means unknown"},
		{Part{Type: PartImage, Tokens: math.MaxInt}, math.MaxInt, "a huge known cost is kept as given"},
		{Part{Type: PartImage, Tokens: -5, Width: 512, Height: 512}, 255, "a negative known cost means unknown"},
		{Part{Type: PartImage, Width: math.MaxInt, Height: math.MaxInt}, 765, "huge images scale down like any other"},
		{Part{Type: "video", Size: 1 << 30}, 0, "unknown types cost nothing"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, PartTokens(tc.p, nil), tc.why)
	}
	neg := func(string) int { return -10 }
	assert.Zero(t, PartTokens(Part{Type: PartText, Text: "x"}, neg), "a negative text count is treated as zero")
}

func TestBreadcrumbs(t *testing.T) {
	turn, step, on := Breadcrumbs()
	assert.Equal(t, Breadcrumb(), turn)
	assert.Equal(t, Message{Role: RoleUser, Content: StepBreadcrumbText, Kind: KindBreadcrumb}, step)
	assert.True(t, on)
	turn, step, on = Breadcrumbs(WithBreadcrumb(Message{Role: RoleSystem, Content: "[omis]"}), WithoutBreadcrumb())
	assert.Equal(t, Message{Role: RoleSystem, Content: "[omis]", Kind: KindBreadcrumb}, turn)
	assert.Equal(t, RoleSystem, step.Role, "the step notice takes the turn notice's role")
	assert.False(t, on)
}
