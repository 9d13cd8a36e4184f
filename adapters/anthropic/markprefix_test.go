package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
)

// TestMarkPrefix: after a trim that dropped turns, MarkPrefix puts a
// breakpoint on the notice (the end of the new prefix), keeps the
// request at four breakpoints by taking the oldest others off, leaves the
// input alone, and adds nothing when no notice was inserted.
func TestMarkPrefix(t *testing.T) {
	system := []anthropic.TextBlockParam{{Text: "sys", CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	var msgs []anthropic.MessageParam
	for i := range 8 {
		msgs = append(msgs, user(cached(text("task "+strings.Repeat("w ", 200)))), assistant(text("answer "+string(rune('a'+i)))))
	}
	out, res, err := Trim(system, msgs, 500)
	if err != nil || res.DroppedTurns == 0 {
		t.Fatalf("%v, %d turns dropped", err, res.DroppedTurns)
	}
	before, _ := json.Marshal(out)
	marked := MarkPrefix(system, out)
	raw, _ := json.Marshal(marked)
	if string(before) == string(raw) {
		t.Fatal("no breakpoint placed")
	}
	if after, _ := json.Marshal(out); string(after) != string(before) {
		t.Fatal("the trim's output was modified")
	}
	var first struct {
		Content []struct {
			Text  string          `json:"text"`
			Cache json.RawMessage `json:"cache_control"`
		}
	}
	_ = json.Unmarshal(mustMarshal(marked[0]), &first)
	if first.Content[0].Text != history.Breadcrumb().Content || len(first.Content[0].Cache) == 0 {
		t.Fatalf("the notice carries no breakpoint: %s", mustMarshal(marked[0]))
	}
	if n := breakpoints(system, marked); n != 4 {
		t.Fatalf("%d breakpoints, want 4", n)
	}
	again := MarkPrefix(system, marked)
	if string(mustMarshal(again)) != string(raw) {
		t.Fatal("MarkPrefix is not idempotent")
	}
	whole, _, _ := Trim(system, msgs[:2], 100_000)
	if got := MarkPrefix(system, whole); &got[0] != &whole[0] {
		t.Fatal("a breakpoint placed with no notice")
	}
}

func mustMarshal(v any) []byte {
	raw, _ := json.Marshal(v)
	return raw
}
