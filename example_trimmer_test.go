package history_test

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/histrim/history"
)

// A runtime that keeps its full transcript trims a view of it before every
// request. With a Trimmer the view keeps the same beginning (and so the
// provider's cached prefix) until a new trim is needed, and the low-water
// mark makes that rare.
func ExampleNewTrimmer() {
	perMessage := history.CounterFunc(func(history.Message) int { return 10 }) // 10 tokens a message
	tr := history.NewTrimmer(history.WithCounter(perMessage), history.WithLowWater(0.6))
	transcript := []history.Message{{Role: history.RoleSystem, Content: "You are terse."}}
	var prev []int // Kept of the previous request: indices into the transcript
	for i := range 9 {
		transcript = append(transcript, history.Message{Role: history.RoleUser, Content: "question " + strconv.Itoa(i)})
		res, err := tr.Trim(transcript, 100)
		if err != nil {
			fmt.Println(err)
			return
		}
		samePrefix := prev != nil && len(prev) <= len(res.Kept) && slices.Equal(prev, res.Kept[:len(prev)])
		fmt.Printf("request %d: sends %d of %d messages, %d tokens, same prefix: %v\n",
			i, len(res.Messages), len(transcript), res.TokensAfter, samePrefix)
		prev = res.Kept
		transcript = append(transcript, history.Message{Role: history.RoleAssistant, Content: "answer " + strconv.Itoa(i)})
	}
	// Output:
	// request 0: sends 2 of 2 messages, 20 tokens, same prefix: false
	// request 1: sends 4 of 4 messages, 40 tokens, same prefix: true
	// request 2: sends 6 of 6 messages, 60 tokens, same prefix: true
	// request 3: sends 8 of 8 messages, 80 tokens, same prefix: true
	// request 4: sends 10 of 10 messages, 100 tokens, same prefix: true
	// request 5: sends 5 of 12 messages, 50 tokens, same prefix: false
	// request 6: sends 7 of 14 messages, 70 tokens, same prefix: true
	// request 7: sends 9 of 16 messages, 90 tokens, same prefix: true
	// request 8: sends 5 of 18 messages, 50 tokens, same prefix: false
}

// Over a long conversation, a Trimmer changes the beginning of the prompt only
// when it must cut again; a stateless trim of the same transcript moves its
// cut with almost every new turn once the transcript is over budget, and
// every such move makes the provider's prompt cache miss.
func ExampleTrimmer_Trim() {
	perMessage := history.CounterFunc(func(history.Message) int { return 10 })
	opts := []history.Option{history.WithCounter(perMessage), history.WithLowWater(0.6)}
	tr := history.NewTrimmer(opts...)
	transcript := []history.Message{{Role: history.RoleSystem, Content: "You are terse."}}
	startsWith := func(kept, prev []int) bool {
		return len(prev) <= len(kept) && slices.Equal(prev, kept[:len(prev)])
	}
	var prevHeld, prevStateless []int
	rewritesHeld, rewritesStateless := 0, 0
	for i := range 100 {
		transcript = append(transcript, history.Message{Role: history.RoleUser, Content: "question " + strconv.Itoa(i)})
		held, err := tr.Trim(transcript, 400)
		if err != nil {
			fmt.Println(err)
			return
		}
		stateless, err := history.TrimToRecentTurns(transcript, 400, opts...)
		if err != nil {
			fmt.Println(err)
			return
		}
		if !startsWith(held.Kept, prevHeld) {
			rewritesHeld++
		}
		if !startsWith(stateless.Kept, prevStateless) {
			rewritesStateless++
		}
		prevHeld, prevStateless = held.Kept, stateless.Kept
		transcript = append(transcript, history.Message{Role: history.RoleAssistant, Content: "answer " + strconv.Itoa(i)})
	}
	fmt.Printf("100 requests, prompt beginning changed: Trimmer %d times, stateless %d times\n", rewritesHeld, rewritesStateless)
	// Output:
	// 100 requests, prompt beginning changed: Trimmer 9 times, stateless 80 times
}

// A Trimmer never brings dropped turns back on its own, even when the
// budget grows; Reset makes the next Trim start over.
func ExampleTrimmer_Reset() {
	perMessage := history.CounterFunc(func(history.Message) int { return 10 })
	tr := history.NewTrimmer(history.WithCounter(perMessage))
	transcript := []history.Message{{Role: history.RoleSystem, Content: "You are terse."}}
	for i := range 6 {
		transcript = append(transcript,
			history.Message{Role: history.RoleUser, Content: "question " + strconv.Itoa(i)},
			history.Message{Role: history.RoleAssistant, Content: "answer " + strconv.Itoa(i)})
	}
	for _, step := range []struct {
		what   string
		budget int
		reset  bool
	}{
		{"small model", 100, false},
		{"larger model", 1000, false},
		{"larger model after Reset", 1000, true},
	} {
		if step.reset {
			tr.Reset()
		}
		res, err := tr.Trim(transcript, step.budget)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: sends %d of %d messages\n", step.what, len(res.Messages), len(transcript))
	}
	// Output:
	// small model: sends 10 of 13 messages
	// larger model: sends 10 of 13 messages
	// larger model after Reset: sends 13 of 13 messages
}
