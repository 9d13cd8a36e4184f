package openai

import (
	"context"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
)

// Summarizer is a ready-made [history.Summarizer] that writes the summary
// of the turns a Trimmer drops with a Chat Completions request
// (docs/summaries.md). Its methods are Summarize (the Summarizer),
// Sent(params), which records the request the conversation sent last, and
// Option, which returns history.WithSummarizer with the Summarizer's
// options:
//
//	sum := hopenai.NewSummarizer(client, hopenai.SummarizerConfig{Summary: history.SummaryOptions{Background: true}})
//	tr := hopenai.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
//	// before every request:
//	params.Messages, _, err = tr.Trim(transcript, window)
//	sum.Sent(params)
//	completion, err := client.Chat.Completions.New(ctx, params)
//
// A summary request is, when it can be, the last request sent (the same
// model, system prompt, tools and messages) with one user message
// appended that asks for the summary, so that the provider reads the
// conversation from its prompt cache: the cache-safe form. The plain form,
// a request of its own (Config.Model, or the last request's) holding the
// dropped messages as a transcript, is sent when nothing was recorded,
// when the last request does not hold what is to be summarised, when it
// would exceed SummaryOptions.InputTokens, or when it forces a tool call
// (ToolChoice, FunctionCall) or a structured reply (ResponseFormat), or
// asks for audio. Any error of the provider or of its reply (no text, or
// finish_reason "length") makes the Trimmer fall back to its breadcrumb.
// It is safe for concurrent use; use one per conversation.
type Summarizer = summarize.Summarizer[openai.ChatCompletionNewParams]

// SummarizerConfig configures a [Summarizer]: the plain form's model, the
// SummaryOptions it is used with, the reply's cap, the prompt, the
// Counter. The zero value works when the runtime records its requests
// with Sent. Every adapter's Summarizer takes the same configuration.
type SummarizerConfig = summarize.Config

// NewSummarizer returns a [Summarizer] that sends its requests with client
// (client.Chat.Completions.New), adding opts to every request.
func NewSummarizer(client openai.Client, cfg SummarizerConfig, opts ...option.RequestOption) *Summarizer {
	return summarize.New(&summarize.Codec[openai.ChatCompletionNewParams]{
		Name: "openai",
		Prefix: func(last openai.ChatCompletionNewParams, c history.Counter) ([]history.Message, int, error) {
			msgs, err := ToHistory(last.Messages)
			return msgs, Overhead(last, c), err
		},
		Model:     func(last openai.ChatCompletionNewParams) string { return last.Model },
		CacheSafe: summaryRequest,
		Plain:     plainSummaryRequest,
		Send: func(ctx context.Context, req openai.ChatCompletionNewParams) (string, bool, error) {
			c, err := client.Chat.Completions.New(ctx, req, opts...)
			if err != nil || len(c.Choices) == 0 {
				return "", false, err
			}
			return c.Choices[0].Message.Content, c.Choices[0].FinishReason == "length", nil
		},
	}, cfg)
}

// summaryRequest is the cache-safe form: last, text appended as a user
// message, the reply capped at tokens (in the field last caps it with),
// one choice, no stream options. false when last forces a tool call or a
// structured reply, or asks for audio.
func summaryRequest(last openai.ChatCompletionNewParams, text string, tokens int) (openai.ChatCompletionNewParams, bool) {
	if forcesTool(last) || !param.IsOmitted(last.ResponseFormat.OfJSONSchema) || !param.IsOmitted(last.ResponseFormat.OfJSONObject) ||
		slices.Contains(last.Modalities, "audio") {
		return last, false
	}
	req := last
	req.Messages = append(slices.Clip(last.Messages), openai.UserMessage(text))
	if !param.IsOmitted(last.MaxTokens) && param.IsOmitted(last.MaxCompletionTokens) {
		req.MaxTokens = param.NewOpt(int64(tokens))
	} else {
		req.MaxCompletionTokens = param.NewOpt(int64(tokens))
	}
	req.N = param.Opt[int64]{}
	req.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	return req, true
}

// forcesTool reports whether p makes the model call a tool rather than
// answer in text.
func forcesTool(p openai.ChatCompletionNewParams) bool {
	tc := p.ToolChoice
	return tc.OfAuto.Value == "required" || tc.OfFunctionToolChoice != nil || tc.OfCustomToolChoice != nil ||
		(tc.OfAllowedTools != nil && tc.OfAllowedTools.AllowedTools.Mode == "required") ||
		p.FunctionCall.OfFunctionCallOption != nil
}

// plainSummaryRequest is the plain form: system and user to model, the
// reply capped at tokens.
func plainSummaryRequest(model string, _ *openai.ChatCompletionNewParams, system, user string, tokens int) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:               model,
		Messages:            []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(user)},
		MaxCompletionTokens: param.NewOpt(int64(tokens)),
	}
}
