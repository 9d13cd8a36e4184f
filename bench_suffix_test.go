package history_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/tiktoken"
)

// shortChat is a system prompt and n/2 exchanges of a short user message and
// a short answer (about 130 o200k tokens each), distinct texts.
func shortChat(n int) []history.Message {
	words := strings.Fields("the agent reads the file and runs the tests then reports what changed and why it matters for the build")
	msgs := make([]history.Message, 0, n+1)
	msgs = append(msgs, history.Message{Role: history.RoleSystem, Content: "You are a coding agent."})
	for i := 0; len(msgs) < n; i++ {
		var b strings.Builder
		for j := range 100 {
			b.WriteString(words[(i+j)%len(words)])
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(i))
		role := history.RoleUser
		if i%2 == 1 {
			role = history.RoleAssistant
		}
		msgs = append(msgs, history.Message{Role: role, Content: b.String()})
	}
	return msgs
}

// BenchmarkExactCold trims 20,002 short messages to 8,000 tokens with the
// exact o200k counter and no cache: the cost of a resumed session or a
// stateless runtime's first request.
func BenchmarkExactCold(b *testing.B) {
	c, err := tiktoken.New(tiktoken.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	msgs := shortChat(20_002)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := history.TrimToRecentTurns(msgs, 8_000, history.WithCounter(c)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExactStatelessCache trims the same history with one NewCache, the
// history growing by one message per call, as a stateless runtime does.
func BenchmarkExactStatelessCache(b *testing.B) {
	c, err := tiktoken.New(tiktoken.O200kBase)
	if err != nil {
		b.Fatal(err)
	}
	msgs := shortChat(30_000)
	cached := history.WithCounter(history.NewCache(c, 0))
	n := 20_002
	if _, err := history.TrimToRecentTurns(msgs[:n], 8_000, cached); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		n++
		if n > len(msgs) {
			n = 20_002
		}
		if _, err := history.TrimToRecentTurns(msgs[:n], 8_000, cached); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMillion trims 1,000,000 short messages to 8,000 tokens with the
// Heuristic: the cost follows the kept suffix plus a role scan of the rest.
func BenchmarkMillion(b *testing.B) {
	msgs := shortChat(1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := history.TrimToRecentTurns(msgs, 8_000); err != nil {
			b.Fatal(err)
		}
	}
}
