package beta_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/anthropicv2/beta"
)

// With server compaction on, the library guards the window above the
// server's trigger and leaves every rewrite below it to the server; when
// a burst of tool results lands in the latest turn before the server can
// compact it, the guard drops the turn's oldest steps (and would cut the
// largest results as a last resort), so the request still fits.
func ExampleGuard() {
	params := anthropic.BetaMessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024,
		System: []anthropic.BetaTextBlockParam{{Text: "You are a coding agent."}}}
	params.ContextManagement.Edits = []anthropic.BetaContextManagementConfigEditUnionParam{{
		OfCompact20260112: &anthropic.BetaCompact20260112EditParam{Trigger: anthropic.BetaInputTokensTriggerParam{Value: 8_000}},
	}}
	s := beta.ServerOf(params)
	fmt.Println("server compacts from", s.CompactTrigger)

	var cal history.Calibration
	if _, err := beta.Guard(params, 6_000, history.WithCalibration(&cal)); errors.Is(err, beta.ErrGuard) {
		fmt.Println(err)
	}
	const window = 12_000
	opts, err := beta.Guard(params, window, history.WithCalibration(&cal))
	if err != nil {
		panic(err)
	}

	// One task whose three steps each read three files.
	msgs := []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("Review the handlers."))}
	for step := range 3 {
		var calls, results []anthropic.BetaContentBlockParamUnion
		for k := range 3 {
			id := fmt.Sprintf("toolu_%d_%d", step, k)
			calls = append(calls, anthropic.NewBetaToolUseBlock(id, map[string]any{"path": id + ".go"}, "read_file"))
			results = append(results, anthropic.NewBetaToolResultBlock(id, strings.Repeat("func handler() error { return nil }\n", 150), false))
		}
		msgs = append(msgs, anthropic.BetaMessageParam{OfAssistant: &anthropic.BetaAssistantMessageParam{Content: calls}},
			anthropic.NewBetaUserMessage(results...))
	}
	tr := beta.NewTrimmer(params.System, opts...)
	out, res, err := tr.Trim(msgs, window)
	fmt.Printf("%d of %d messages sent, %d steps dropped, %d results cut, within the window: %v, %v\n",
		len(out), len(msgs), res.DroppedSteps, res.CutResults, res.TokensAfter <= window, err)
	// Output:
	// server compacts from 8000
	// history/anthropicv2/beta: budget 6000 is at or below the server's trigger 8000: the library would rewrite the prompt before the server does
	// 6 of 7 messages sent, 1 steps dropped, 0 results cut, within the window: true, <nil>
}
