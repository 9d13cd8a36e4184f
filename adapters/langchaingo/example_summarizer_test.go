package langchaingo_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/langchaingo"
	"github.com/tmc/langchaingo/llms"
)

// A stateful Model whose Trimmer writes a summary through the
// conversation's own model when turns must go: the Summarizer's Model
// records every request the Model sends, so that the summary request is
// the last request with the instruction appended, which the provider
// reads from its cache.
func ExampleNewSummarizer() {
	llm := &summaryModel{} // openai.New(...), anthropic.New(...), ...
	sum := langchaingo.NewSummarizer(llm, langchaingo.SummarizerConfig{Summary: history.SummaryOptions{MaxTokens: 200}})
	model := langchaingo.NewModel(sum.Model(), langchaingo.Config{Budget: 500, Stateful: true,
		Options: []history.Option{sum.Option()}})
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You are a coding agent.")}
	for i := range 8 {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("Step %d: %s", i, strings.Repeat("more detail please ", 20))))
		resp, err := model.GenerateContent(context.Background(), msgs, llms.WithTemperature(0))
		if err != nil {
			fmt.Println(err)
			return
		}
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeAI, resp.Choices[0].Content))
	}
	fmt.Println(llm.sent[len(llm.sent)-1][1].Parts[0])
	// Output:
	// summary request: the last request's 10 messages, the same: true, and the instruction
	// [Summary of 3 earlier turn(s): 6 messages, about 255 tokens]
	// Task: a JSON parser in Go. Decisions: a hand-written lexer.
}

// summaryModel stands for a provider: it answers a summary request (one
// that ends with the instruction) with a summary, and prints how it
// relates to the request before it; any other request with "Noted.".
type summaryModel struct {
	sent [][]llms.MessageContent
}

func (m *summaryModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	reply := "Noted."
	last := msgs[len(msgs)-1].Parts[0].(llms.TextContent).Text
	if strings.HasPrefix(last, "Pause the task") {
		prev := m.sent[len(m.sent)-1]
		fmt.Printf("summary request: the last request's %d messages, the same: %v, and the instruction\n",
			len(msgs)-1, reflect.DeepEqual(msgs[:len(msgs)-1], prev))
		reply = "Task: a JSON parser in Go. Decisions: a hand-written lexer."
	} else {
		m.sent = append(m.sent, msgs)
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: reply}}}, nil
}

func (m *summaryModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}
