package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/histrim/history/models"
	"github.com/histrim/history/wire"
)

// TestMetricsFromEvents: each event of the trimming transport moves the
// counters it stands for, and only those.
func TestMetricsFromEvents(t *testing.T) {
	cases := []struct {
		why  string
		ev   wire.Event
		want map[metricDef]uint64
	}{
		{"a trimmed request counts a trim and both token counts",
			wire.Event{Kind: wire.EventRequest, API: wire.ChatCompletions, Trimmed: true, TokensBefore: 20_000, TokensAfter: 12_000},
			map[metricDef]uint64{mTrims: 1, mTokensBefore: 20_000, mTokensAfter: 12_000}},
		{"a request sent as it came counts its tokens, no trim",
			wire.Event{Kind: wire.EventRequest, API: wire.ChatCompletions, TokensBefore: 900, TokensAfter: 900},
			map[metricDef]uint64{mTokensBefore: 900, mTokensAfter: 900}},
		{"a trim that did not count what it dropped counts no tokens before",
			wire.Event{Kind: wire.EventRequest, API: wire.ChatCompletions, Trimmed: true, TokensBefore: -1, TokensAfter: 5_000},
			map[metricDef]uint64{mTrims: 1, mTokensAfter: 5_000}},
		{"an overflow recovered twice",
			wire.Event{Kind: wire.EventRequest, API: wire.ChatCompletions, Trimmed: true, TokensBefore: 10, TokensAfter: 8, Overflows: 2, Recovered: 2},
			map[metricDef]uint64{mTrims: 1, mTokensBefore: 10, mTokensAfter: 8, mRecovered: 2}},
		{"an unknown model is forwarded and counted as such",
			wire.Event{Kind: wire.EventRequest, API: wire.ChatCompletions, Forwarded: true, Err: fmt.Errorf("lookup: %w", models.ErrUnknownModel)},
			map[metricDef]uint64{mUnknownModels: 1}},
		{"a body that does not parse is forwarded, counted nowhere but the requests",
			wire.Event{Kind: wire.EventRequest, API: wire.ChatCompletions, Forwarded: true, Err: errors.New("bad json")},
			map[metricDef]uint64{}},
		{"a stream whose hold ran out of time, its overflow before that recovered",
			wire.Event{Kind: wire.EventRequest, API: wire.Responses, Trimmed: true, TokensBefore: 10, TokensAfter: 8, Overflows: 1, StreamOverflows: 1, Recovered: 1, HoldExpired: true},
			map[metricDef]uint64{mTrims: 1, mTokensBefore: 10, mTokensAfter: 8, mRecovered: 1, mHoldsExpired: 1}},
		{"a silent truncation",
			wire.Event{Kind: wire.EventTruncation, API: wire.ChatCompletions, Truncated: true, TokensAfter: 30_000, Reported: 4_096},
			map[metricDef]uint64{mTruncations: 1}},
	}
	for _, c := range cases {
		m := newMetrics()
		m.event(c.ev)
		for _, d := range allMetrics {
			if got := m.total(d); got != c.want[d] {
				t.Errorf("%s: %s = %d, want %d", c.why, d.name, got, c.want[d])
			}
		}
	}
	m := newMetrics()
	m.event(wire.Event{Kind: wire.EventRequest, API: wire.Responses, HoldExpired: true})
	if got := m.v[mHoldsExpired.name][`api="responses"`]; got != 1 {
		t.Errorf("a Responses stream's expired hold is labelled %v, want api=\"responses\"", m.v[mHoldsExpired.name])
	}
	m = newMetrics()
	m.event(wire.Event{Kind: wire.EventRequest, API: wire.ChatCompletions, Trimmed: true})
	if got := m.v[mTrims.name][`api="chat"`]; got != 1 {
		t.Errorf("a chat request's trim is labelled %v, want api=\"chat\"", m.v[mTrims.name])
	}
}

// TestMetricsSaturate: a counter stops at the largest value rather than
// wrapping around.
func TestMetricsSaturate(t *testing.T) {
	m := newMetrics()
	m.add(mTokensBefore, apiChat, ^uint64(0)-1)
	m.add(mTokensBefore, apiChat, 5)
	if got := m.total(mTokensBefore); got != ^uint64(0) {
		t.Errorf("counter = %d, want %d", got, ^uint64(0))
	}
}

// TestMetricsDocumented: docs/gateway.md names every metric /metrics
// writes.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "gateway.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range allMetrics {
		if !strings.Contains(string(doc), "`"+d.name) {
			t.Errorf("docs/gateway.md does not name %s", d.name)
		}
	}
}
