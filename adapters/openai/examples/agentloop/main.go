// Command agentloop is the complete loop a runtime on openai-go runs to
// keep every chat completion request inside the model's window, through
// the door: one hopenai.Trimmer per conversation, Fit before each request
// (the model's window and output room from its name, the tools counted,
// the exact counter, a Calibration the Trimmer owns), send with the real
// client, recover from context_length_exceeded with RecoverOverflow on the
// same transcript, at most twice, and Observe the response's usage.
//
// It runs offline against a local endpoint (internal/fakeprovider) that
// counts 1.3 times the library's estimate plus its 20 tool schemas, with
// the window of the model it names (gpt-3.5-turbo: 16,385 tokens), and
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
	"github.com/histrim/history/models"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// model is the model the agent calls: its name is all the door needs.
const model = "gpt-3.5-turbo"

// agent holds what a runtime keeps per conversation.
type agent struct {
	client openai.Client
	params openai.ChatCompletionNewParams // model, tools, and the whole transcript as Messages
	tr     *hopenai.Trimmer               // one per conversation

	requests, overflows, trimmed, promptTrimmed int
}

// complete sends the transcript through the door, recovers from a length
// rejection, learns the provider's count, and appends the reply to the
// transcript.
func (a *agent) complete(ctx context.Context) (*openai.ChatCompletion, error) {
	send, res, err := a.tr.Fit(ctx, a.params)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, err // an unknown model (models.ErrUnknownModel), invalid messages
	}
	// (With ErrLatestTurnTooLarge, send holds the smallest history: try it.)
	a.requests++
	completion, err := a.client.Chat.Completions.New(ctx, send)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		var rerr error
		if send.Messages, res, rerr = a.tr.RecoverOverflow(a.params.Messages, err, attempt); rerr != nil {
			break // not an overflow, or nothing left to drop: err stands
		}
		a.overflows++
		a.requests++
		completion, err = a.client.Chat.Completions.New(ctx, send)
	}
	if err != nil {
		return nil, err
	}
	a.tr.Observe(completion.Usage)
	if res.Trimmed {
		a.trimmed++
		a.promptTrimmed += int(completion.Usage.PromptTokens)
	}
	if len(completion.Choices) == 0 {
		return nil, errors.New("agentloop: no choice in the completion")
	}
	a.params.Messages = append(a.params.Messages, completion.Choices[0].Message.ToParam())
	return completion, nil
}

func main() {
	m, err := models.Lookup(model)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
	provider := &fakeprovider.Provider{Limit: m.Window, Factor: 1.3}
	srv := httptest.NewServer(provider)
	defer srv.Close()
	a := &agent{
		client: openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-local")),
		params: openai.ChatCompletionNewParams{Model: model, Tools: fakeprovider.Tools(),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools before you answer.")}},
		tr: hopenai.NewTrimmer(),
	}
	ctx := context.Background()
	const turns = 30
	for turn := 1; turn <= turns; turn++ {
		a.params.Messages = append(a.params.Messages, openai.UserMessage(fakeprovider.Task(turn)))
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
				a.params.Messages = append(a.params.Messages, openai.ToolMessage(fakeprovider.RunTool(c.ID), c.ID))
			}
		}
	}
	st := provider.Stats()
	fmt.Printf("%s: window %d from its name; %d turns, %d requests (%d trimmed), %d overflows recovered, %d pairing rejections\n",
		model, m.Window, turns, a.requests, a.trimmed, a.overflows, st.PairingErrors)
	fmt.Printf("mean provider prompt of trimmed requests: %.1f%% of the window\n",
		100*float64(a.promptTrimmed)/float64(max(a.trimmed, 1))/float64(m.Window))
	if st.PairingErrors > 0 || st.Overflows != a.overflows {
		os.Exit(1)
	}
}
