// Command agentloop is the complete loop a runtime on openai-go runs to
// keep every chat completion request inside the model's window: trim before
// each request (hopenai.Trim with a history.Calibration, the request's
// hopenai.Overhead, elision and step trimming), send with the real client,
// teach the calibration the provider's usage.prompt_tokens, and recover
// from context_length_exceeded with hopenai.RecoverOverflow, at most twice.
//
// It runs offline against a local endpoint (internal/fakeprovider) that
// counts 1.3 times the library's estimate plus its 20 tool schemas, and
// prints a summary. Copy agent.complete; the rest is the simulation.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// window is the model's context window, in the provider's tokens. The
// runtime states it as the budget; the calibration learns what fits.
const window = 12_000

// agent holds what a runtime keeps per conversation (and per model).
type agent struct {
	client openai.Client
	params openai.ChatCompletionNewParams // model and tools; Messages set per request
	msgs   []openai.ChatCompletionMessageParamUnion
	cal    history.Calibration // one per model: keep it (json.Marshal) across restarts

	requests, overflows, trimmed, promptTrimmed int
}

// complete trims a.msgs, sends them, recovers from a length rejection, and
// appends the reply to the history that was sent, which becomes a.msgs.
func (a *agent) complete(ctx context.Context) (*openai.ChatCompletion, error) {
	opts := []history.Option{
		history.WithCalibration(&a.cal),                       // aim at the provider's count
		history.WithOverhead(hopenai.Overhead(a.params, nil)), // the tools count too
		history.WithElision(history.ElideOptions{}),           // old tool results go first
		history.WithStepTrim(),                                // then old steps of a long task
		// history.WithOnTrim(history.LogTrims(logger)) logs every trim.
	}
	sent, res, err := hopenai.Trim(a.msgs, window, opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err // invalid messages or options
	}
	// (With ErrLatestTurnTooLarge, sent is the smallest history: try it.)
	params := a.params
	params.Messages = sent
	a.requests++
	completion, err := a.client.Chat.Completions.New(ctx, params)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		var rerr error
		if params.Messages, res, rerr = hopenai.RecoverOverflow(params.Messages, err, attempt, opts...); rerr != nil {
			break // not an overflow, or nothing left to drop: err stands
		}
		a.overflows++
		a.requests++
		completion, err = a.client.Chat.Completions.New(ctx, params)
	}
	if err != nil {
		return nil, err
	}
	a.cal.Observe(res.TokensAfter, int(completion.Usage.PromptTokens))
	if res.Trimmed {
		a.trimmed++
		a.promptTrimmed += int(completion.Usage.PromptTokens)
	}
	if len(completion.Choices) == 0 {
		return nil, errors.New("agentloop: no choice in the completion")
	}
	a.msgs = append(params.Messages, completion.Choices[0].Message.ToParam())
	return completion, nil
}

func main() {
	provider := &fakeprovider.Provider{Limit: window, Factor: 1.3}
	srv := httptest.NewServer(provider)
	defer srv.Close()
	a := &agent{
		client: openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-local")),
		params: openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Tools: fakeprovider.Tools()},
		msgs:   []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools before you answer.")},
	}
	ctx := context.Background()
	const turns = 30
	for turn := 1; turn <= turns; turn++ {
		a.msgs = append(a.msgs, openai.UserMessage(fakeprovider.Task(turn)))
		for {
			completion, err := a.complete(ctx)
			if err != nil {
				fmt.Fprintf(os.Stderr, "agentloop: turn %d: %v\n", turn, err)
				os.Exit(1)
			}
			calls := completion.Choices[0].Message.ToolCalls
			if len(calls) == 0 {
				break
			}
			for _, c := range calls {
				a.msgs = append(a.msgs, openai.ToolMessage(fakeprovider.RunTool(c.ID), c.ID))
			}
		}
	}
	st := provider.Stats()
	scale, overhead, margin, _ := a.cal.Model()
	fmt.Printf("%d turns, %d requests (%d trimmed), %d overflows recovered, %d pairing rejections\n",
		turns, a.requests, a.trimmed, a.overflows, st.PairingErrors)
	fmt.Printf("mean provider prompt of trimmed requests: %.1f%% of the %d-token window\n",
		100*float64(a.promptTrimmed)/float64(max(a.trimmed, 1))/window, window)
	fmt.Printf("learnt: provider = %.3f x library + %.0f tokens (margin %.0f)\n", scale, overhead, margin)
	if st.PairingErrors > 0 || st.Overflows != a.overflows {
		os.Exit(1)
	}
}
