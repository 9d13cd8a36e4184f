package langchaingo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/langchaingo"
	"github.com/tmc/langchaingo/llms"
)

func ExampleTrim() {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are a weather bot."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Tell me about clouds. "+strings.Repeat("Be thorough. ", 60)),
		llms.TextParts(llms.ChatMessageTypeAI, strings.Repeat("Clouds are water. ", 60)),
		llms.TextParts(llms.ChatMessageTypeHuman, "What is the weather in Paris?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{
			ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
			ToolCallID: "call_1", Name: "weather", Content: `{"temp_c":21}`}}},
		llms.TextParts(llms.ChatMessageTypeAI, "It is 21°C in Paris."),
	}

	out, res, err := langchaingo.Trim(msgs, 120)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out {
		switch p := m.Parts[0].(type) {
		case llms.ToolCall:
			fmt.Printf("%s: call %s\n", m.Role, p.FunctionCall.Name)
		case llms.ToolCallResponse:
			fmt.Printf("%s: %s answers %s\n", m.Role, p.Content, p.ToolCallID)
		case llms.TextContent:
			fmt.Printf("%s: %s\n", m.Role, p.Text)
		}
	}
	fmt.Printf("dropped %d turn (%d messages), sending %d tokens\n", res.DroppedTurns, res.DroppedMessages, res.TokensAfter)
	fmt.Println("valid:", langchaingo.Validate(out) == nil)
	// Output:
	// system: You are a weather bot.
	// human: [earlier turns omitted to fit the context window]
	// human: What is the weather in Paris?
	// ai: call weather
	// tool: {"temp_c":21} answers call_1
	// ai: It is 21°C in Paris.
	// dropped 1 turn (2 messages), sending 73 tokens
	// valid: true
}

// A provider rejected a request for its length: RecoverOverflow trims the
// messages that were sent, using the sizes the error states, and the
// request is retried.
func ExampleRecoverOverflow() {
	var sent []llms.MessageContent
	for i := 1; i <= 4; i++ {
		sent = append(sent,
			llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("Question %d: %s", i, strings.Repeat("details ", 40))),
			llms.TextParts(llms.ChatMessageTypeAI, fmt.Sprintf("Answer %d: %s", i, strings.Repeat("more ", 40))))
	}
	// The error LangChainGo's OpenAI provider returns.
	providerErr := errors.New("API returned unexpected status code: 400: This model's maximum context length is 300 tokens. " +
		"However, your messages resulted in 400 tokens. Please reduce the length of the messages.")

	retry, res, err := langchaingo.RecoverOverflow(sent, providerErr, 1)
	if err != nil {
		fmt.Println(err) // history.ErrNotOverflow, or a *history.RecoverError: surface providerErr
		return
	}
	fmt.Printf("dropped %d of 4 turns: %d tokens, aiming at %d\n", res.DroppedTurns, res.TokensAfter, res.Budget)
	for _, m := range retry {
		text := m.Parts[0].(llms.TextContent).Text
		fmt.Printf("%s: %s\n", m.Role, strings.TrimSpace(text[:min(len(text), 40)]))
	}
	// Output:
	// dropped 2 of 4 turns: 243 tokens, aiming at 307
	// human: [earlier turns omitted to fit the contex
	// human: Question 3: details details details deta
	// ai: Answer 3: more more more more more more
	// human: Question 4: details details details deta
	// ai: Answer 4: more more more more more more
}

// NewModel wraps any llms.Model: every GenerateContent call is trimmed to
// the budget (tools included), retried after a context overflow, and
// reported.
func ExampleNewModel() {
	var llm llms.Model = echoModel{} // openai.New(...), anthropic.New(...), ...
	cal := &history.Calibration{}
	model := langchaingo.NewModel(llm, langchaingo.Config{
		Budget:      300,
		Options:     []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()},
		Calibration: cal,
		OnEvent: func(ev langchaingo.Event) {
			fmt.Printf("attempt %d: %d messages (%d turns dropped), %d tokens sent, provider counted %d\n",
				ev.Attempt, ev.Messages, ev.Result.DroppedTurns, ev.Result.TokensAfter, ev.PromptTokens)
		},
	})
	var msgs []llms.MessageContent
	for i := 1; i <= 3; i++ {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("Question %d: %s", i, strings.Repeat("details ", 60))))
		resp, err := model.GenerateContent(context.Background(), msgs, llms.WithTemperature(0))
		if err != nil {
			fmt.Println(err)
			return
		}
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeAI, resp.Choices[0].Content))
	}
	scale, _, _, _ := cal.Model()
	fmt.Printf("the provider counts %.2f tokens per Heuristic token\n", scale)
	// Output:
	// attempt 0: 1 messages (0 turns dropped), 101 tokens sent, provider counted 111
	// attempt 0: 3 messages (0 turns dropped), 236 tokens sent, provider counted 259
	// attempt 0: 4 messages (1 turns dropped), 251 tokens sent, provider counted 276
	// the provider counts 1.10 tokens per Heuristic token
}

// echoModel stands for a provider: it answers every request and reports
// 10% more prompt tokens than the Heuristic counts, as the OpenAI
// provider's GenerationInfo does.
type echoModel struct{}

func (echoModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	hist, err := langchaingo.ToHistory(msgs)
	if err != nil {
		return nil, err
	}
	prompt := history.Estimate(hist, nil) * 11 / 10
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content:        "Noted. " + strings.Repeat("fine ", 30),
		GenerationInfo: map[string]any{"PromptTokens": prompt},
	}}}, nil
}

func (m echoModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// A Memory trims the conversation it stores to its budget whole turns at a
// time, and keeps the latest exchange even when it alone is larger.
func ExampleNewMemory() {
	ctx := context.Background()
	mem := langchaingo.NewMemory(200)
	mem.ReturnMessages = true
	save := func(in, out string) {
		if err := mem.SaveContext(ctx, map[string]any{"input": in}, map[string]any{"output": out}); err != nil {
			fmt.Println(err)
		}
	}
	save("Hi, I am Ada.", "Hello Ada!")
	save("Summarise this log: "+strings.Repeat("GET /index.html 200; ", 60), "Sixty successful requests for /index.html.")
	vars, err := mem.LoadMemoryVariables(ctx, map[string]any{"input": "What is my name?"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range vars["history"].([]llms.ChatMessage) {
		fmt.Printf("%s: %.40s\n", m.GetType(), m.GetContent())
	}
	// Output:
	// human: [earlier turns omitted to fit the contex
	// human: Summarise this log: GET /index.html 200;
	// ai: Sixty successful requests for /index.htm
}
