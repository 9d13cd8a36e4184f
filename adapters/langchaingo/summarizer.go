package langchaingo

import (
	"context"
	"slices"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
	"github.com/tmc/langchaingo/llms"
)

// SummarizerConfig configures a [Summarizer]; every adapter's is this
// one type (docs/summaries.md lists its fields). Its Model is passed with
// llms.WithModel to the plain form's requests ("": the model's own).
type SummarizerConfig = summarize.Config

// Summarizer is a ready-made [history.Summarizer] that writes the summary
// of the turns a Trimmer drops through a LangChainGo model, the one the
// conversation uses (docs/summaries.md). Give the model it returns (Model)
// to whatever sends the conversation's requests (a Model of this package,
// a chain, an agent), so that it sees every request, and its Option to the
// trim:
//
//	sum := hlangchaingo.NewSummarizer(llm, hlangchaingo.SummarizerConfig{Summary: history.SummaryOptions{Background: true}})
//	m := hlangchaingo.NewModel(sum.Model(), hlangchaingo.Config{Budget: window, Stateful: true,
//		Options: []history.Option{sum.Option(), history.WithLowWater(0.7)}})
//
// A summary request is, when it can be, the last request (the same
// messages and call options: tools, model, sampling) with one human
// message appended that asks for the summary and llms.WithMaxTokens set,
// so that the provider reads the conversation from its prompt cache: the
// cache-safe form. The plain form, a request of its own holding the
// dropped messages as a transcript, is sent when no request was made yet,
// when the last one does not hold what is to be summarised, when it would
// exceed SummaryOptions.InputTokens, or when it forces a tool call
// (ToolChoice "required", "any" or a named tool) or JSON (JSONMode, a
// JSON ResponseMIMEType). Any
// error of the model or of its reply (no text, or stop reason "length" or
// "max_tokens") makes the Trimmer fall back to its breadcrumb. It is safe
// for concurrent use when the model is; use one per conversation.
type Summarizer struct {
	inner llms.Model
	s     *summarize.Summarizer[lcCall]
}

// lcCall is a request the model of a Summarizer passed on: its messages
// and call options.
type lcCall struct {
	msgs []llms.MessageContent
	opts []llms.CallOption
}

// NewSummarizer returns a [Summarizer] that writes summaries through inner,
// the model the conversation uses.
func NewSummarizer(inner llms.Model, cfg SummarizerConfig) *Summarizer {
	return &Summarizer{inner: inner, s: summarize.New(&summarize.Codec[lcCall]{
		Name: "langchaingo",
		Prefix: func(c lcCall, counter history.Counter) ([]history.Message, int, error) {
			msgs, err := ToHistory(c.msgs)
			return msgs, Overhead(callTools(applied(c.opts)), counter), err
		},
		CacheSafe: lcSummaryCall,
		Plain: func(m string, _ *lcCall, system, user string, tokens int) lcCall {
			opts := []llms.CallOption{llms.WithMaxTokens(tokens)}
			if m != "" {
				opts = append(opts, llms.WithModel(m))
			}
			return lcCall{msgs: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, system),
				llms.TextParts(llms.ChatMessageTypeHuman, user)}, opts: opts}
		},
		NoModel: true,
		Send: func(ctx context.Context, c lcCall) (string, bool, error) {
			r, err := inner.GenerateContent(ctx, c.msgs, c.opts...)
			if err != nil || r == nil || len(r.Choices) == 0 || r.Choices[0] == nil {
				return "", false, err
			}
			stop := r.Choices[0].StopReason
			return r.Choices[0].Content, stop == "length" || stop == "max_tokens", nil
		},
		Overflow: IsContextOverflow,
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

// Model returns the model the conversation's requests go through: the
// inner one, which it calls as it is, and which records every request for
// the next summary request to repeat.
func (s *Summarizer) Model() llms.Model { return &recorder{to: s.inner, s: s} }

// lcSummaryCall is the cache-safe form: c, text appended as a human
// message, llms.WithMaxTokens(tokens) added. false when c forces a tool
// call or a reply that is not text.
func lcSummaryCall(c lcCall, text string, tokens int) (lcCall, bool) {
	o := applied(c.opts)
	if o.JSONMode || (o.ResponseMIMEType != "" && o.ResponseMIMEType != "text/plain") || forcesTool(o.ToolChoice) {
		return c, false
	}
	c.msgs = append(slices.Clip(c.msgs), llms.TextParts(llms.ChatMessageTypeHuman, text))
	c.opts = append(slices.Clip(c.opts), llms.WithMaxTokens(tokens))
	return c, true
}

// forcesTool reports whether a call's ToolChoice makes the model call a
// tool rather than answer in text.
func forcesTool(choice any) bool {
	switch c := choice.(type) {
	case string:
		return c == "required" || c == "any"
	case llms.ToolChoice:
		return c.Type != "" && c.Type != "none" && c.Type != "auto"
	case *llms.ToolChoice:
		return c != nil && c.Type != "" && c.Type != "none" && c.Type != "auto"
	}
	return false
}

// applied returns the call options opts set.
func applied(opts []llms.CallOption) llms.CallOptions {
	var o llms.CallOptions
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// recorder is the model of a Summarizer: to, recording each request.
type recorder struct {
	to llms.Model
	s  *Summarizer
}

var _ llms.ReasoningModel = (*recorder)(nil)

// GenerateContent records the request and passes it on.
func (r *recorder) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	r.s.s.Sent(lcCall{msgs: msgs, opts: options})
	return r.to.GenerateContent(ctx, msgs, options...)
}

// Call sends prompt as a single human message through GenerateContent,
// as llms.GenerateFromSinglePrompt does.
func (r *recorder) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, r, prompt, options...)
}

// SupportsReasoning reports whether the inner model is an
// llms.ReasoningModel that supports reasoning.
func (r *recorder) SupportsReasoning() bool {
	m, ok := r.to.(llms.ReasoningModel)
	return ok && m.SupportsReasoning()
}
