package goopenai_test

import (
	"context"
	"fmt"

	"github.com/histrim/history"
	hgoopenai "github.com/histrim/history/adapters/goopenai"
	openai "github.com/sashabaranov/go-openai"
)

// The wiring of a Summarizer in an agent loop on go-openai: a
// history.Trimmer with its Option over the converted transcript, the
// decision mapped back with history.ApplyFunc, and every request recorded
// with Sent, which the summary request repeats with the instruction
// appended (the cache-safe form).
func ExampleNewSummarizer() {
	client := openai.NewClient("sk-...")
	sum := hgoopenai.NewSummarizer(client, hgoopenai.SummarizerConfig{
		Summary: history.SummaryOptions{MaxTokens: 1500, Background: true},
	})
	tr := history.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
	defer tr.Close() // stops a summary in flight

	req := openai.ChatCompletionRequest{Model: "gpt-4.1"}
	transcript := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "You are a coding agent."},
		{Role: openai.ChatMessageRoleUser, Content: "Fix the failing test."},
	}
	hist, err := hgoopenai.ToHistory(transcript)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := tr.Trim(hist, 100_000)
	if err != nil {
		fmt.Println(err)
		return
	}
	req.Messages = history.ApplyFunc(transcript, res, render)
	sum.Sent(req)
	resp, err := client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)
}

// render builds the go-openai message for one the trim wrote (a notice,
// the summary) or changed (an elided result, calls the sweep stripped).
func render(m history.Message) openai.ChatCompletionMessage {
	out := openai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	return out
}
