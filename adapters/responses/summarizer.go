package responses

import (
	"context"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// Summarizer is a ready-made [history.Summarizer] that writes the summary
// of the turns a Trimmer drops with a Responses request (client.Responses.New),
// a model call (docs/summaries.md). Its methods are Summarize (the
// Summarizer), Sent(params), which records the request the conversation
// sent last, and Option, which returns history.WithSummarizer with the
// Summarizer's options:
//
//	sum := hresponses.NewSummarizer(client, hresponses.SummarizerConfig{})
//	tr := hresponses.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
//	// before every request:
//	items, _, err := tr.Trim(transcript, window)
//	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
//	sum.Sent(params)
//	resp, err := client.Responses.New(ctx, params)
//
// A summary request is, when it can be, the last request sent (the same
// model, instructions, tools and input items) with one user message
// appended that asks for the summary, its max_output_tokens set, so that
// the provider reads the conversation from its prompt cache: the
// cache-safe form. The plain form, a request of its own (Config.Model, or
// the last request's; store false) holding the dropped items as a
// transcript, is sent when nothing was recorded, when the last request
// does not hold what is to be summarised (under previous_response_id the
// server holds it), when it would exceed SummaryOptions.InputTokens, when
// it adds to a conversation the server keeps (Conversation: the summary
// would join it), forces a tool call or a JSON reply, or runs in the
// background. Any error of the provider or of its reply (no output text,
// or incomplete at max_output_tokens) makes the Trimmer fall back to its
// breadcrumb. It is safe for concurrent use; use one per conversation.
//
// It does not call POST /responses/compact: that endpoint answers with
// an opaque, encrypted compaction item that replaces the whole input (the
// user's messages, then the item), readable by OpenAI alone, where a
// Summarizer returns text that stands for the dropped turns only, which
// the Trimmer places, counts, and a runtime can show or persist;
// docs/summaries.md says more.
type Summarizer = summarize.Summarizer[responses.ResponseNewParams]

// SummarizerConfig configures a [Summarizer]: the plain form's model, the
// SummaryOptions it is used with, the reply's cap, the prompt, the
// Counter. The zero value works when the runtime records its requests
// with Sent. Every adapter's Summarizer takes the same configuration.
type SummarizerConfig = summarize.Config

// NewSummarizer returns a [Summarizer] that sends its requests with client
// (client.Responses.New), adding opts to every request.
func NewSummarizer(client openai.Client, cfg SummarizerConfig, opts ...option.RequestOption) *Summarizer {
	return summarize.New(&summarize.Codec[responses.ResponseNewParams]{
		Name:      "responses",
		Prefix:    summaryPrefix,
		Model:     func(last responses.ResponseNewParams) string { return last.Model },
		CacheSafe: summaryRequest,
		Plain:     plainSummaryRequest,
		Send: func(ctx context.Context, req responses.ResponseNewParams) (string, bool, error) {
			r, err := client.Responses.New(ctx, req, opts...)
			if err != nil {
				return "", false, err
			}
			return r.OutputText(), r.Status == responses.ResponseStatusIncomplete && r.IncompleteDetails.Reason == "max_output_tokens", nil
		},
	}, cfg)
}

// summaryPrefix returns the input items of last, converted, and the count
// of its tools, instructions and text format.
func summaryPrefix(last responses.ResponseNewParams, c history.Counter) ([]history.Message, int, error) {
	msgs, err := ToHistory(inputItems(last))
	return msgs, Overhead(last, c), err
}

// inputItems returns the input of p as items: a string input is one user
// message.
func inputItems(p responses.ResponseNewParams) []Item {
	if s := p.Input.OfString; !param.IsOmitted(s) {
		return []Item{responses.ResponseInputItemParamOfMessage(s.Value, responses.EasyInputMessageRoleUser)}
	}
	return p.Input.OfInputItemList
}

// summaryRequest is the cache-safe form: last, text appended as a user
// message, the reply capped at tokens (16 at least, the API's minimum).
// false when last adds to a server-kept conversation, forces a tool call
// or a JSON reply, or runs in the background.
func summaryRequest(last responses.ResponseNewParams, text string, tokens int) (responses.ResponseNewParams, bool) {
	tc := &last.ToolChoice
	forced := tc.OfToolChoiceMode.Value == responses.ToolChoiceOptionsRequired ||
		(tc.OfAllowedTools != nil && tc.OfAllowedTools.Mode == responses.ToolChoiceAllowedModeRequired) ||
		tc.OfHostedTool != nil || tc.OfFunctionTool != nil || tc.OfMcpTool != nil || tc.OfCustomTool != nil ||
		tc.OfResponseNewsToolChoiceSpecificProgrammaticToolCallingParam != nil || tc.OfSpecificApplyPatchToolChoice != nil || tc.OfSpecificShellToolChoice != nil
	if forced || !param.IsOmitted(last.Conversation) || last.Background.Value ||
		last.Text.Format.OfJSONSchema != nil || last.Text.Format.OfJSONObject != nil {
		return last, false
	}
	req := last
	req.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: append(slices.Clip(inputItems(last)),
		responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))}
	req.MaxOutputTokens = param.NewOpt(int64(max(tokens, 16)))
	return req, true
}

// plainSummaryRequest is the plain form: system as the instructions, user
// as the input, to model, the reply capped at tokens, not stored.
func plainSummaryRequest(model string, _ *responses.ResponseNewParams, system, user string, tokens int) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:           model,
		Instructions:    param.NewOpt(system),
		Input:           responses.ResponseNewParamsInputUnion{OfString: param.NewOpt(user)},
		MaxOutputTokens: param.NewOpt(int64(max(tokens, 16))),
		Store:           param.NewOpt(false),
	}
}
