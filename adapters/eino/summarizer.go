package eino

import (
	"context"
	"slices"

	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
)

// SummarizerConfig configures a [Summarizer]; every adapter's is this
// one type (docs/summaries.md lists its fields). Its Model is passed with
// model.WithModel to the plain form's requests ("": the chat model's own).
type SummarizerConfig = summarize.Config

// Summarizer is a ready-made [history.Summarizer] that writes the summary
// of the turns a Trimmer drops through an Eino chat model, the one the
// conversation uses (docs/summaries.md). Give the chat model it returns
// (ChatModel) to whatever sends the conversation's requests (a ChatModel
// of this package, an agent), so that it sees every request, and its
// Option to the trim:
//
//	sum := heino.NewSummarizer(inner, heino.SummarizerConfig{Summary: history.SummaryOptions{Background: true}})
//	cm, err := heino.NewChatModel(sum.ChatModel(), heino.Config{Budget: window, Stateful: true,
//		Options: []history.Option{sum.Option(), history.WithLowWater(0.7)}})
//
// A summary request is, when it can be, the last request (the same
// messages, through the same chat model with the same tools bound, with
// the same options) with one user message appended that asks for the
// summary and model.WithMaxTokens set, so that the provider reads the
// conversation from its prompt cache: the cache-safe form. The plain
// form, a request of its own through the chat model, holding the dropped
// messages as a transcript, is sent when no request was made yet, when
// the last one does not hold what is to be summarised, when it would
// exceed SummaryOptions.InputTokens, or when it forces a tool call
// (schema.ToolChoiceForced). Any error of the chat model or of its reply
// (no text, or finish reason "length") makes the Trimmer fall back to its
// breadcrumb. It is safe for concurrent use when the chat model is; use
// one per conversation.
type Summarizer struct {
	inner model.ToolCallingChatModel
	s     *summarize.Summarizer[einoCall]
}

// einoCall is a request the chat model of a Summarizer passed on: the
// chat model it went to (its tools bound), its messages and options, and
// the tools bound.
type einoCall struct {
	to    model.BaseChatModel
	msgs  []*schema.Message
	opts  []model.Option
	tools []*schema.ToolInfo
}

// NewSummarizer returns a [Summarizer] that writes summaries through inner,
// the chat model the conversation uses.
func NewSummarizer(inner model.ToolCallingChatModel, cfg SummarizerConfig) *Summarizer {
	return &Summarizer{inner: inner, s: summarize.New(&summarize.Codec[einoCall]{
		Name:      "eino",
		Prefix:    einoPrefix,
		CacheSafe: einoSummaryCall,
		Plain: func(m string, _ *einoCall, system, user string, tokens int) einoCall {
			opts := []model.Option{model.WithMaxTokens(tokens)}
			if m != "" {
				opts = append(opts, model.WithModel(m))
			}
			return einoCall{to: inner, msgs: []*schema.Message{schema.SystemMessage(system), schema.UserMessage(user)}, opts: opts}
		},
		NoModel: true,
		Send: func(ctx context.Context, c einoCall) (string, bool, error) {
			m, err := c.to.Generate(ctx, c.msgs, c.opts...)
			if err != nil || m == nil {
				return "", false, err
			}
			return m.Content, m.ResponseMeta != nil && m.ResponseMeta.FinishReason == "length", nil
		},
	}, cfg)}
}

// Summarize writes the summary of dropped, folding in previous (see
// [history.Summarizer]).
func (s *Summarizer) Summarize(ctx context.Context, dropped []history.Message, previous *history.Message) (history.Message, error) {
	return s.s.Summarize(ctx, dropped, previous)
}

// StartSummary returns the Summarizer of a background summary starting
// now (history.SummaryOptions.Background): it builds on the requests
// recorded at this moment, or later ones, whichever holds what it
// summarises.
func (s *Summarizer) StartSummary() history.Summarizer { return s.s.StartSummary() }

// Option returns the option that makes a Trimmer summarise with s:
// history.WithSummarizer with SummarizerConfig.Summary.
func (s *Summarizer) Option() history.Option { return s.s.Option() }

// ChatModel returns the chat model the conversation's requests go
// through: the inner one, which it calls as it is, and which records
// every request (with the tools bound with WithTools) for the next
// summary request to repeat.
func (s *Summarizer) ChatModel() model.ToolCallingChatModel { return &recorder{to: s.inner, s: s} }

// einoPrefix returns the messages of c, converted, and the count of its
// tools (a call's own, or those bound).
func einoPrefix(c einoCall, counter history.Counter) ([]history.Message, int, error) {
	msgs, err := ToHistory(c.msgs)
	tools := c.tools
	if o := model.GetCommonOptions(nil, c.opts...); o.Tools != nil {
		tools = o.Tools
	}
	return msgs, Overhead(tools, counter), err
}

// einoSummaryCall is the cache-safe form: c, text appended as a user
// message, model.WithMaxTokens(tokens) added. false when c forces a tool
// call.
func einoSummaryCall(c einoCall, text string, tokens int) (einoCall, bool) {
	if o := model.GetCommonOptions(nil, c.opts...); o.ToolChoice != nil && *o.ToolChoice == schema.ToolChoiceForced {
		return c, false
	}
	c.msgs = append(slices.Clip(c.msgs), schema.UserMessage(text))
	c.opts = append(slices.Clip(c.opts), model.WithMaxTokens(tokens))
	return c, true
}

// recorder is the chat model of a Summarizer: to, recording each request.
type recorder struct {
	to    model.ToolCallingChatModel
	s     *Summarizer
	tools []*schema.ToolInfo
}

// Generate records the request and passes it on.
func (r *recorder) Generate(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.Message, error) {
	r.s.s.Sent(einoCall{to: r.to, msgs: input, opts: opts, tools: r.tools})
	return r.to.Generate(ctx, input, opts...)
}

// Stream records the request and passes it on.
func (r *recorder) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	r.s.s.Sent(einoCall{to: r.to, msgs: input, opts: opts, tools: r.tools})
	return r.to.Stream(ctx, input, opts...)
}

// WithTools binds tools to the inner chat model and returns a recorder
// over the result.
func (r *recorder) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	to, err := r.to.WithTools(tools)
	if err != nil {
		return nil, err
	}
	return &recorder{to: to, s: r.s, tools: tools}, nil
}

// GetType returns the inner chat model's type.
func (r *recorder) GetType() string {
	t, _ := components.GetType(r.to)
	return t
}

// IsCallbacksEnabled reports whether the inner chat model runs Eino's
// callbacks itself.
func (r *recorder) IsCallbacksEnabled() bool { return components.IsCallbacksEnabled(r.to) }
