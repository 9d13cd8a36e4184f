package gemini

import (
	"context"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"google.golang.org/genai"
)

// Fit is the door: it trims contents, the conversation's whole transcript,
// for a request to model with config (what client.Models.GenerateContent
// takes) and returns the contents to send. The budget is the model's,
// from the table (models.Lookup, cached per name; "gemini-2.5-pro",
// "publishers/google/models/gemini-2.5-pro" and the like): its input
// window less config.MaxOutputTokens (else the model's output limit),
// less what config sends besides the contents ([Overhead]; its
// SystemInstruction counts as the first message), less
// history.MarginShare of the window until the model's Calibration, which
// the Trimmer owns, has observed a response ([Trimmer.Observe]). It trims
// with the options of the fit package for the model (the task preset, the
// cache policy; Google publishes no tokenizer, so the Heuristic counts),
// then the Trimmer's own, which override them. A model the table does not
// know returns nil contents and an error wrapping models.ErrUnknownModel:
// a budget is never guessed. On a context overflow, call RecoverOverflow
// with the same contents. Neither contents nor config is modified.
func (t *Trimmer) Fit(ctx context.Context, model string, contents []*genai.Content, config *genai.GenerateContentConfig) ([]*genai.Content, history.Result, error) {
	return t.t.Fit(ctx, doorRequest(model, contents, config))
}

// doorRequest is what the door reads of a request to model with config.
func doorRequest(model string, contents []*genai.Content, config *genai.GenerateContentConfig) adapt.Request[*genai.Content, *genai.Content] {
	req := adapt.Request[*genai.Content, *genai.Content]{Model: model, Messages: contents,
		Overhead: func(c history.Counter) int { return Overhead(config, c) }}
	if config != nil {
		req.System, req.Output = config.SystemInstruction, int(config.MaxOutputTokens)
	}
	return req
}

// Fit is [Trimmer.Fit] for the conversation key, with its state loaded
// from the store and saved back (see Trim). The conversations share a
// Calibration per model, which [Conversations.Observe] feeds.
func (cs *Conversations) Fit(ctx context.Context, key, model string, contents []*genai.Content, config *genai.GenerateContentConfig) ([]*genai.Content, history.Result, error) {
	return adapt.FitModel[*genai.Content, *genai.Content](ctx, cs.SystemConversations, key, doorRequest(model, contents, config))
}

// Observe feeds the input the provider reports in usage, the response to
// the request to model that Fit returned res for, to the conversations'
// Calibration of that model, and returns its verdict
// (history.VerdictInvalid, recording nothing, for a nil usage or one that
// reports no input).
func (cs *Conversations) Observe(model string, res history.Result, usage *genai.GenerateContentResponseUsageMetadata) history.Verdict {
	if usage == nil {
		return history.VerdictInvalid
	}
	return adapt.ObserveModel[*genai.Content, *genai.Content](cs.SystemConversations, model, res, int(usage.PromptTokenCount))
}

// Observe feeds the input the provider reports in usage
// (resp.UsageMetadata: promptTokenCount, which includes cached content)
// for the request the last Fit or Trim returned to the Calibration that
// trim used, and returns its verdict (history.Trimmer.Observe):
// history.VerdictInvalid, recording nothing, before any trim, without a
// Calibration, or for a nil usage or one that reports no input.
func (t *Trimmer) Observe(usage *genai.GenerateContentResponseUsageMetadata) history.Verdict {
	if usage == nil {
		return history.VerdictInvalid
	}
	return t.t.Observe(int(usage.PromptTokenCount))
}
