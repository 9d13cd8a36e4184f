package anthropicv2

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicserver"
	"github.com/histrim/history/internal/loopserver"
)

// TestClientLoop: the v2 client's GA Messages API (client.Messages.New)
// with server compaction on (context_management set on the request's
// JSON, since the GA params do not model it) against the local Messages
// API: compaction blocks come back as blocks of a type the GA types do
// not model, are sent back as their raw JSON, first and byte for byte,
// and no request is rejected; a stateful Trimmer with the library's own
// maintenance never leaves more than four breakpoints.
func TestClientLoop(t *testing.T) {
	for _, compact := range []bool{true, false} {
		srv := &anthropicserver.Server{Backend: "anthropic", Window: 12_000}
		ts := httptest.NewServer(srv)
		opts := []option.RequestOption{option.WithBaseURL(ts.URL), option.WithAPIKey("test"), option.WithMaxRetries(0)}
		if compact {
			opts = append(opts, option.WithJSONSet("context_management", map[string]any{"edits": []any{map[string]any{
				"type": "compact_20260112", "trigger": map[string]any{"type": "input_tokens", "value": 8000}}}}),
				option.WithHeaderAdd("anthropic-beta", "compact-2026-01-12")) // compaction is a beta: its header on every request
		}
		client := anthropic.NewClient(opts...)
		system := []anthropic.TextBlockParam{{Text: loopserver.SystemPrompt, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
		params := anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024, System: system}
		var topts []history.Option
		if !compact {
			topts = []history.Option{history.WithLowWater(0.7), history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
		}
		tr := NewTrimmer(system, topts...)
		var transcript []anthropic.MessageParam
		requests := 0
		for turn := 1; requests < 80; turn++ {
			transcript = append(transcript, user(cached(text(loopserver.Task(turn)))))
			for requests < 80 {
				out, _, err := tr.Trim(transcript, 12_000)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					t.Fatal(err)
				}
				params.Messages = MarkPrefix(system, out, topts...)
				requests++
				reply, err := client.Messages.New(context.Background(), params)
				if err != nil {
					t.Fatalf("compaction %v, request %d: %v", compact, requests, err)
				}
				transcript = append(transcript, reply.ToParam())
				var results []union
				for _, b := range reply.Content {
					if b.Type == "tool_use" {
						results = append(results, result(b.ID, loopserver.ToolResult(b.ID, loopserver.Words(250, 1150))))
					}
				}
				if len(results) == 0 {
					break
				}
				transcript = append(transcript, user(results...))
			}
		}
		ts.Close()
		s := srv.Stats()
		t.Logf("compaction %v: %d requests, %d accepted, %d compactions, %d blocks back (%d byte for byte), rewrites client %d server %d, max breakpoints %d",
			compact, s.Requests, s.Accepted, s.Compactions, s.Opaque, s.Verbatim, s.ClientRewrites, s.ServerRewrites, s.MaxBreakpoints)
		if s.Requests != s.Accepted || s.Opaque != s.Verbatim || s.MaxBreakpoints > 4 || (compact && (s.Compactions == 0 || s.ClientRewrites != 0)) {
			t.Errorf("compaction %v: %+v", compact, s)
		}
	}
}
