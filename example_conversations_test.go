package history_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/histrim/history"
)

// Two replicas share a conversation's state through a StateStore: after
// the provider refused a request for its length, both trim to the share
// of the budget it accepted; after Reset, both plan at the full budget
// again. Close, at shutdown, stops the background summaries in flight.
func ExampleConversations_Reset() {
	perMessage := history.CounterFunc(func(history.Message) int { return 10 })
	store := &history.MemoryStateStore{} // Redis or PostgreSQL across processes
	a := history.NewConversations(store, history.WithCounter(perMessage))
	b := history.NewConversations(store, history.WithCounter(perMessage))
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	var transcript []history.Message
	for i := range 12 {
		transcript = append(transcript,
			history.Message{Role: history.RoleUser, Content: "question " + strconv.Itoa(i)},
			history.Message{Role: history.RoleAssistant, Content: "answer " + strconv.Itoa(i)})
	}
	req := append(transcript, history.Message{Role: history.RoleUser, Content: "and now?"})
	res, _ := a.Trim(ctx, "conv-1", req, 200)
	fmt.Println("replica a sends", res.TokensAfter, "tokens")
	refusal := errors.New("This model's maximum context length is 120 tokens. However, your messages resulted in 200 tokens.")
	res, _ = a.RecoverOverflow(ctx, "conv-1", req, refusal, 1)
	fmt.Println("after the refusal, replica a sends", res.TokensAfter, "tokens")
	res, _ = b.Trim(ctx, "conv-1", req, 200)
	fmt.Println("replica b, same budget, sends", res.TokensAfter, "tokens")
	if err := a.Reset(ctx, "conv-1"); err != nil {
		fmt.Println(err)
	}
	res, _ = b.Trim(ctx, "conv-1", req, 200)
	fmt.Println("after Reset, replica b sends", res.TokensAfter, "tokens")
	// Output:
	// replica a sends 200 tokens
	// after the refusal, replica a sends 100 tokens
	// replica b, same budget, sends 100 tokens
	// after Reset, replica b sends 200 tokens
}
