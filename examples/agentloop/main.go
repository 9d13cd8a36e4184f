// Command agentloop runs a tool-calling agent loop against a local fake
// OpenAI-compatible provider whose token count disagrees with the runtime's,
// so that some requests are rejected with context_length_exceeded. The loop
// trims before every request (history.TrimToRecentTurns), recovers from each
// length rejection (history.RecoverOverflow) and prints every trim event;
// then it runs again with a history.Calibration learning the provider's
// count from usage, which removes the rejections.
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

// Run drives turns turns of the script and returns the counters. With cal
// (nil: none), the agent calibrates its budget to the provider's count.
func Run(turns int, cal *history.Calibration, onEvent func(turn int, ev history.Event)) (AgentStats, ProviderStats, error) {
	p := &FakeProvider{Limit: Limit, Factor: Factor, Overhead: Overhead}
	srv := httptest.NewServer(p)
	defer srv.Close()
	a := NewAgent(srv.URL, Budget)
	a.Client = srv.Client()
	a.OnEvent = onEvent
	a.Calibration = cal
	for i := 1; i <= turns; i++ {
		if err := a.RunTurn(context.Background(), i, Script(i)); err != nil {
			return a.Stats(), p.Stats(), fmt.Errorf("turn %d: %w", i, err)
		}
	}
	return a.Stats(), p.Stats(), nil
}

func main() {
	show := func(turn int, ev history.Event) {
		fmt.Printf("turn %2d  %-8s attempt=%d dropped_turns=%d kept_turns=%d tokens %d -> %d (budget %d)\n",
			turn, ev.Reason, ev.Attempt, ev.DroppedTurns, ev.KeptTurns, ev.TokensBefore, ev.TokensAfter, ev.Budget)
	}
	fmt.Println("Without calibration: the runtime trims to its own count.")
	plain, pp, err := Run(30, nil, show)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
	fmt.Println("\nWith calibration: the runtime learns the provider's count from usage.")
	var cal history.Calibration
	calib, cp, err := Run(30, &cal, show)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
	scale, overhead, margin, _ := cal.Model()
	fmt.Println()
	for _, r := range []struct {
		name string
		as   AgentStats
		ps   ProviderStats
	}{{"without calibration", plain, pp}, {"with calibration", calib, cp}} {
		fmt.Printf("%-20s %d turns, %d requests: %d budget trims, %d length rejections, %d recoveries (max %d attempt(s) per request), %d pairing rejections, mean provider count of trimmed requests %d of budget %d\n",
			r.name, r.as.Turns, r.ps.Requests, r.as.BudgetEvents, r.ps.LengthRejections, r.as.Recoveries, r.as.MaxAttempts, r.ps.PairingRejections,
			r.as.ProviderPrompt/max(r.as.TrimmedAccepted, 1), Budget)
		if r.ps.PairingRejections > 0 || r.as.Unrecovered > 0 {
			os.Exit(1)
		}
	}
	fmt.Printf("learnt: provider = %.3f x library + %.0f tokens (margin %.0f)\n", scale, overhead, margin)
}
