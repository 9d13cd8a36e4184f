package responses_test

import (
	"context"
	"fmt"

	"github.com/histrim/history"
	hresponses "github.com/histrim/history/adapters/responses"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// The wiring of a Summarizer in an agent loop: its Option to the Trimmer,
// and every request recorded with Sent, which the summary request repeats
// with the instruction appended (the cache-safe form). In the background,
// no request waits for a summary.
func ExampleNewSummarizer() {
	client := openai.NewClient() // OPENAI_API_KEY
	sum := hresponses.NewSummarizer(client, hresponses.SummarizerConfig{
		Summary: history.SummaryOptions{MaxTokens: 1500, Background: true},
	})
	tr := hresponses.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
	defer tr.Close() // stops a summary in flight

	params := responses.ResponseNewParams{Model: "gpt-5"}
	transcript := []hresponses.Item{responses.ResponseInputItemParamOfMessage("Fix the failing test.", responses.EasyInputMessageRoleUser)}
	items, _, err := tr.Trim(transcript, 200_000)
	if err != nil {
		fmt.Println(err)
		return
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	sum.Sent(params)
	resp, err := client.Responses.New(context.Background(), params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.OutputText())
}
