// Code generated from the GA package's file of the same name by rename.sed (go generate); DO NOT EDIT.

package beta

import (
	"context"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
)

// Summarizer is a ready-made [history.Summarizer] on the Messages API, a
// model call (docs/summaries.md), as the v1 adapter's: Summarize,
// Sent(params), which records each request the conversation sends, and
// Option, for the Trimmer:
//
//	sum := hbeta.NewSummarizer(client, hbeta.SummarizerConfig{})
//	tr := hbeta.NewTrimmer(params.System, sum.Option(), history.WithLowWater(0.7))
//	// before every request:
//	params.Messages, _, err = tr.Trim(transcript, window)
//	sum.Sent(params)
//	msg, err := client.Beta.Messages.New(ctx, params)
//
// Its summary request is the last request recorded (system prompt, tools,
// thinking, tool choice, cache_control breakpoints and messages as they
// were, a leading compaction block included), the instruction appended as
// a user message (the API joins it to a last user message, as it joins
// any), so that the API reads the conversation from its prompt cache, and
// max_tokens set for the reply:
//
//   - the reply's cap plus thinking.budget_tokens when thinking is enabled
//     (budget_tokens must stay below max_tokens);
//   - with adaptive or between_tools thinking, which have no budget and
//     think within max_tokens, the larger of the reply's cap and the last
//     request's max_tokens (a value the API accepted for that model and
//     thinking), so that thinking does not use up the reply's room;
//   - the reply's cap otherwise.
//
// The thinking setting itself never changes: changing it invalidates the
// cached messages. In the cases docs/summaries.md lists it sends a
// request of its own instead, as when the last request forces a tool call
// (tool_choice any or tool) or a JSON reply (output_config.format or
// output_format), or would write to a message thread the server keeps
// (thread).
// A reply with stop_reason "max_tokens" or "model_context_window_exceeded"
// (cut short either way) is an error. It is safe for concurrent use; use
// one per conversation.
type Summarizer = summarize.Summarizer[anthropic.BetaMessageNewParams]

// SummarizerConfig configures a [Summarizer]; every adapter's is this
// one type (docs/summaries.md lists its fields).
type SummarizerConfig = summarize.Config

// NewSummarizer returns a [Summarizer] that sends its requests with client
// (client.Beta.Messages.New), adding opts to every request.
func NewSummarizer(client anthropic.Client, cfg SummarizerConfig, opts ...option.RequestOption) *Summarizer {
	return summarize.New(&summarize.Codec[anthropic.BetaMessageNewParams]{
		Name: "anthropicv2/beta",
		Prefix: func(last anthropic.BetaMessageNewParams, c history.Counter) ([]history.Message, int, error) {
			msgs, err := ToHistory(last.System, last.Messages)
			return msgs, Overhead(last, c), err
		},
		Model:     func(last anthropic.BetaMessageNewParams) string { return string(last.Model) },
		CacheSafe: summaryRequest,
		Plain:     plainSummaryRequest,
		Send: func(ctx context.Context, req anthropic.BetaMessageNewParams) (string, bool, error) {
			m, err := client.Beta.Messages.New(ctx, req, opts...)
			if err != nil {
				return "", false, err
			}
			return replyText(m), cutShort(m.StopReason), nil
		},
	}, cfg)
}

// summaryRequest is the cache-safe form: last, text appended as a user
// message, max_tokens set for a reply of tokens (see [Summarizer]). false
// when last cannot carry a summary (uncarrying).
func summaryRequest(last anthropic.BetaMessageNewParams, text string, tokens int) (anthropic.BetaMessageNewParams, bool) {
	if uncarrying(&last) {
		return last, false
	}
	req := last
	req.Messages = append(slices.Clip(last.Messages), anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(text)))
	req.MaxTokens = int64(tokens)
	switch t := &last.Thinking; {
	case t.OfEnabled != nil:
		req.MaxTokens += t.OfEnabled.BudgetTokens
	case t.OfAdaptive != nil, t.OfBetweenTools != nil:
		req.MaxTokens = max(req.MaxTokens, last.MaxTokens)
	}
	return req, true
}

// plainSummaryRequest is the plain form: system as the system prompt,
// user as the one user message, to model, max_tokens tokens, without
// thinking.
func plainSummaryRequest(model string, _ *anthropic.BetaMessageNewParams, system, user string, tokens int) anthropic.BetaMessageNewParams {
	return anthropic.BetaMessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: int64(tokens),
		System:    []anthropic.BetaTextBlockParam{{Text: system}},
		Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(user))},
	}
}

// cutShort reports whether a reply that stopped for reason was cut short:
// at max_tokens, or at the end of the model's context window (the API's
// answer, instead of a 400, to a request whose max_tokens overran it).
func cutShort(reason anthropic.BetaStopReason) bool {
	return reason == anthropic.BetaStopReasonMaxTokens || reason == anthropic.BetaStopReasonModelContextWindowExceeded
}

// replyText returns the text blocks of m, joined.
func replyText(m *anthropic.BetaMessage) string {
	var texts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}
