// Package summarize is the ready-made Summarizer every SDK adapter
// exports (history.Summarizer, for history.WithSummarizer): one prompt
// (Prompt), the two forms of a summary request, and the choice between
// them; an adapter supplies only how its SDK builds, sends and reads a
// request (a Codec).
//
// The cache-safe form is the conversation's last request, as the runtime
// sent it and told the Summarizer (Sent), or one of the three before it, with one
// user message appended: the instruction, which names the part to
// summarise. The system prompt, the tools and the messages are the same,
// so the provider reads them from its prompt cache instead of billing
// them again (docs/summaries.md). It is used when that request holds what
// is to be summarised (the dropped messages, and the previous summary
// when there is one), can carry a summary (no forced tool call, no
// structured reply) and fits history.SummaryOptions.InputTokens with the
// instruction. Otherwise the plain form is sent: a request of its own,
// the prompt as its system prompt and the dropped messages as a
// transcript, which the core has already bounded by InputTokens. A
// cache-safe request the provider refuses as too long is sent again in
// the plain form.
package summarize

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/histrim/history"
)

// Config configures a ready-made Summarizer. The zero value works.
type Config struct {
	// Model is the model of the plain form's requests; "" means the last
	// request's (see Summarizer.Sent). The cache-safe form always uses
	// the last request's model, since a prompt cache is the model's own.
	Model string
	// Summary are the options the Summarizer is used with (Option passes
	// them to history.WithSummarizer): MaxTokens caps the reply, and
	// InputTokens, when positive, bounds the cache-safe request (the last
	// request, the instruction and what it sends besides its messages, as
	// Counter counts them; 0: the last request was accepted, so it fits).
	Summary history.SummaryOptions
	// ReplyTokens is the maximum output the summary request asks of the
	// provider, in its tokens; 0 means Summary.MaxTokens (or
	// history.DefaultSummaryTokens). Raise it for a model whose reasoning
	// counts against its output; the core still refuses a summary longer
	// than Summary.MaxTokens. It must not be negative.
	ReplyTokens int
	// Prompt replaces Prompt, what the model is asked to keep; "" means
	// Prompt. The request still says which part to summarise and how
	// long the summary may be.
	Prompt string
	// Counter counts the last request for the InputTokens bound; nil
	// means history.Heuristic. Use the trim's.
	Counter history.Counter
}

// Codec is what an adapter supplies: how its SDK builds, sends and reads
// a summary request, of type P (the SDK's request parameters).
type Codec[P any] struct {
	// Name names the adapter in errors: "history/<Name>: summarizer: ...".
	Name string
	// Prefix returns the conversation last sends, converted (a system
	// prompt the SDK takes separately first), and the count, with c, of
	// what it sends besides (tools, a response schema).
	Prefix func(last P, c history.Counter) ([]history.Message, int, error)
	// CacheSafe returns last with text appended as a user message and its
	// reply capped at tokens; false when last cannot carry a summary
	// request (it forces a tool call or a structured reply, or it would
	// write to a conversation the server keeps).
	CacheSafe func(last P, text string, tokens int) (P, bool)
	// Model returns the model last is sent to ("" when it names none).
	Model func(last P) string
	// Plain returns a request of its own to model (Config.Model, or the
	// last request's; "" only when the SDK sends to a model of its own,
	// as a framework's chat model does, see NoModel): system as its
	// system prompt, user as its one user message, its reply capped at
	// tokens. last is the last request, nil when none was recorded.
	Plain func(model string, last *P, system, user string, tokens int) P
	// NoModel says the SDK's client sends to its own model, so that a
	// plain request needs none (Model may then be nil).
	NoModel bool
	// Send sends req and returns the text of the reply (its text parts
	// joined; "" when it holds none) and whether the provider stopped it
	// at its cap; an error when the provider refuses it.
	Send func(ctx context.Context, req P) (text string, cut bool, err error)
	// Overflow reports whether err is a context overflow; nil means
	// history.IsContextOverflow.
	Overflow func(err error) bool
}

