package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// TestDoor runs the loop through the door with the real client: the
// request names the model and the Trimmer takes its window from the
// table, its output room from max_output_tokens and the tools as
// overhead, and learns the provider's count from each response's
// input_tokens.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "responses", "o4-mini", func(t *testing.T, l *adaptertest.Loop, model string) {
		api := newLoopAPI(l)
		c := api.client(t)
		ctx := context.Background()
		params := responses.ResponseNewParams{Model: model, Tools: loopTools(), MaxOutputTokens: param.NewOpt[int64](4096)}
		tr := NewTrimmer()
		transcript := []Item{developer("You are a coding agent. Use the tools to read files before you answer.")}
		for turn := 1; turn <= l.Turns; turn++ {
			task := "Task " + strconv.Itoa(turn) + ": look into module " + strconv.Itoa(turn*13%97) + " and fix what you find."
			l.Turn(turn, task)
			transcript = append(transcript, user(task))
		steps:
			for step := 0; ; step++ {
				if step > 7 {
					t.Fatalf("turn %d does not end", turn)
				}
				params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: transcript}
				send, res, err := tr.Fit(ctx, params)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					l.Error(fmt.Errorf("Fit: %w", err))
					break
				}
				resp, err := c.Responses.New(ctx, send)
				for attempt := 1; err != nil && attempt <= 2 && history.IsContextOverflow(err); attempt++ {
					items, rres, rerr := tr.RecoverOverflow(transcript, err, attempt)
					if rerr != nil {
						l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
						break steps
					}
					res = rres
					send.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
					resp, err = c.Responses.New(ctx, send)
				}
				if err != nil {
					l.Error(err)
					break
				}
				if v := tr.Observe(resp.Usage); v == history.VerdictInvalid {
					t.Errorf("Observe(%+v) = VerdictInvalid", resp.Usage)
				}
				l.Accepted(res.Trimmed, int(resp.Usage.InputTokens))
				var calls []string
				for _, o := range resp.Output {
					switch o.Type {
					case "reasoning":
						r := o.AsReasoning().ToParam()
						transcript = append(transcript, Item{OfReasoning: &r})
					case "message":
						m := o.AsMessage().ToParam()
						transcript = append(transcript, Item{OfOutputMessage: &m})
					default:
						transcript = append(transcript, param.Override[Item](json.RawMessage(o.RawJSON())))
						if o.Type == "function_call" {
							calls = append(calls, o.CallID)
						}
					}
				}
				if len(calls) == 0 {
					break
				}
				for _, id := range calls {
					transcript = append(transcript, functionOutput(id, loopOutput(l, id)))
				}
			}
		}
	})
}

// TestDoorChained: a request chained onto server-held state cannot be
// trimmed from the client: the door says so as TrimRequest does.
func TestDoorChained(t *testing.T) {
	params := responses.ResponseNewParams{Model: "o4-mini", PreviousResponseID: param.NewOpt("resp_1"),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: []Item{user("hi")}}}
	_, _, err := NewTrimmer().Fit(context.Background(), params)
	if !errors.Is(err, ErrChained) {
		t.Fatalf("err = %v, want ErrChained", err)
	}
}
