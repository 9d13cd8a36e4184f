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

// Summarizer is a ready-made [history.Summarizer] on Chat Completions
// (docs/summaries.md): Summarize, Sent(params), which records each request
// the conversation sends, and Option, for the Trimmer:
//
//	sum := hopenai.NewSummarizer(client, hopenai.SummarizerConfig{Summary: history.SummaryOptions{Background: true}})
//	tr := hopenai.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
//	// before every request:
//	params.Messages, _, err = tr.Trim(transcript, window)
//	sum.Sent(params)
//	completion, err := client.Chat.Completions.New(ctx, params)
//
// Its summary request is the last request recorded, the instruction
// appended as a user message and max_completion_tokens set (max_tokens
// when the request capped with it), so that the provider reads the
// conversation from its prompt cache. It sends a request of its own
// instead when that request forces a tool call (ToolChoice, FunctionCall),
// a JSON reply (ResponseFormat) or audio, and in the other cases
// docs/summaries.md lists. A reply cut at its cap (finish_reason "length")
// is an error. It is safe for concurrent use; use one per conversation.
type Summarizer = summarize.Summarizer[openai.ChatCompletionNewParams]

// SummarizerConfig configures a [Summarizer]; every adapter's is this
// one type (docs/summaries.md lists its fields).
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
