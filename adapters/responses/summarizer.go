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

// Summarizer is a ready-made [history.Summarizer] on the Responses API, a
// model call (docs/summaries.md): Summarize, Sent(params), which records
// each request the conversation sends, and Option, for the Trimmer:
//
//	sum := hresponses.NewSummarizer(client, hresponses.SummarizerConfig{})
//	tr := hresponses.NewTrimmer(sum.Option(), history.WithLowWater(0.7))
//	// before every request:
//	items, _, err := tr.Trim(transcript, window)
//	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
//	sum.Sent(params)
//	resp, err := client.Responses.New(ctx, params)
//
// Its summary request is the last request recorded, the instruction
// appended as a user message and max_output_tokens set, so that the
// provider reads the conversation from its prompt cache. It sends a
// request of its own (store false) instead when that request adds to a
// conversation the server keeps (Conversation: the summary would join
// it), forces a tool call or a JSON reply, or runs in the background,
// and in the other cases docs/summaries.md lists (under
// previous_response_id the server holds the history, which the request
// then does not). A reply incomplete at max_output_tokens is an error. It
// is safe for concurrent use; use one per conversation.
//
// It does not call POST /responses/compact: that endpoint answers with
// an opaque, encrypted compaction item that replaces the whole input (the
// user's messages, then the item), readable by OpenAI alone, where a
// Summarizer returns text that stands for the dropped turns only, which
// the Trimmer places, counts, and a runtime can show or persist.
type Summarizer = summarize.Summarizer[responses.ResponseNewParams]

// SummarizerConfig configures a [Summarizer]; every adapter's is this
// one type (docs/summaries.md lists its fields).
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
