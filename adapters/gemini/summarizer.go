package gemini

import (
	"context"
	"slices"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/summarize"
	"google.golang.org/genai"
)

// Request is one GenerateContent call of a conversation, its three
// arguments: what a [Summarizer] records (Sent) and repeats.
type Request struct {
	Model    string
	Contents []*genai.Content
	Config   *genai.GenerateContentConfig
}

// Summarizer is a ready-made [history.Summarizer] on GenerateContent
// (docs/summaries.md): Summarize, Sent(Request), which records each call
// the conversation makes, and Option, for the Trimmer:
//
//	sum := hgemini.NewSummarizer(client, hgemini.SummarizerConfig{})
//	tr := hgemini.NewTrimmer(config.SystemInstruction, sum.Option(), history.WithLowWater(0.7))
//	// before every call:
//	contents, _, err := tr.Trim(transcript, window)
//	sum.Sent(hgemini.Request{Model: model, Contents: contents, Config: config})
//	resp, err := client.Models.GenerateContent(ctx, model, contents, config)
//
// Its summary call is the last call recorded (system instruction, tools,
// cached content and contents as they were), the instruction appended as a
// user content and maxOutputTokens set, so that the model reads the
// conversation from its implicit (or explicit) cache. It makes a call of
// its own instead when that call forces a function call (mode ANY) or a
// reply that is not text (a JSON MIME type or schema, modalities other
// than text), and in the other cases docs/summaries.md lists. A reply
// that stopped at MAX_TOKENS is an error. It is safe for concurrent use;
// use one per conversation.
type Summarizer = summarize.Summarizer[Request]

// SummarizerConfig configures a [Summarizer]; every adapter's is this
// one type (docs/summaries.md lists its fields).
type SummarizerConfig = summarize.Config

// NewSummarizer returns a [Summarizer] that calls client.Models.GenerateContent.
func NewSummarizer(client *genai.Client, cfg SummarizerConfig) *Summarizer {
	return summarize.New(&summarize.Codec[Request]{
		Name:      "gemini",
		Prefix:    summaryPrefix,
		Model:     func(last Request) string { return last.Model },
		CacheSafe: summaryRequest,
		Plain:     plainSummaryRequest,
		Send: func(ctx context.Context, req Request) (string, bool, error) {
			r, err := client.Models.GenerateContent(ctx, req.Model, req.Contents, req.Config)
			if err != nil || len(r.Candidates) == 0 || r.Candidates[0] == nil {
				return "", false, err
			}
			c := r.Candidates[0]
			return contentText(c.Content), c.FinishReason == genai.FinishReasonMaxTokens, nil
		},
	}, cfg)
}

// summaryPrefix returns the system instruction (as a system message) and
// the contents of last, converted, and the count of its tools and
// response schema.
func summaryPrefix(last Request, c history.Counter) ([]history.Message, int, error) {
	msgs, err := ToHistory(last.Contents)
	if last.Config != nil && last.Config.SystemInstruction != nil {
		sys := history.Message{Role: history.RoleSystem, Content: contentText(last.Config.SystemInstruction)}
		msgs = append([]history.Message{sys}, msgs...)
	}
	return msgs, Overhead(last.Config, c), err
}

// summaryRequest is the cache-safe form: last, text appended as a user
// content, maxOutputTokens tokens. false when last forces a function call
// or a reply that is not text.
func summaryRequest(last Request, text string, tokens int) (Request, bool) {
	var cfg genai.GenerateContentConfig
	if last.Config != nil {
		cfg = *last.Config
	}
	forced := cfg.ToolConfig != nil && cfg.ToolConfig.FunctionCallingConfig != nil &&
		cfg.ToolConfig.FunctionCallingConfig.Mode == genai.FunctionCallingConfigModeAny
	notText := (cfg.ResponseMIMEType != "" && cfg.ResponseMIMEType != "text/plain") || cfg.ResponseSchema != nil ||
		cfg.ResponseJsonSchema != nil || slices.ContainsFunc(cfg.ResponseModalities, func(m string) bool { return !strings.EqualFold(m, "TEXT") })
	if forced || notText {
		return last, false
	}
	cfg.MaxOutputTokens = int32(min(tokens, 1<<31-1))
	return Request{Model: last.Model, Config: &cfg,
		Contents: append(slices.Clip(last.Contents), genai.NewContentFromText(text, genai.RoleUser))}, true
}

// plainSummaryRequest is the plain form: system as the system
// instruction, user as the one user content, to model, maxOutputTokens
// tokens.
func plainSummaryRequest(model string, _ *Request, system, user string, tokens int) Request {
	return Request{Model: model, Contents: []*genai.Content{genai.NewContentFromText(user, genai.RoleUser)},
		Config: &genai.GenerateContentConfig{
			SystemInstruction: genai.NewContentFromText(system, genai.RoleUser),
			MaxOutputTokens:   int32(min(tokens, 1<<31-1)),
		}}
}

// contentText returns the text parts of c that are not thoughts, joined.
func contentText(c *genai.Content) string {
	if c == nil {
		return ""
	}
	var texts []string
	for _, p := range c.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
