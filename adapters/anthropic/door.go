package anthropic

import (
	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// door is what the door reads of a Messages request and writes back (see
// Trimmer.Fit): the model, max_tokens, the system prompt, the overhead
// Overhead counts, the messages; written back with a cache breakpoint on
// the new prefix (MarkPrefix) when the request's breakpoints (automatic
// caching's, the tools', the system prompt's) leave room for it; and the
// usage's input tokens, cached ones included.
var door = &adapt.Door[anthropic.MessageNewParams, anthropic.Usage, []anthropic.TextBlockParam, anthropic.MessageParam]{
	Read: func(p anthropic.MessageNewParams) adapt.Request[[]anthropic.TextBlockParam, anthropic.MessageParam] {
		return adapt.Request[[]anthropic.TextBlockParam, anthropic.MessageParam]{
			Model: string(p.Model), Output: int(min(max(p.MaxTokens, 0), 1<<31-1)), System: p.System, Messages: p.Messages,
			Overhead: func(c history.Counter) int { return Overhead(p, c) },
		}
	},
	Write: func(p anthropic.MessageNewParams, msgs []anthropic.MessageParam, opts []history.Option) anthropic.MessageNewParams {
		p.Messages = msgs
		q := p
		q.Messages = MarkPrefix(p.System, msgs, opts...)
		if sdk.Breakpoints(q) == nil {
			return q
		}
		return p
	},
	Usage: func(u anthropic.Usage) int {
		return int(min(max(u.InputTokens, 0)+max(u.CacheCreationInputTokens, 0)+max(u.CacheReadInputTokens, 0), 1<<31-1))
	},
}