// Summarizer is a ready-made history.Summarizer that writes the summary
// with the adapter's SDK, in the cache-safe form when it can (see the
// package documentation). It is safe for concurrent use; use one per
// conversation, since Sent records that conversation's last request.
type Summarizer[P any] struct {
	c   *Codec[P]
	cfg Config

	mu   sync.Mutex
	last [4]P // the requests Sent recorded last, the newest first
	n    int  // how many of last are recorded
}

// New returns the Summarizer of c with cfg.
func New[P any](c *Codec[P], cfg Config) *Summarizer[P] {
	return &Summarizer[P]{c: c, cfg: cfg}
}

// Sent records last as the request the conversation sent last: the next
// summary request is that one with the instruction appended (the
// cache-safe form), or one of the three before it when that one no
// longer holds what is to be summarised (a background summary starts at
// the request that drops its turns, which may be sent before the summary
// request is, and on a loaded machine a request or two more may be sent
// before the summary's goroutine builds its request). Call it with every request, before or after sending it. The
// Summarizer keeps last as it is, not a deep copy: do not modify its
// messages afterwards (a new slice for each request, as the Trimmer
// returns, is fine).
func (s *Summarizer[P]) Sent(last P) {
	s.mu.Lock()
	defer s.mu.Unlock()
	copy(s.last[1:], s.last[:len(s.last)-1])
	s.last[0] = last
	s.n = min(s.n+1, len(s.last))
}

// Option returns history.WithSummarizer(s, cfg.Summary): the option that
// makes a Trimmer summarise with s, with the options s was configured with.
func (s *Summarizer[P]) Option() history.Option {
	return history.WithSummarizer(s, s.cfg.Summary)
}

// Summarize writes the summary of dropped, folding in previous, as
// history.Summarizer asks: a user message holding the reply's text. It
// returns an error when the provider refuses the request, when the reply
// holds no text or stopped at its cap, or when ctx ends first; the core
// then falls back to its breadcrumb.
func (s *Summarizer[P]) Summarize(ctx context.Context, dropped []history.Message, previous *history.Message) (history.Message, error) {
	return s.summarize(ctx, dropped, previous, s.sent())
}

// StartSummary returns the Summarizer of a background summary that starts
// now (history.SummaryOptions.Background): it tries the requests recorded
// now, then those recorded when it writes, so that however late its
// goroutine runs, a request that holds what it summarises is among them
// (the newest request recorded now held the turns the summary covers: it
// was sent before the trim that starts the summary dropped any).
func (s *Summarizer[P]) StartSummary() history.Summarizer {
	return &started[P]{s: s, then: s.sent()}
}

// started is a Summarizer's background summary, with the requests
// recorded when it started.
type started[P any] struct {
	s    *Summarizer[P]
	then []P
}

func (b *started[P]) Summarize(ctx context.Context, dropped []history.Message, previous *history.Message) (history.Message, error) {
	return b.s.summarize(ctx, dropped, previous, slices.Concat(b.then, b.s.sent()))
}

// summarize is Summarize with sent, the requests to build the cache-safe
// form on, the newest first.
func (s *Summarizer[P]) summarize(ctx context.Context, dropped []history.Message, previous *history.Message, sent []P) (history.Message, error) {
	if s.cfg.ReplyTokens < 0 {
		return history.Message{}, s.errorf("ReplyTokens is negative")
	}
	var req P
	safe := false
	for _, last := range sent {
		if req, safe = s.cacheSafe(last, dropped, previous); safe {
			break
		}
	}
	if !safe {
		var err error
		if req, err = s.plain(sent, dropped, previous); err != nil {
			return history.Message{}, err
		}
	}
	out, cut, err := s.c.Send(ctx, req)
	if err != nil && safe && s.overflow(err) && ctx.Err() == nil {
		// The count was short of the provider's: the plain form is the
		// smaller request.
		if req, err = s.plain(sent, dropped, previous); err == nil {
			out, cut, err = s.c.Send(ctx, req)
		}
	}
	out = strings.TrimSpace(out)
	switch {
	case err != nil:
		return history.Message{}, s.wrap(err)
	case cut:
		return history.Message{}, s.wrap(ErrCut)
	case out == "":
		return history.Message{}, s.wrap(ErrNoText)
	}
	return history.Message{Role: history.RoleUser, Content: out}, nil
}

