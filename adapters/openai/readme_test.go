package openai_test

// The complete loop of the repository's docs/options.md (the loop by hand,
// every option named; it was the README's before the README showed the
// door), verbatim, compiled and run against the simulated provider, so that
// the page cannot drift from the API.

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The README block, from here to TestREADMELoop.
var cal history.Calibration // one per model; json.Marshal(&cal) to keep it across restarts

// complete trims msgs to the model's window, sends them, recovers from
// context_length_exceeded (at most 2 retries) and returns the reply with
// the history to continue from: what was sent, and the reply.
func complete(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams,
	msgs []openai.ChatCompletionMessageParamUnion, window int) (*openai.ChatCompletion, []openai.ChatCompletionMessageParamUnion, error) {
	// The input's budget: the window less the reply's room, and a margin
	// until the calibration has seen a response (docs/integration.md).
	budget := history.Budget{Window: window, Output: int(params.MaxCompletionTokens.Value)}
	if _, _, _, warm := cal.Model(); !warm {
		budget.Reserve = window / 50
	}
	opts := []history.Option{
		history.WithCalibration(&cal),                       // aim at OpenAI's count, learnt from usage
		history.WithOverhead(hopenai.Overhead(params, nil)), // tools and response format count too
		history.WithTask(-1, history.ElideOptions{}),        // keep what the agent uses (-1: no goal to pin; the latest request stays, as every latest turn does)
	}
	sent, res, err := hopenai.Trim(msgs, budget.Input(), opts...)
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
		return nil, msgs, err
	}
	params.Messages = sent
	completion, err := client.Chat.Completions.New(ctx, params)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		var rerr error
		if params.Messages, res, rerr = hopenai.RecoverOverflow(params.Messages, err, attempt, opts...); rerr != nil {
			break // not a context_length_exceeded, or nothing left to drop: err stands
		}
		completion, err = client.Chat.Completions.New(ctx, params)
	}
	if err != nil {
		return nil, msgs, err
	}
	cal.Observe(res.TokensAfter, int(completion.Usage.PromptTokens))
	return completion, append(params.Messages, completion.Choices[0].Message.ToParam()), nil
}

// End of the README block.

// TestREADMELoop runs that loop for ten tasks against a provider
// that counts 1.3x: every request succeeds.
func TestREADMELoop(t *testing.T) {
	const window = 12_000
	p := &fakeprovider.Provider{Limit: window, Factor: 1.3}
	srv := httptest.NewServer(p)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o", Tools: fakeprovider.Tools(), MaxCompletionTokens: openai.Int(1_000)}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are an agent.")}
	for task := 1; task <= 10; task++ {
		msgs = append(msgs, openai.UserMessage(fakeprovider.Task(task)))
		for step := 0; step < 10; step++ {
			completion, next, err := complete(context.Background(), client, params, msgs, window)
			if err != nil {
				t.Fatalf("task %d: %v", task, err)
			}
			msgs = next
			calls := completion.Choices[0].Message.ToolCalls
			if len(calls) == 0 {
				break
			}
			for _, c := range calls {
				msgs = append(msgs, openai.ToolMessage(fakeprovider.RunTool(c.ID), c.ID))
			}
		}
	}
	if st := p.Stats(); st.Requests < 20 {
		t.Fatalf("only %d requests reached the provider", p.Stats().Requests)
	}
}

// TestREADMEVerbatim holds the loop above to docs/options.md's: the block
// that starts with "var cal history.Calibration" in the repository's
// docs/options.md is the code between the markers of this file.
func TestREADMEVerbatim(t *testing.T) {
	readme, err := os.ReadFile("../../docs/options.md")
	if err != nil {
		t.Skipf("no docs/options.md beside the module (%v): the module is used outside the repository", err)
	}
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	r := string(readme)
	i := strings.Index(r, "var cal history.Calibration")
	j := strings.Index(r[i:], "```")
	if i < 0 || j < 0 {
		t.Fatal("docs/options.md has no loop block")
	}
	s := string(src)
	a := strings.Index(s, "// The README block, from here to TestREADMELoop.\n")
	b := strings.Index(s, "// End of the README block.")
	if a < 0 || b < 0 {
		t.Fatal("readme_test.go lost its markers")
	}
	a += len("// The README block, from here to TestREADMELoop.\n")
	if got, want := strings.TrimSpace(s[a:b]), strings.TrimSpace(r[i:i+j]); got != want {
		t.Errorf("docs/options.md's loop and readme_test.go differ:\ndocs/options.md:\n%s\n\ntest:\n%s", want, got)
	}
}
