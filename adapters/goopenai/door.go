package goopenai

import (
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	openai "github.com/sashabaranov/go-openai"
)

// door is what the door reads of a go-openai request and writes back (see
// Trimmer.Fit): the model, MaxCompletionTokens (else the deprecated
// MaxTokens), the overhead Overhead counts, the messages; and the usage's
// PromptTokens.
var door = &adapt.Door[openai.ChatCompletionRequest, openai.Usage, struct{}, openai.ChatCompletionMessage]{
	Read: func(r openai.ChatCompletionRequest) adapt.Request[struct{}, openai.ChatCompletionMessage] {
		out := r.MaxCompletionTokens
		if out <= 0 {
			//lint:ignore SA1019 a request that still sets the deprecated field asks this room
			out = r.MaxTokens
		}
		return adapt.Request[struct{}, openai.ChatCompletionMessage]{
			Model: r.Model, Output: out, Messages: r.Messages,
			Overhead: func(c history.Counter) int { return Overhead(r, c) },
		}
	},
	Write: func(r openai.ChatCompletionRequest, msgs []openai.ChatCompletionMessage, _ []history.Option) openai.ChatCompletionRequest {
		r.Messages = msgs
		return r
	},
	Usage: func(u openai.Usage) int { return u.PromptTokens },
}
