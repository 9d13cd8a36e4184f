module github.com/histrim/history/adapters/goopenai

go 1.24

require (
	github.com/histrim/history v0.1.0
	github.com/sashabaranov/go-openai v1.43.0
)

require (
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkoukk/tiktoken-go v0.1.8 // indirect
	github.com/pkoukk/tiktoken-go-loader v0.0.2 // indirect
)
