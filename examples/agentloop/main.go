// Command agentloop runs a tool-calling agent loop against a local fake
// OpenAI-compatible provider whose token count disagrees with the runtime's,
// so that some requests are rejected with context_length_exceeded. The loop
// trims before every request (history.TrimToRecentTurns), recovers from each
// length rejection (history.RecoverOverflow) and prints every trim event.
// It runs offline in well under a second.
package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/histrim/history"
)

// Setup shared by main and the test: the runtime trims to Budget by its own
// count, but the provider counts 25% more plus its tool schemas, so a history
// near the budget is over the provider's Limit.
const (
	Budget   = 5200
	Limit    = 6000
	Factor   = 1.25
	Overhead = 150
)

// Run drives turns turns of the script and returns the counters.
func Run(turns int, onEvent func(turn int, ev history.Event)) (AgentStats, ProviderStats, error) {
	p := &FakeProvider{Limit: Limit, Factor: Factor, Overhead: Overhead}
	srv := httptest.NewServer(p)
	defer srv.Close()
	a := NewAgent(srv.URL, Budget)
	a.Client = srv.Client()
	a.OnEvent = onEvent
	for i := 1; i <= turns; i++ {
		if err := a.RunTurn(context.Background(), i, Script(i)); err != nil {
			return a.Stats(), p.Stats(), fmt.Errorf("turn %d: %w", i, err)
		}
	}
	return a.Stats(), p.Stats(), nil
}

func main() {
	as, ps, err := Run(30, func(turn int, ev history.Event) {
		fmt.Printf("turn %2d  %-8s attempt=%d dropped_turns=%d kept_turns=%d tokens %d -> %d (budget %d)\n",
			turn, ev.Reason, ev.Attempt, ev.DroppedTurns, ev.KeptTurns, ev.TokensBefore, ev.TokensAfter, ev.Budget)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
	fmt.Printf("\n%d turns, %d requests: %d budget trims, %d length rejections, %d recoveries (max %d attempt(s) per request), %d pairing rejections\n",
		as.Turns, ps.Requests, as.BudgetEvents, ps.LengthRejections, as.Recoveries, as.MaxAttempts, ps.PairingRejections)
	if ps.PairingRejections > 0 || as.Unrecovered > 0 {
		os.Exit(1)
	}
}
