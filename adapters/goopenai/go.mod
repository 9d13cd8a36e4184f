module github.com/histrim/history/adapters/goopenai

go 1.24

require (
	github.com/histrim/history v0.0.0-00010101000000-000000000000
	github.com/sashabaranov/go-openai v1.43.0
)

replace github.com/histrim/history => ../..
