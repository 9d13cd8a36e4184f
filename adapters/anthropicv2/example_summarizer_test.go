package anthropicv2_test

import (
	"context"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropicv2"
)

// The wiring of a Summarizer in an agent loop: its Option to the Trimmer,
// and every request recorded with Sent, which the summary request repeats
// with the instruction appended (the cache-safe form: the same system
// prompt, tools, thinking and breakpoints; with adaptive thinking, as
// here, max_tokens stays at least the request's). In the background, no
// request waits for a summary.
func ExampleNewSummarizer() {
	client := anthropic.NewClient() // ANTHROPIC_API_KEY
	sum := hanthropic.NewSummarizer(client, hanthropic.SummarizerConfig{
		Summary: history.SummaryOptions{MaxTokens: 1500, Background: true},
	})
	params := anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 16_000,
		Thinking: anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}},
		System:   []anthropic.TextBlockParam{{Text: "You are a coding agent.", CacheControl: anthropic.NewCacheControlEphemeralParam()}}}
	tr := hanthropic.NewTrimmer(params.System, sum.Option(), history.WithLowWater(0.7))
	defer tr.Close() // stops a summary in flight

	transcript := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Fix the failing test."))}
	var err error
	if params.Messages, _, err = tr.Trim(transcript, 180_000); err != nil {
		fmt.Println(err)
		return
	}
	sum.Sent(params)
	msg, err := client.Messages.New(context.Background(), params)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range msg.Content {
		if b.Type == "text" {
			fmt.Println(b.Text)
		}
	}
}
