package openai

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/openai/openai-go/v3"
)

// door is what the door reads of a Chat Completions request and writes
// back (see Trimmer.Fit): the model, max_completion_tokens (else the
// deprecated max_tokens), the overhead Overhead counts, the messages; and
// the usage's prompt_tokens.
var door = &adapt.Door[openai.ChatCompletionNewParams, openai.CompletionUsage, struct{}, openai.ChatCompletionMessageParamUnion]{
	Read: func(p openai.ChatCompletionNewParams) adapt.Request[struct{}, openai.ChatCompletionMessageParamUnion] {
		out := p.MaxCompletionTokens.Value
		if out <= 0 {
			out = p.MaxTokens.Value
		}
		return adapt.Request[struct{}, openai.ChatCompletionMessageParamUnion]{
			Model: string(p.Model), Output: int(min(max(out, 0), 1<<31-1)), Messages: p.Messages,
			Overhead: func(c history.Counter) int { return Overhead(p, c) },
		}
	},
	Write: func(p openai.ChatCompletionNewParams, msgs []openai.ChatCompletionMessageParamUnion, _ []history.Option) openai.ChatCompletionNewParams {
		p.Messages = msgs
		return p
	},
	Usage: func(u openai.CompletionUsage) int { return int(min(max(u.PromptTokens, 0), 1<<31-1)) },
}
