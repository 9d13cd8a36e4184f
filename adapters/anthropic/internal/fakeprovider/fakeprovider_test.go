package fakeprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
)

// TestProvider drives the provider with the real client: it counts as
// documented, reports the count in usage, answers the script's next step,
// rejects an overflow with the API's body and a broken pairing with a 400.
func TestProvider(t *testing.T) {
	// step1 is the task of turn and its first step, answered.
	step1 := func(turn int) []anthropic.MessageParam {
		id := fmt.Sprintf("toolu_%d_1_0", turn)
		return []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock(Task(turn))),
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock(id, map[string]string{"path": "a"}, "read_file")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, RunTool(id), false)),
		}
	}
	one, more := 1, 1 // a turn of one step, and one of more
	for Steps(one) != 1 {
		one++
	}
	for Steps(more) == 1 {
		more++
	}
	task := step1(one)[:1]
	tests := []struct {
		name  string
		msgs  []anthropic.MessageParam
		limit int
		stop  anthropic.StopReason // "" for a rejection
		err   string               // in the rejection's body
		check func(s Stats) bool
	}{
		{"a task gets its first step", task, 100_000, anthropic.StopReasonToolUse, "", nil},
		{"a step gets the next", step1(more), 100_000, anthropic.StopReasonToolUse, "", nil},
		{"the last step gets the final text", step1(one), 100_000, anthropic.StopReasonEndTurn, "", nil},
		{"over the window", step1(one), 500, "", "prompt is too long: ", func(s Stats) bool { return s.Overflows == 1 }},
		{"an unanswered call", step1(one)[:2], 100_000, "", "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_", func(s Stats) bool { return s.PairingViolations == 1 }},
		{"an orphan result", append(task, step1(one)[2]), 100_000, "", "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_", func(s Stats) bool { return s.PairingViolations == 1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New(1.5, tc.limit)
			srv := httptest.NewServer(p)
			defer srv.Close()
			client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
			params := anthropic.MessageNewParams{Model: Model, MaxTokens: 10, Messages: tc.msgs, Tools: Tools(),
				System: []anthropic.TextBlockParam{{Text: "system"}}}
			reply, err := client.Messages.New(context.Background(), params)
			hist, _ := hanthropic.ToHistory(params.System, tc.msgs)
			want := p.Prompt(history.Estimate(hist, nil), p.Stats().SchemaTokens)
			if tc.stop == "" {
				var apiErr *anthropic.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.RawJSON(), tc.err) || !tc.check(p.Stats()) {
					t.Fatalf("got %v, stats %+v; want a 400 saying %q", err, p.Stats(), tc.err)
				}
				if tc.limit < 100_000 { // the overflow: its numbers are the provider's count
					ov, ok := history.ParseOverflow(err)
					if !ok || ov.Used != want || ov.Limit != tc.limit {
						t.Fatalf("ParseOverflow = %+v, %v; want %d of %d", ov, ok, want, tc.limit)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			u := reply.Usage
			if got := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens; int(got) != want || u.CacheReadInputTokens == 0 {
				t.Fatalf("usage %+v sums to %d, want %d split over the three counts", u, got, want)
			}
			if reply.StopReason != tc.stop {
				t.Fatalf("stop reason %q, want %q", reply.StopReason, tc.stop)
			}
			if s := p.Stats().SchemaTokens; s != history.EstimateText(mustJSON(t, Tools())) {
				t.Fatalf("schema tokens %d, want those of the tools' JSON", s)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScript: tasks, steps and tool outputs are within their ranges, and
// tool outputs differ from call to call.
func TestScript(t *testing.T) {
	for turn := 1; turn <= 200; turn++ {
		if s := Steps(turn); s < 1 || s > 6 {
			t.Fatalf("turn %d has %d steps", turn, s)
		}
		if n := len(strings.Fields(Task(turn))); n < 62 || n > 162 {
			t.Fatalf("task %d has %d words", turn, n)
		}
		id := fmt.Sprintf("toolu_%d_1_0", turn)
		out := RunTool(id)
		if n := len(strings.Fields(out)); n < 250 || n > 1150 || out == RunTool(fmt.Sprintf("toolu_%d_2_0", turn)) {
			t.Fatalf("tool output of %q has %d words", id, n)
		}
	}
	if len(Tools()) != 20 {
		t.Fatalf("%d tools, want 20", len(Tools()))
	}
}
