package beta_test

import (
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/anthropicv2/beta"
)

// With server compaction on, the library guards the window above the
// server's trigger and leaves every rewrite below it to the server.
func ExampleGuard() {
	params := anthropic.BetaMessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024}
	params.ContextManagement.Edits = []anthropic.BetaContextManagementConfigEditUnionParam{{
		OfCompact20260112: &anthropic.BetaCompact20260112EditParam{Trigger: anthropic.BetaInputTokensTriggerParam{Value: 150_000}},
	}}
	s := beta.ServerOf(params)
	fmt.Println("server compacts from", s.CompactTrigger)

	var cal history.Calibration
	if _, err := beta.Guard(params, 120_000, history.WithCalibration(&cal)); errors.Is(err, beta.ErrGuard) {
		fmt.Println(err)
	}
	opts, err := beta.Guard(params, 200_000, history.WithCalibration(&cal))
	fmt.Println(len(opts), err)
	// Output:
	// server compacts from 150000
	// history/anthropicv2/beta: budget 120000 is at or below the server's trigger 150000: the library would rewrite the prompt before the server does
	// 2 <nil>
}
