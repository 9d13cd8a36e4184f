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
