// Command agentloop runs a go-openai agent loop against a local OpenAI
// chat-completions endpoint with a 16k window that counts 1.3 times the
// library's estimate and answers an overflow with OpenAI's 400: every
// request is trimmed with goopenai.Trim (calibrated, tools counted,
// elision and step trimming), an overflow is recovered with
// goopenai.RecoverOverflow, and each response's usage feeds the
// calibration. It prints what the provider saw.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/goopenai"
	"github.com/histrim/history/internal/loopserver"
	openai "github.com/sashabaranov/go-openai"
)

func main() {
	srv, ts := loopserver.ExampleOpenAI()
	defer ts.Close()
	cfg := openai.DefaultConfig("sk-local")
	cfg.BaseURL = ts.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	ctx := context.Background()

	req := openai.ChatCompletionRequest{Model: "local-16k"}
	for _, name := range loopserver.ToolNames {
		req.Tools = append(req.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: loopserver.ToolDescription(name), Parameters: loopserver.ToolParameters()}})
	}
	var cal history.Calibration
	opts := []history.Option{
		history.WithCalibration(&cal),
		history.WithOverhead(goopenai.Overhead(req, nil)),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: loopserver.SystemPrompt}}
	trimmed := 0
	for turn := 1; turn <= loopserver.ExampleTurns; turn++ {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: loopserver.Task(turn)})
		for {
			sent, res, err := goopenai.Trim(msgs, loopserver.ExampleWindow, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				log.Fatal(err)
			}
			req.Messages = sent
			resp, err := client.CreateChatCompletion(ctx, req)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				if req.Messages, res, rerr = goopenai.RecoverOverflow(req.Messages, err, attempt, opts...); rerr != nil {
					break // not an overflow, or nothing left to drop: err stands
				}
				resp, err = client.CreateChatCompletion(ctx, req)
			}
			if err != nil {
				log.Fatal(err)
			}
			cal.Observe(res.TokensAfter, resp.Usage.PromptTokens)
			if res.Trimmed {
				trimmed++
			}
			reply := resp.Choices[0].Message
			msgs = append(req.Messages, reply)
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID,
					Content: loopserver.ToolResult(c.ID, loopserver.Words(150, 500))})
			}
		}
	}
	if err := loopserver.Report(srv.Stats(), fmt.Sprintf("%d messages kept whole", len(msgs)), trimmed, 0, &cal); err != nil {
		log.Fatal(err)
	}
}