// sent returns the requests Sent recorded, the newest first.
func (s *Summarizer[P]) sent() []P {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]P(nil), s.last[:s.n]...)
}

// cacheSafe returns the cache-safe request of a summary of dropped,
// folding in previous, built on last; false when there is none (see the
// package documentation).
func (s *Summarizer[P]) cacheSafe(last P, dropped []history.Message, previous *history.Message) (P, bool) {
	var zero P
	c := s.counter()
	prefix, overhead, err := s.c.Prefix(last, c)
	if err != nil {
		return zero, false
	}
	sc, ok := locate(prefix, dropped, previous)
	if !ok {
		return zero, false
	}
	text, ok := instruction(prefix, sc, previous != nil, s.guidance(), s.replyTokens())
	if !ok {
		return zero, false
	}
	if limit := s.cfg.Summary.InputTokens; limit > 0 {
		n := history.Estimate(prefix, c)
		ask := max(c.CountMessage(history.Message{Role: history.RoleUser, Content: text}), 0)
		if n > limit || ask > limit-n || overhead > limit-n-ask {
			return zero, false
		}
	}
	return s.c.CacheSafe(last, text, s.replyTokens())
}

// plain returns the plain request of a summary of dropped, folding in
// previous; sent are the requests recorded, the newest first.
func (s *Summarizer[P]) plain(sent []P, dropped []history.Message, previous *history.Message) (P, error) {
	var lp *P
	model := s.cfg.Model
	if len(sent) > 0 {
		lp = &sent[0]
		if model == "" && s.c.Model != nil {
			model = s.c.Model(sent[0])
		}
	}
	if model == "" && !s.c.NoModel {
		var zero P
		return zero, s.wrap(ErrNoModel)
	}
	return s.c.Plain(model, lp, system(previous != nil, s.guidance(), s.replyTokens()), transcript(dropped, previous), s.replyTokens()), nil
}

// replyTokens is the cap of the reply the provider is asked for.
func (s *Summarizer[P]) replyTokens() int {
	switch {
	case s.cfg.ReplyTokens > 0:
		return s.cfg.ReplyTokens
	case s.cfg.Summary.MaxTokens > 0:
		return s.cfg.Summary.MaxTokens
	}
	return history.DefaultSummaryTokens
}

func (s *Summarizer[P]) guidance() string {
	if p := strings.TrimSpace(s.cfg.Prompt); p != "" {
		return p
	}
	return Prompt
}

func (s *Summarizer[P]) counter() history.Counter {
	if s.cfg.Counter != nil {
		return s.cfg.Counter
	}
	return history.Heuristic()
}

func (s *Summarizer[P]) overflow(err error) bool {
	if s.c.Overflow != nil {
		return s.c.Overflow(err)
	}
	return history.IsContextOverflow(err)
}

// errorf returns the Summarizer's error saying what.
func (s *Summarizer[P]) errorf(what string) error {
	return errors.New("history/" + s.c.Name + ": summarizer: " + what)
}

// wrap returns err prefixed as the Summarizer's, still wrapping it.
func (s *Summarizer[P]) wrap(err error) error {
	return &summaryError{prefix: "history/" + s.c.Name + ": summarizer: ", err: err}
}

// summaryError is an error of the provider or of its reply, as a
// Summarizer returns it.
type summaryError struct {
	prefix string
	err    error
}

func (e *summaryError) Error() string { return e.prefix + e.err.Error() }
func (e *summaryError) Unwrap() error { return e.err }

// Errors of a reply the Summarizer cannot use, which it returns wrapped.
var (
	// ErrNoText: the reply holds no text (only tool calls, or nothing).
	ErrNoText = errors.New("the reply holds no text")
	// ErrCut: the reply stopped at its cap, so the summary is cut short.
	ErrCut = errors.New("the reply stopped at its max tokens, cut short")
	// ErrNoModel: a plain request is due, and neither Config.Model nor
	// a recorded request names its model.
	ErrNoModel = errors.New("no model: set SummarizerConfig.Model, or record the conversation's requests with Sent")
)
