package eino

import (
	"context"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// Fit is the door: it trims msgs, the conversation's whole transcript,
// for a Generate or Stream call to the model named name with opts (the
// call's options: model.WithModel among them names the model instead,
// model.WithMaxTokens the output room, model.WithTools the tools) and
// returns the messages to pass. The budget is the model's, from the table
// (models.Lookup, cached per name): its window less the output the call
// asks room for (else the model's output limit), less the tools of opts
// ([Overhead]; tools bound to the model with WithTools are not in opts:
// pass history.WithOverhead(Overhead(tools, nil)) to NewTrimmer), less
// history.MarginShare of the window until the model's Calibration, which
// the Trimmer owns, has observed a response ([Trimmer.Observe]). It trims
// with the options of the fit package for the model (the exact counter
// when its tokenizer is public, the task preset, the cache policy), then
// the Trimmer's own, which override them. A model the table does not know
// returns nil messages and an error wrapping models.ErrUnknownModel: a
// budget is never guessed. On a context overflow, call RecoverOverflow
// with the same msgs. msgs is not modified.
func (t *Trimmer) Fit(ctx context.Context, name string, msgs []*schema.Message, opts ...model.Option) ([]*schema.Message, history.Result, error) {
	return t.t.Fit(ctx, request(name, msgs, opts))
}

// request is what the door reads of a call to the model named name with
// opts.
func request(name string, msgs []*schema.Message, opts []model.Option) adapt.Request[struct{}, *schema.Message] {
	o := model.GetCommonOptions(nil, opts...)
	req := adapt.Request[struct{}, *schema.Message]{Model: name, Messages: msgs,
		Overhead: func(c history.Counter) int { return Overhead(o.Tools, c) }}
	if o.Model != nil && *o.Model != "" {
		req.Model = *o.Model
	}
	if o.MaxTokens != nil {
		req.Output = *o.MaxTokens
	}
	return req
}

// Fit is [Trimmer.Fit] for the conversation key, with its state loaded
// from the store and saved back (see Trim). The conversations share a
// Calibration per model, which [Conversations.Observe] feeds.
func (cs *Conversations) Fit(ctx context.Context, key, name string, msgs []*schema.Message, opts ...model.Option) ([]*schema.Message, history.Result, error) {
	return adapt.FitModel[struct{}, *schema.Message](ctx, cs.Conversations, key, request(name, msgs, opts))
}

// Observe feeds the input the provider reports in usage, the reply to the
// request to the model named name that Fit returned res for, to the
// conversations' Calibration of that model, and returns its verdict
// (history.VerdictInvalid, recording nothing, for a nil usage or one that
// reports no input).
func (cs *Conversations) Observe(name string, res history.Result, usage *schema.TokenUsage) history.Verdict {
	if usage == nil {
		return history.VerdictInvalid
	}
	return adapt.ObserveModel[struct{}, *schema.Message](cs.Conversations, name, res, usage.PromptTokens)
}

// Observe feeds the input the provider reports in usage (the reply's
// ResponseMeta.Usage: PromptTokens) for the request the last Fit or Trim
// returned to the Calibration that trim used, and returns its verdict
// (history.Trimmer.Observe): history.VerdictInvalid, recording nothing,
// before any trim, without a Calibration, or for a nil usage or one that
// reports no input.
func (t *Trimmer) Observe(usage *schema.TokenUsage) history.Verdict {
	if usage == nil {
		return history.VerdictInvalid
	}
	return t.t.Observe(usage.PromptTokens)
}
