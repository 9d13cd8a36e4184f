package goopenai_test

import (
	"context"
	"fmt"

	"github.com/histrim/history"
	hgoopenai "github.com/histrim/history/adapters/goopenai"
	openai "github.com/sashabaranov/go-openai"
)

// The wiring of a Summarizer in an agent loop on go-openai: the adapter's
// Trimmer with the Summarizer's Option, and every request recorded with
// Sent, which the summary request repeats with the instruction appended
// (the cache-safe form).
func ExampleNewSummarizer() {
	client := openai.NewClient("sk-...")
	sum := hgoopenai.NewSummarizer(client, hgoopenai.SummarizerConfig{
		Summary: history.SummaryOptions{MaxTokens: 1500, Background: true},
	})
	tr := hgoopenai.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
	defer tr.Close() // stops a summary in flight

	req := openai.ChatCompletionRequest{Model: "gpt-4.1"}
	transcript := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a coding agent."},
		{Role: openai.ChatMessageRoleUser, Content: "Fix the failing test."},
	}
	sent, _, err := tr.Trim(transcript, 100_000)
	if err != nil {
		fmt.Println(err)
		return
	}
	req.Messages = sent
	sum.Sent(req)
	resp, err := client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)
}
