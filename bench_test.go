package history

import (
	"strconv"
	"strings"
	"testing"
)

// synth builds a well-paired agent history of about n messages whose
// contents are about size bytes: a system prompt, then turns of a user
// request, an assistant message with two parallel calls, their results, and
// a final answer.
func synth(n, size int) []Message {
	text := strings.Repeat("lorem ipsum dolor sit amet, ", size/28+1)[:size]
	msgs := make([]Message, 0, n+6)
	msgs = append(msgs, Message{Role: RoleSystem, Content: text})
	for i := 0; len(msgs) < n; i++ {
		id := strconv.Itoa(i)
		msgs = append(msgs,
			Message{Role: RoleUser, Content: text},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{
				{ID: "a" + id, Name: "read", Arguments: `{"path":"main.go"}`},
				{ID: "b" + id, Name: "grep", Arguments: `{"q":"x"}`},
			}},
			Message{Role: RoleTool, ToolCallID: "b" + id, Content: text},
			Message{Role: RoleTool, ToolCallID: "a" + id, Content: text},
			Message{Role: RoleAssistant, Content: text},
		)
	}
	return msgs
}

func benchmarkTrim(b *testing.B, n int) {
	msgs := synth(n, 200)
	total := Estimate(msgs, Heuristic())
	budget := total / 2
	b.ReportAllocs()
	b.ReportMetric(float64(len(msgs)), "msgs")
	for b.Loop() {
		if _, err := TrimToRecentTurns(msgs, budget); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrim100(b *testing.B)  { benchmarkTrim(b, 100) }
func BenchmarkTrim10k(b *testing.B)  { benchmarkTrim(b, 10_000) }
func BenchmarkTrim100k(b *testing.B) { benchmarkTrim(b, 100_000) }

// BenchmarkTrimFits measures the no-trim path: the history fits, so only
// counting and the orphan check run.
func BenchmarkTrimFits10k(b *testing.B) {
	msgs := synth(10_000, 200)
	budget := Estimate(msgs, Heuristic())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TrimToRecentTurns(msgs, budget); err != nil {
			b.Fatal(err)
		}
	}
}
