// Command agentloop is the loop an agent runtime built on anthropic-sdk-go
// runs around every Messages API request, with the histrim Anthropic
// adapter; copy it. Before each request it trims the transcript to the
// model's window with
//
//   - a history.Calibration fed each response's usage, so that the trim
//     aims at the window as Anthropic counts it, not as the library
//     estimates it;
//   - the tool definitions counted with Overhead (history.WithOverhead);
//   - elision of old tool results (history.WithElision) and trimming of
//     the oldest steps of a long task (history.WithStepTrim);
//
// and when the API still answers "prompt is too long", it trims further
// with RecoverOverflow and retries, at most twice.
//
// It runs offline: the API is a local httptest server (the adapter's
// internal/fakeprovider) that counts 1.3 times the library's estimate, as
// a tokenizer of its own would, and from turn 20 on 1.7 times, as when the
// model behind a name changes; the real anthropic-sdk-go client talks to it.
// It prints a summary and exits 0, or 1 if an error reached the loop.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/histrim/history"
	hanthropic "github.com/histrim/history/adapters/anthropic"
	"github.com/histrim/history/adapters/anthropic/internal/fakeprovider"
)

const (
	window     = 10_000 // the model's input window, in the provider's tokens
	maxRetries = 2      // RecoverOverflow attempts per request
	turns      = 30
)

func main() {
	prov := fakeprovider.New(1.3, window)
	srv := httptest.NewServer(prov)
	defer srv.Close()
	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-ant-example"))

	a := newAgent(client, anthropic.MessageNewParams{
		Model:     fakeprovider.Model,
		MaxTokens: 1024,
		System:    []anthropic.TextBlockParam{{Text: "You are a coding agent. Use the tools to inspect and change the repository."}},
		Tools:     fakeprovider.Tools(),
	})
	ctx := context.Background()
	for turn := 1; turn <= turns; turn++ {
		if turn == 20 {
			prov.SetFactor(1.7)
		}
		if err := a.runTurn(ctx, fakeprovider.Task(turn)); err != nil {
			fmt.Fprintf(os.Stderr, "agentloop: turn %d: %v\n", turn, err)
			os.Exit(1)
		}
	}
	scale, overhead, margin, _ := a.cal.Model()
	fmt.Printf("%d turns, %d requests (%d trimmed), transcript of %d messages\n", turns, a.requests, a.trimmed, len(a.transcript))
	fmt.Printf("rejected for length: %d, all recovered by RecoverOverflow\n", a.overflows)
	fmt.Printf("trimmed requests used %.1f%% of the window on average, as the provider counts\n", 100*float64(a.promptSum)/float64(max(a.trimmed, 1))/window)
	fmt.Printf("calibration: provider = %.3f x estimate + %.0f tokens (margin %.0f)\n", scale, overhead, margin)
}

// agent keeps the whole transcript and sends a trimmed view of it with
// every request.
type agent struct {
	client     anthropic.Client
	params     anthropic.MessageNewParams // model, system prompt, tools: the same on every request
	transcript []anthropic.MessageParam
	cal        history.Calibration // one per model; save it with json.Marshal(&cal) across restarts
	opts       []history.Option

	requests, trimmed, overflows, promptSum int
}

func newAgent(client anthropic.Client, params anthropic.MessageNewParams) *agent {
	a := &agent{client: client, params: params}
	a.opts = []history.Option{
		history.WithCalibration(&a.cal),
		history.WithOverhead(hanthropic.Overhead(params, nil)), // the tools are sent with every request
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	return a
}

// runTurn sends the user's task and runs the tools the model calls until
// it answers.
func (a *agent) runTurn(ctx context.Context, task string) error {
	a.transcript = append(a.transcript, anthropic.NewUserMessage(anthropic.NewTextBlock(task)))
	for {
		reply, err := a.send(ctx)
		if err != nil {
			return err
		}
		a.transcript = append(a.transcript, reply.ToParam())
		if reply.StopReason != anthropic.StopReasonToolUse {
			return nil
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range reply.Content {
			if call, ok := b.AsAny().(anthropic.ToolUseBlock); ok {
				results = append(results, anthropic.NewToolResultBlock(call.ID, fakeprovider.RunTool(call.ID), false))
			}
		}
		a.transcript = append(a.transcript, anthropic.NewUserMessage(results...))
	}
}

// send trims the transcript to the window and sends it; when the API
// rejects it for its length, it trims further and retries, at most
// maxRetries times. The transcript itself is never cut: what was dropped
// from the request is still there for the next one to reconsider.
func (a *agent) send(ctx context.Context) (*anthropic.Message, error) {
	msgs, res, err := hanthropic.Trim(a.params.System, a.transcript, window, a.opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err // invalid messages or options
	}
	// ErrLatestTurnTooLarge: msgs is the smallest request possible; send
	// it, and let the API say whether it fits.
	for attempt := 1; ; attempt++ {
		params := a.params
		params.Messages = msgs
		a.requests++
		reply, err := a.client.Messages.New(ctx, params)
		if err == nil {
			u := reply.Usage
			a.cal.Observe(res.TokensAfter, int(u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens))
			if res.Trimmed {
				a.trimmed++
				a.promptSum += int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
			}
			return reply, nil
		}
		if attempt > maxRetries {
			return nil, err
		}
		var rerr error
		msgs, res, rerr = hanthropic.RecoverOverflow(a.params.System, msgs, err, attempt, a.opts...)
		switch {
		case errors.Is(rerr, history.ErrNotOverflow):
			return nil, err // a rate limit, an overload...: not ours to fix
		case rerr != nil:
			return nil, rerr // nothing left to drop; it wraps err
		}
		a.overflows++
	}
}
