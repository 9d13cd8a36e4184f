package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/histrim/history/internal/loopserver"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// windowCheck is a provider in front of fakeprovider's scripted model that
// checks what OpenAI checks: the prompt (the library's Heuristic estimate
// of the messages, plus the tools JSON) and the reply's cap
// (max_completion_tokens) together within the window. It answers the
// summary requests (those capped at summaryCap) with a summary itself.
type windowCheck struct {
	inner              http.Handler
	window, summaryCap int

	mu                                   sync.Mutex
	requests, tooLong                    int
	summaries, summaryTooLong, cacheSafe int
}

func (h *windowCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages            []openai.ChatCompletionMessageParamUnion `json:"messages"`
		Tools               json.RawMessage                          `json:"tools"`
		MaxCompletionTokens int                                      `json:"max_completion_tokens"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hist, err := hopenai.ToHistory(req.Messages)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	prompt := history.Estimate(hist, nil) + history.EstimateText(string(req.Tools))
	summary := req.MaxCompletionTokens == h.summaryCap
	over := prompt+req.MaxCompletionTokens > h.window
	h.mu.Lock()
	h.requests++
	if over {
		h.tooLong++
	}
	if summary {
		h.summaries++
		if over {
			h.summaryTooLong++
		}
		if len(req.Tools) > 0 { // the cache-safe form repeats the last request, tools included
			h.cacheSafe++
		}
	}
	h.mu.Unlock()
	if over {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			h.window, prompt+req.MaxCompletionTokens, prompt, req.MaxCompletionTokens)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": msg, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
		return
	}
	if summary {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-summary", "object": "chat.completion", "created": 1700000000, "model": "gpt-test",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": "Task: the tasks so far. Progress: done."}}},
			"usage": map[string]int{"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12},
		})
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.inner.ServeHTTP(w, r)
}

// TestSummariesRecipe runs docs/summaries.md's agent loop (a background
// Summarizer on the conversation's client, a Trimmer with the task
// preset) for 30 turns on a 12,000-token window, where every request's
// prompt and reply cap must fit the window: the recipe's InputTokens (the
// window less the summary's reply) keeps every summary request within
// it. With InputTokens 100,000 and the window as the budget, as the page
// had it, 10 of 11 summary requests were too long.
func TestSummariesRecipe(t *testing.T) {
	const window, maxOutput = 12_000, 2_000
	check := &windowCheck{inner: &fakeprovider.Provider{Limit: 1 << 30, Factor: 1}, window: window, summaryCap: 1500}
	srv := httptest.NewServer(check)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "gpt-test", Tools: fakeprovider.Tools(), MaxCompletionTokens: openai.Int(maxOutput)}

	// The recipe, as docs/summaries.md writes it.
	budget := history.Budget{Window: window, Output: maxOutput}.Input()
	sum := hopenai.NewSummarizer(client, hopenai.SummarizerConfig{
		Summary: history.SummaryOptions{MaxTokens: 1500, InputTokens: window - 1500 - 500, Background: true},
	})
	tr := hopenai.NewTrimmer(sum.Option(), history.WithLowWater(0.7), history.WithTask(1, history.ElideOptions{}),
		history.WithOverhead(hopenai.Overhead(params, nil)))

	transcript := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools to inspect the repository before you answer.")}
	words := loopserver.Words(250, 1150)
	for turn := 1; turn <= 30; turn++ {
		transcript = append(transcript, openai.UserMessage(fakeprovider.Task(turn)))
		for step := 0; ; step++ {
			if step > 8 {
				t.Fatalf("turn %d does not end", turn)
			}
			sent, _, err := tr.Trim(transcript, budget)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("turn %d: %v", turn, err)
			}
			params.Messages = sent
			sum.Sent(params)
			completion, err := client.Chat.Completions.New(ctx, params)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				var rerr error
				if params.Messages, _, rerr = tr.RecoverOverflow(transcript, err, attempt); rerr != nil {
					break
				}
				completion, err = client.Chat.Completions.New(ctx, params)
			}
			if err != nil {
				t.Fatalf("turn %d: %v", turn, err)
			}
			reply := completion.Choices[0].Message
			transcript = append(transcript, reply.ToParam())
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				transcript = append(transcript, openai.ToolMessage(fakeprovider.RunToolWords(c.ID, words), c.ID))
			}
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	check.mu.Lock()
	defer check.mu.Unlock()
	t.Logf("%d requests, %d too long; %d summary requests (%d cache-safe), %d too long",
		check.requests, check.tooLong, check.summaries, check.cacheSafe, check.summaryTooLong)
	if check.summaries == 0 {
		t.Fatal("no summary request: the loop does not exercise the recipe")
	}
	if check.summaryTooLong > 0 {
		t.Errorf("%d of %d summary requests exceeded the %d-token window", check.summaryTooLong, check.summaries, window)
	}
	if check.tooLong > check.summaryTooLong+1 {
		t.Errorf("%d conversation requests exceeded the window", check.tooLong-check.summaryTooLong)
	}
}
