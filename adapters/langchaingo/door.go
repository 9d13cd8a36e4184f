package langchaingo

import (
	"context"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/tmc/langchaingo/llms"
)

// Fit is the door: it trims msgs, the conversation's whole transcript,
// for a GenerateContent call to the model named name with opts (the
// call's options: llms.WithModel among them names the model instead,
// llms.WithMaxTokens the output room, llms.WithTools the tools) and
// returns the messages to pass. The budget is the model's, from the table
// (models.Lookup, cached per name): its window less the output the call
// asks room for (else the model's output limit), less the tools of opts
// ([Overhead]), less history.MarginShare of the window until the model's
// Calibration, which the Trimmer owns, has observed a response
// ([Trimmer.Observe]). It trims with the options of the fit package for
// the model (the exact counter when its tokenizer is public, the task
// preset, the cache policy), then the Trimmer's own, which override them.
// A model the table does not know returns nil messages and an error
// wrapping models.ErrUnknownModel: a budget is never guessed. On a
// context overflow, call RecoverOverflow with the same msgs. msgs is not
// modified.
func (t *Trimmer) Fit(ctx context.Context, name string, msgs []llms.MessageContent, opts ...llms.CallOption) ([]llms.MessageContent, history.Result, error) {
	return t.t.Fit(ctx, request(name, msgs, opts))
}

// Fit is [Trimmer.Fit] for the conversation key, with its state loaded
// from the store and saved back (see Trim). The conversations share a
// Calibration per model, which [Conversations.Observe] feeds.
func (cs *Conversations) Fit(ctx context.Context, key, name string, msgs []llms.MessageContent, opts ...llms.CallOption) ([]llms.MessageContent, history.Result, error) {
	return adapt.FitModel[struct{}, llms.MessageContent](ctx, cs.Conversations, key, request(name, msgs, opts))
}

// Observe feeds the provider's count of the input of the request to the
// model named name that Fit returned res for, as [PromptTokens] reads it
// from resp, to the conversations' Calibration of that model, and returns
// its verdict (history.VerdictInvalid, recording nothing, when resp
// reports no input).
func (cs *Conversations) Observe(name string, res history.Result, resp *llms.ContentResponse) history.Verdict {
	return adapt.ObserveModel[struct{}, llms.MessageContent](cs.Conversations, name, res, PromptTokens(resp))
}

// request is what the door reads of a call to the model named name with
// opts.
func request(name string, msgs []llms.MessageContent, opts []llms.CallOption) adapt.Request[struct{}, llms.MessageContent] {
	var o llms.CallOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	req := adapt.Request[struct{}, llms.MessageContent]{Model: name, Output: o.MaxTokens, Messages: msgs,
		Overhead: func(c history.Counter) int { return Overhead(o.Tools, c) }}
	if o.Model != "" {
		req.Model = o.Model
	}
	return req
}

// Observe feeds the provider's count of the input of the request the last
// Fit or Trim returned, as [PromptTokens] reads it from resp, to the
// Calibration that trim used, and returns its verdict
// (history.Trimmer.Observe): history.VerdictInvalid, recording nothing,
// before any trim, without a Calibration, or when resp reports no input.
func (t *Trimmer) Observe(resp *llms.ContentResponse) history.Verdict {
	return t.t.Observe(PromptTokens(resp))
}
