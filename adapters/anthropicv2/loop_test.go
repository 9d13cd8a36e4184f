package anthropicv2

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

// loopWindow is the window of the local Messages API in TestStatefulLoop.
const loopWindow = 12_000

// loopTools are the script's twenty tools, sent on every request.
func loopTools() []anthropic.ToolUnionParam {
	tools := make([]anthropic.ToolUnionParam, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		tools[i] = anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: loopserver.ToolParameters()["properties"]}, name)
		tools[i].OfTool.Description = anthropic.String(loopserver.ToolDescription(name))
	}
	return tools
}

// runStateful runs l.Turns user turns of the script through the real v2
// client (client.Messages.New) against the local Messages API, which
// counts and checks every request through l (l.Window its window): one
// Trimmer over the whole transcript (low-water mark 0.7, elision, step
// trimming, the tools as overhead; the Calibration when calibrate is set,
// fed every response's usage) trims to l.Budget, and recovers from "prompt
// is too long" at most twice. Errors that would reach the caller are
// recorded in l, and the loop goes on with the next turn.
func runStateful(t *testing.T, l *adaptertest.Loop, calibrate bool) {
	t.Helper()
	srv := &anthropicserver.Server{Backend: "anthropic", Window: l.Window, Judge: l}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	system := []anthropic.TextBlockParam{{Text: loopserver.SystemPrompt}}
	params := anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 1024, System: system, Tools: loopTools()}
	var cal history.Calibration
	opts := []history.Option{history.WithOverhead(Overhead(params, nil)), history.WithLowWater(0.7),
		history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
	if calibrate {
		opts = append(opts, history.WithCalibration(&cal))
	}
	tr := NewTrimmer(system, opts...)
	var transcript []anthropic.MessageParam
	ctx := context.Background()
	for turn := 1; turn <= l.Turns; turn++ {
		task := loopserver.Task(turn)
		l.Turn(turn, task)
		transcript = append(transcript, anthropic.NewUserMessage(anthropic.NewTextBlock(task)))
	steps:
		for step := 0; ; step++ {
			if step > 8 {
				t.Fatalf("turn %d does not end", turn)
			}
			out, res, err := tr.Trim(transcript, l.Budget)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			params.Messages = out
			reply, err := client.Messages.New(ctx, params)
			for attempt := 1; err != nil && attempt <= 2 && history.IsContextOverflow(err); attempt++ {
				l.Rejected(attempt-1, res, &cal)
				var rerr error
				if params.Messages, res, rerr = tr.RecoverOverflow(transcript, err, attempt); rerr != nil {
					l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
					break steps
				}
				reply, err = client.Messages.New(ctx, params)
			}
			if err != nil {
				l.Error(err)
				break
			}
			u := reply.Usage
			prompt := int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
			if calibrate {
				cal.Observe(res.TokensAfter, prompt)
			}
			l.Accepted(res.Trimmed, prompt)
			transcript = append(transcript, reply.ToParam())
			var results []anthropic.ContentBlockParamUnion
			for _, b := range reply.Content {
				if b.Type == "tool_use" {
					results = append(results, anthropic.NewToolResultBlock(b.ID, loopserver.ToolResult(b.ID, l.Words), false))
				}
			}
			if len(results) == 0 {
				break
			}
			transcript = append(transcript, anthropic.NewUserMessage(results...))
		}
	}
	if s := srv.Stats(); s.Requests != l.Stats().Requests {
		t.Errorf("the server answered %d requests, the loop counted %d (rejected %v)", s.Requests, l.Stats().Requests, s.Rejected)
	}
}

// TestStatefulLoop runs the loop with the Trimmer against a provider
// counting 1.3 times the library's estimate, with and without a
// Calibration, at a budget of the window and of 1.25 times it (issue 33:
// what the provider said about its limit bounds every later plan; at
// most 1 rejection after the first recovery).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "anthropicv2", loopWindow, runStateful)
}
