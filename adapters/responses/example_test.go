package responses_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/histrim/history"
	hresponses "github.com/histrim/history/adapters/responses"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

func ExampleTrim() {
	reasoning := func(id string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfReasoning: &responses.ResponseReasoningItemParam{
			ID: id, Summary: []responses.ResponseReasoningItemSummaryParam{}, EncryptedContent: param.NewOpt("gAAAAB" + strings.Repeat("x", 200)),
		}}
	}
	items := []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("You are a weather bot.", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage("Weather in Oslo? "+strings.Repeat("Please be detailed. ", 40), responses.EasyInputMessageRoleUser),
		reasoning("rs_1"),
		responses.ResponseInputItemParamOfFunctionCall(`{"city":"Oslo"}`, "call_1", "get_weather"),
		responses.ResponseInputItemParamOfFunctionCallOutput("call_1", `{"temp_c":4}`),
		reasoning("rs_2"),
		responses.ResponseInputItemParamOfOutputMessage([]responses.ResponseOutputMessageContentUnionParam{{
			OfOutputText: &responses.ResponseOutputTextParam{Text: "4 °C in Oslo.", Annotations: []responses.ResponseOutputTextAnnotationUnionParam{}},
		}}, "msg_2", responses.ResponseOutputMessageStatusCompleted),
		responses.ResponseInputItemParamOfMessage("And tomorrow?", responses.EasyInputMessageRoleUser),
		reasoning("rs_3"), // the request was interrupted: nothing follows it
	}

	out, res, err := hresponses.Trim(items, 80)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		fmt.Println("error:", err)
		return
	}
	for _, u := range out {
		b, _ := json.Marshal(u) // the caller's own items, as they will be sent
		fmt.Println(string(b))
	}
	fmt.Println("dropped turns:", res.DroppedTurns, "repaired:", res.OrphansRemoved, "valid:", hresponses.Validate(out) == nil)
	// Output:
	// {"content":"You are a weather bot.","role":"developer"}
	// {"content":"[earlier turns omitted to fit the context window]","role":"user"}
	// {"content":"And tomorrow?","role":"user"}
	// dropped turns: 1 repaired: 1 valid: true
}

// With the server's compaction on, the library guards the window above
// its threshold and leaves every rewrite below it to the server; when a
// burst of tool results lands in the latest turn before the server can
// compact it, the guard drops the turn's oldest steps (and would cut the
// largest results as a last resort), so the request still fits.
func ExampleGuard() {
	params := responses.ResponseNewParams{Model: "gpt-5.5", ContextManagement: []responses.ResponseNewParamsContextManagement{
		{Type: "compaction", CompactThreshold: param.NewOpt[int64](8_000)}}}
	if _, err := hresponses.Guard(params, 6_000); errors.Is(err, hresponses.ErrGuard) {
		fmt.Println(err)
	}
	const window = 12_000
	opts, err := hresponses.Guard(params, window)
	if err != nil {
		panic(err)
	}

	// One task whose three steps each read three files.
	items := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("Review the handlers.", responses.EasyInputMessageRoleUser)}
	for step := range 3 {
		for k := range 3 {
			id := fmt.Sprintf("call_%d_%d", step, k)
			items = append(items, responses.ResponseInputItemParamOfFunctionCall(`{"path":"`+id+`.go"}`, id, "read_file"))
		}
		for k := range 3 {
			id := fmt.Sprintf("call_%d_%d", step, k)
			items = append(items, responses.ResponseInputItemParamOfFunctionCallOutput(id, strings.Repeat("func handler() error { return nil }\n", 150)))
		}
	}
	tr := hresponses.NewTrimmer(opts...)
	out, res, err := tr.Trim(hresponses.Compacted(items), window)
	fmt.Printf("%d of %d items sent, %d steps dropped, %d results cut, within the window: %v, %v\n",
		len(out), len(items), res.DroppedSteps, res.CutResults, res.TokensAfter <= window, err)
	// Output:
	// history/responses: budget 6000 is at or below the server's compact_threshold 8000: the library would rewrite the prompt before the server does
	// 14 of 19 items sent, 1 steps dropped, 0 results cut, within the window: true, <nil>
}
