package anthropic

import (
	"context"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
)

// Summarizer is a ready-made [history.Summarizer] that writes the summary
// of the turns a Trimmer drops with a Messages request (a model call; see
// docs/summaries.md). Its methods are Summarize (the Summarizer),
// Sent(params), which records the request the conversation sent last, and
// Option, which returns history.WithSummarizer with the Summarizer's
// options:
//
//	sum := hanthropic.NewSummarizer(client, hanthropic.SummarizerConfig{})
//	tr := hanthropic.NewTrimmer(params.System, sum.Option(), history.WithLowWater(0.7))
//	// before every request:
//	params.Messages, _, err = tr.Trim(transcript, window)
//	sum.Sent(params)
//	msg, err := client.Messages.New(ctx, params)
//
// A summary request is, when it can be, the last request sent (the same
// model, system prompt, tools, thinking, tool choice and messages, their
// cache_control breakpoints included) with one user message appended
// that asks for the summary, so that the API reads the conversation from
// its prompt cache: the cache-safe form (the API joins the new user
// message to a last one of the same role, as it joins any). Its
// max_tokens is the reply's cap, plus the thinking budget when thinking
// is enabled (budget_tokens must stay below max_tokens). The plain form,
// a request of its own (Config.Model, or the last request's) holding the
// dropped messages as a transcript, is sent when nothing was recorded,
// when the last request does not hold what is to be summarised, when it
// would exceed SummaryOptions.InputTokens, or when it forces a tool call
// (tool_choice any or tool) or a JSON reply (output_config.format). Any
// error of the API or of its reply (no text block, or stop_reason
// "max_tokens") makes the Trimmer fall back to its breadcrumb. It is safe
// for concurrent use; use one per conversation.
type Summarizer = summarize.Summarizer[anthropic.MessageNewParams]

// SummarizerConfig configures a [Summarizer]: the plain form's model, the
// SummaryOptions it is used with, the reply's cap, the prompt, the
// Counter. The zero value works when the runtime records its requests
// with Sent. Every adapter's Summarizer takes the same configuration.
type SummarizerConfig = summarize.Config

// NewSummarizer returns a [Summarizer] that sends its requests with client
// (client.Messages.New), adding opts to every request.
func NewSummarizer(client anthropic.Client, cfg SummarizerConfig, opts ...option.RequestOption) *Summarizer {
	return summarize.New(&summarize.Codec[anthropic.MessageNewParams]{
		Name: "anthropic",
		Prefix: func(last anthropic.MessageNewParams, c history.Counter) ([]history.Message, int, error) {
			msgs, err := ToHistory(last.System, last.Messages)
			return msgs, Overhead(last, c), err
		},
		Model:     func(last anthropic.MessageNewParams) string { return string(last.Model) },
		CacheSafe: summaryRequest,
		Plain:     plainSummaryRequest,
		Send: func(ctx context.Context, req anthropic.MessageNewParams) (string, bool, error) {
			m, err := client.Messages.New(ctx, req, opts...)
			if err != nil {
				return "", false, err
			}
			return replyText(m), m.StopReason == anthropic.StopReasonMaxTokens, nil
		},
	}, cfg)
}

// summaryRequest is the cache-safe form: last, text appended as a user
// message, max_tokens the reply's cap (and the thinking budget). false
// when last forces a tool call or a JSON reply.
func summaryRequest(last anthropic.MessageNewParams, text string, tokens int) (anthropic.MessageNewParams, bool) {
	if last.ToolChoice.OfAny != nil || last.ToolChoice.OfTool != nil || !param.IsOmitted(last.OutputConfig.Format) {
		return last, false
	}
	req := last
	req.Messages = append(slices.Clip(last.Messages), anthropic.NewUserMessage(anthropic.NewTextBlock(text)))
	req.MaxTokens = int64(tokens)
	if t := last.Thinking.OfEnabled; t != nil {
		req.MaxTokens += t.BudgetTokens
	}
	return req, true
}

// plainSummaryRequest is the plain form: system as the system prompt,
// user as the one user message, to model, max_tokens tokens.
func plainSummaryRequest(model string, _ *anthropic.MessageNewParams, system, user string, tokens int) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     anthropic.Model(model),
		MaxTokens: int64(tokens),
		System:    []anthropic.TextBlockParam{{Text: system}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))},
	}
}

// replyText returns the text blocks of m, joined.
func replyText(m *anthropic.Message) string {
	var texts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}
