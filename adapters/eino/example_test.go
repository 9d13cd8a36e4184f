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

func ExampleTrim() {
	msgs := []*schema.Message{
		schema.SystemMessage("You are a weather bot."),
		schema.UserMessage("Tell me about clouds. " + strings.Repeat("Be thorough. ", 60)),
		schema.AssistantMessage(strings.Repeat("Clouds are water. ", 60), nil),
		schema.UserMessage("What is the weather in Paris?"),
		{Role: schema.Assistant, ReasoningContent: "I need the forecast.", ToolCalls: []schema.ToolCall{
			{ID: "call_1", Type: "function", Function: schema.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
		}},
		schema.ToolMessage(`{"temp_c":21}`, "call_1"),
		schema.AssistantMessage("It is 21°C in Paris.", nil),
	}

	out, res, err := eino.Trim(msgs, 120)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		switch {
		case len(m.ToolCalls) > 0:
			fmt.Printf("%s: call %s (reasoning kept: %v)\n", m.Role, m.ToolCalls[0].Function.Name, m.ReasoningContent != "")
		case m.Extra[eino.KindKey] == "breadcrumb":
			fmt.Printf("%s: %s (breadcrumb)\n", m.Role, m.Content)
		default:
			fmt.Printf("%s: %s\n", m.Role, m.Content)
		}
	}
	fmt.Println("same pointer:", out[3] == msgs[4])
	fmt.Printf("dropped %d turn (%d messages), sending %d tokens\n", res.DroppedTurns, res.DroppedMessages, res.TokensAfter)
	fmt.Println("valid:", eino.Validate(out) == nil)
	// Output:
	// system: You are a weather bot.
	// user: [earlier turns omitted to fit the context window] (breadcrumb)
	// user: What is the weather in Paris?
	// assistant: call weather (reasoning kept: true)
	// tool: {"temp_c":21}
	// assistant: It is 21°C in Paris.
	// same pointer: true
	// dropped 1 turn (2 messages), sending 75 tokens
	// valid: true
}

func ExampleRecoverOverflow() {
	msgs := []*schema.Message{schema.SystemMessage("You are a code reviewer.")}
	for i := range 4 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			schema.UserMessage(fmt.Sprintf("Review file %d.", i)),
			schema.AssistantMessage("", []schema.ToolCall{{ID: id, Type: "function",
				Function: schema.FunctionCall{Name: "read_file", Arguments: `{}`}}}),
			schema.ToolMessage(strings.Repeat("func f() { return }\n", 30), id, schema.WithToolName("read_file")),
			schema.AssistantMessage(fmt.Sprintf("File %d looks fine.", i), nil))
	}
	// generate stands for a chat model's Generate: the endpoint counts 40%
	// more than the heuristic and rejects more than 500 tokens with the
	// error Eino's OpenAI chat model returns (an eino-ext *openai.APIError).
	generate := func(send []*schema.Message) error {
		h, _ := eino.ToHistory(send)
		if used := history.Estimate(h, nil) * 14 / 10; used > 500 {
			return fmt.Errorf("error, status code: 400, status: 400 Bad Request, message: This model's maximum "+
				"context length is 500 tokens. However, your messages resulted in %d tokens. "+
				"Please reduce the length of the messages.", used)
		}
		return nil
	}

	send := msgs
	err := generate(send)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		var res history.Result
		var rerr error
		if send, res, rerr = eino.RecoverOverflow(send, err, attempt); rerr != nil {
			fmt.Println(rerr) // not an overflow, or nothing left to drop
			return
		}
		fmt.Printf("attempt %d: %d messages, %d tokens, target %d, %d turns dropped\n",
			attempt, len(send), res.TokensAfter, res.Budget, res.DroppedTurns)
		err = generate(send)
	}
	fmt.Println("accepted:", err == nil)
	fmt.Println("latest task kept:", send[len(send)-4].Content)
	// Output:
	// attempt 1: 6 messages, 233 tokens, target 321, 3 turns dropped
	// accepted: true
	// latest task kept: Review file 3.
}

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
	// reported: history: latest turn does not fit the budget: need 158 tokens, budget 60; the Result is the smallest history: send it anyway, or trim with WithTask (its cut rung shortens the latest turn's tool results), or use a larger window
	// 4 messages
}
