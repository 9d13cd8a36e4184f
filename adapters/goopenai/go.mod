module github.com/histrim/history/adapters/goopenai

go 1.24

require (
	github.com/histrim/history v0.1.0
	github.com/sashabaranov/go-openai v1.43.0
)

