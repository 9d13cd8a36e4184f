package gemini_test

import (
	"context"
	"fmt"

	"github.com/histrim/history"
	hgemini "github.com/histrim/history/adapters/gemini"
	"google.golang.org/genai"
)

// The wiring of a Summarizer in an agent loop: its Option to the Trimmer,
// and every call recorded with Sent, which the summary call repeats with
// the instruction appended (the cache-safe form). In the background, no
// call waits for a summary.
func ExampleNewSummarizer() {
	ctx := context.Background()
	client, err := genai.NewClient(ctx, nil) // GEMINI_API_KEY
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := hgemini.NewSummarizer(client, hgemini.SummarizerConfig{
		Summary: history.SummaryOptions{MaxTokens: 1500, Background: true},
	})
	config := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("You are a coding agent.", genai.RoleUser)}
	tr := hgemini.NewTrimmer(config.SystemInstruction, sum.Option(), history.WithLowWater(0.7))
	defer tr.Close() // stops a summary in flight

	transcript := []*genai.Content{genai.NewContentFromText("Fix the failing test.", genai.RoleUser)}
	contents, _, err := tr.Trim(transcript, 900_000)
	if err != nil {
		fmt.Println(err)
		return
	}
	sum.Sent(hgemini.Request{Model: "gemini-2.5-flash", Contents: contents, Config: config})
	resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", contents, config)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text())
}
