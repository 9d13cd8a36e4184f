package eino_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/eino"
)

// A stateful ChatModel whose Trimmer writes a summary through the
// conversation's own chat model when turns must go: the Summarizer's
// ChatModel records every request, with the tools bound, so that the
// summary request is the last request with the instruction appended,
// which the provider reads from its cache.
func ExampleNewSummarizer() {
	inner := &summaryModel{} // eino-ext's OpenAI, Ark, Claude...
	sum := eino.NewSummarizer(inner, eino.SummarizerConfig{Summary: history.SummaryOptions{MaxTokens: 200}})
	cm, err := eino.NewChatModel(sum.ChatModel(), eino.Config{Budget: 500, Stateful: true,
		Options: []history.Option{sum.Option()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := []*schema.Message{schema.SystemMessage("You are a coding agent.")}
	for i := range 8 {
		msgs = append(msgs, schema.UserMessage(fmt.Sprintf("Step %d: %s", i, strings.Repeat("more detail please ", 20))))
		out, err := cm.Generate(context.Background(), msgs)
		if err != nil {
			fmt.Println(err)
			return
		}
		msgs = append(msgs, out)
	}
	fmt.Println(inner.sent[len(inner.sent)-1][1].Content)
	// Output:
	// summary request: the last request's 10 messages, the same: true, and the instruction
	// [Summary of 3 earlier turn(s): 6 messages, about 255 tokens]
	// Task: a JSON parser in Go. Decisions: a hand-written lexer.
}

// summaryModel stands for a chat model: it answers a summary request (one
// that ends with the instruction) with a summary, and prints how it
// relates to the request before it; any other request with "Noted.".
type summaryModel struct {
	sent [][]*schema.Message
}

func (m *summaryModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	reply := "Noted."
	if strings.HasPrefix(in[len(in)-1].Content, "Pause the task") {
		fmt.Printf("summary request: the last request's %d messages, the same: %v, and the instruction\n",
			len(in)-1, reflect.DeepEqual(in[:len(in)-1], m.sent[len(m.sent)-1]))
		reply = "Task: a JSON parser in Go. Decisions: a hand-written lexer."
	} else {
		m.sent = append(m.sent, in)
	}
	return schema.AssistantMessage(reply, nil), nil
}

func (m *summaryModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	out, err := m.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{out}), err
}

func (m *summaryModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}
