package eino_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/adapters/eino"
)

// echoModel stands for a real chat model (eino-ext's OpenAI, Ark,
// Claude...): it reports as prompt tokens the heuristic count of what it
// received, plus 50 for its tools.
type echoModel struct{ tools []*schema.ToolInfo }

func (e *echoModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	h, _ := eino.ToHistory(in)
	return &schema.Message{Role: schema.Assistant, Content: fmt.Sprintf("I saw %d messages.", len(in)),
		ResponseMeta: &schema.ResponseMeta{Usage: &schema.TokenUsage{PromptTokens: history.Estimate(h, nil) + 50}}}, nil
}

func (e *echoModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := e.Generate(ctx, in, opts...)
	return schema.StreamReaderFromArray([]*schema.Message{m}), err
}

func (e *echoModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return &echoModel{tools: tools}, nil
}

func ExampleNewChatModel() {
	var cal history.Calibration
	cm, err := eino.NewChatModel(&echoModel{}, eino.Config{
		Budget:      300,
		Calibration: &cal,
		Options:     []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()},
		OnEvent: func(ev eino.Event) {
			switch ev.Type {
			case eino.EventRequest:
				fmt.Printf("request: %d messages, %d tokens, trimmed %v\n", ev.Messages, ev.Tokens, ev.Trimmed)
			case eino.EventUsage:
				fmt.Printf("usage: provider counted %d\n", ev.PromptTokens)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	agent, err := cm.WithTools([]*schema.ToolInfo{{Name: "search", Desc: "Searches the web."}})
	if err != nil {
		fmt.Println(err)
		return
	}
	full := []*schema.Message{schema.SystemMessage("You are helpful.")}
	for i := range 3 {
		full = append(full, schema.UserMessage(fmt.Sprintf("Question %d: %s", i, strings.Repeat("why? ", 60))))
		reply, err := agent.Generate(context.Background(), full)
		if err != nil {
			fmt.Println(err)
			return
		}
		full = append(full, reply)
	}
	fmt.Println("transcript:", len(full), "messages, untouched")
	// Output:
	// request: 2 messages, 133 tokens, trimmed false
	// usage: provider counted 145
	// request: 4 messages, 229 tokens, trimmed false
	// usage: provider counted 241
	// request: 5 messages, 244 tokens, trimmed true
	// usage: provider counted 256
	// transcript: 7 messages, untouched
}

func ExampleMessageModifier() {
	// A ReAct agent takes it as its MessageModifier (or MessageRewriter):
	//
	//	react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, MessageModifier: mod, ...})
	mod := eino.MessageModifier(60, func(_ context.Context, err error) {
		fmt.Println("reported:", err)
	})
	msgs := []*schema.Message{
		schema.SystemMessage("You are terse."),
		schema.UserMessage("First question. " + strings.Repeat("More. ", 30)),
		schema.AssistantMessage("First answer.", nil),
		schema.UserMessage("Second question?"),
	}
	for _, m := range mod(context.Background(), msgs) {
		fmt.Printf("%s: %.40s\n", m.Role, m.Content)
	}
	// When even the latest turn does not fit, the smallest history goes
	// out and the error is reported.
	out := mod(context.Background(), append(msgs, schema.AssistantMessage(strings.Repeat("Long. ", 80), nil)))
	fmt.Println(len(out), "messages")
	// Output:
	// system: You are terse.
	// user: [earlier turns omitted to fit the contex
	// user: Second question?
	// reported: history: latest turn does not fit the budget: need 158 tokens, budget 60
	// 4 messages
}
