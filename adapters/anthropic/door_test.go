package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
	"github.com/histrim/history/adapters/anthropic/internal/fakeprovider"
	"github.com/histrim/history/internal/adaptertest"
)

// TestDoor runs the loop through the door with the real client: the
// request names the model and the Trimmer takes its window from the
// table, its output room from max_tokens, the system prompt from the
// request and the tools as overhead, marks the new prefix for the cache
// within the request's four breakpoints, and learns the provider's count
// from each response's usage (input and cache tokens together).
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "anthropic", "claude-haiku-4-5", func(t *testing.T, l *adaptertest.Loop, model string) {
		prov := fakeprovider.New(1, l.Window)
		prov.Judge = l
		srv := httptest.NewServer(prov)
		defer srv.Close()
		client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
		params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 1024,
			System: []anthropic.TextBlockParam{{Text: "You are a coding agent. Use the tools to inspect and change the repository."}},
			Tools:  fakeprovider.Tools()}
		tr := hanthropic.NewTrimmer(nil)
		ctx := context.Background()
		for turn := 1; turn <= l.Turns; turn++ {
			text := fakeprovider.Task(turn)
			l.Turn(turn, text)
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(text)))
		steps:
			for step := 0; ; step++ {
				if step > 6 {
					t.Fatalf("turn %d: more steps than the script has", turn)
				}
				send, res, err := tr.Fit(ctx, params)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					l.Error(fmt.Errorf("Fit: %w", err))
					break
				}
				if err := hanthropic.ValidateRequest(send); err != nil {
					t.Errorf("turn %d: the door's request does not validate: %v", turn, err)
				}
				reply, err := client.Messages.New(ctx, send)
				for attempt := 1; err != nil && attempt <= 2 && history.IsContextOverflow(err); attempt++ {
					var rerr error
					if send.Messages, res, rerr = tr.RecoverOverflow(params.Messages, err, attempt); rerr != nil {
						l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
						break steps
					}
					reply, err = client.Messages.New(ctx, send)
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
				if reply.StopReason != anthropic.StopReasonToolUse {
					break
				}
				var results []anthropic.ContentBlockParamUnion
				for _, b := range reply.Content {
					if b.Type == "tool_use" {
						results = append(results, anthropic.NewToolResultBlock(b.ID, fakeprovider.RunToolWords(b.ID, l.Words), false))
					}
				}
				params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
			}
		}
		if ps := prov.Stats(); ps.Malformed != 0 {
			t.Errorf("the provider rejected %d requests as malformed", ps.Malformed)
		}
	})
}
