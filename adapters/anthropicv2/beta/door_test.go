package beta

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/anthropicserver"
	"github.com/histrim/history/internal/loopserver"
)

// TestDoor runs the loop through the door with the real v2 client's beta Messages API: the
// request names the model and the Trimmer takes its window from the
// table, its output room from max_tokens, the system prompt from the
// request and the tools as overhead, marks the new prefix for the cache
// within the request's four breakpoints, and learns the provider's count
// from each response's usage (input and cache tokens).
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "anthropicv2/beta", "claude-haiku-4-5-20251001", func(t *testing.T, l *adaptertest.Loop, model string) {
		srv := &anthropicserver.Server{Backend: "anthropic", Window: l.Window, Judge: l}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		client := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
		params := anthropic.BetaMessageNewParams{Model: anthropic.Model(model), MaxTokens: 1024,
			System: []anthropic.BetaTextBlockParam{{Text: loopserver.SystemPrompt}}, Tools: loopTools()}
		tr := NewTrimmer(nil)
		ctx := context.Background()
		for turn := 1; turn <= l.Turns; turn++ {
			task := loopserver.Task(turn)
			l.Turn(turn, task)
			params.Messages = append(params.Messages, anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(task)))
		steps:
			for step := 0; ; step++ {
				if step > 8 {
					t.Fatalf("turn %d does not end", turn)
				}
				send, res, err := tr.Fit(ctx, params)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					l.Error(fmt.Errorf("Fit: %w", err))
					break
				}
				if err := ValidateRequest(send); err != nil {
					t.Errorf("turn %d: the door's request does not validate: %v", turn, err)
				}
				reply, err := client.Beta.Messages.New(ctx, send)
				for attempt := 1; err != nil && attempt <= 2 && history.IsContextOverflow(err); attempt++ {
					var rerr error
					if send.Messages, res, rerr = tr.RecoverOverflow(params.Messages, err, attempt); rerr != nil {
						l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
						break steps
					}
					reply, err = client.Beta.Messages.New(ctx, send)
				}
				if err != nil {
					l.Error(err)
					break
				}
				if v := tr.Observe(reply.Usage); v == history.VerdictInvalid {
					t.Errorf("Observe(%+v) = VerdictInvalid", reply.Usage)
				}
				u := reply.Usage
				l.Accepted(res.Trimmed, int(u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens))
				params.Messages = append(params.Messages, reply.ToParam())
				var results []anthropic.BetaContentBlockParamUnion
				for _, b := range reply.Content {
					if b.Type == "tool_use" {
						results = append(results, anthropic.NewBetaToolResultBlock(b.ID, loopserver.ToolResult(b.ID, l.Words), false))
					}
				}
				if len(results) == 0 {
					break
				}
				params.Messages = append(params.Messages, anthropic.NewBetaUserMessage(results...))
			}
		}
	})
}
