package goopenai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	hgoopenai "github.com/histrim/history/adapters/goopenai"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	openai "github.com/sashabaranov/go-openai"
)

// TestDoor runs the loop through the door with the real go-openai client:
// the request names the model and the Trimmer takes its window from the
// table, its output room from MaxCompletionTokens and the tools as
// overhead, and learns the provider's count from each response's usage.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "goopenai", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, model string) {
		srv := &loopserver.OpenAI{Judge: l, Window: l.Window}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		cfg := openai.DefaultConfig("sk-test")
		cfg.BaseURL = ts.URL + "/v1"
		client := openai.NewClientWithConfig(cfg)
		ctx := context.Background()
		tr := hgoopenai.NewTrimmer()
		req := openai.ChatCompletionRequest{Model: model, Tools: tools(), MaxCompletionTokens: 1024,
			Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: loopserver.SystemPrompt}}}
		for turn := 1; turn <= l.Turns; turn++ {
			task := loopserver.Task(turn)
			l.Turn(turn, task)
			req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: task})
		steps:
			for step := 0; ; step++ {
				if step > 8 {
					t.Fatalf("turn %d does not end", turn)
				}
				send, res, err := tr.Fit(ctx, req)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					l.Error(fmt.Errorf("Fit: %w", err))
					break
				}
				resp, err := client.CreateChatCompletion(ctx, send)
				for attempt := 1; err != nil && attempt <= 2 && history.IsContextOverflow(err); attempt++ {
					var rerr error
					if send.Messages, res, rerr = tr.RecoverOverflow(req.Messages, err, attempt); rerr != nil {
						l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
						break steps
					}
					resp, err = client.CreateChatCompletion(ctx, send)
				}
				if err != nil {
					l.Error(err)
					break
				}
				if v := tr.Observe(resp.Usage); v == history.VerdictInvalid {
					t.Errorf("Observe(%+v) = VerdictInvalid", resp.Usage)
				}
				l.Accepted(res.Trimmed, resp.Usage.PromptTokens)
				reply := resp.Choices[0].Message
				req.Messages = append(req.Messages, reply)
				if len(reply.ToolCalls) == 0 {
					break
				}
				for _, c := range reply.ToolCalls {
					req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID,
						Content: loopserver.ToolResult(c.ID, l.Words)})
				}
			}
		}
		for _, p := range srv.Problems() {
			t.Error("server: " + p)
		}
	})
}
