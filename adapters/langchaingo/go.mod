module github.com/histrim/history/adapters/langchaingo

go 1.24.4

require (
	github.com/histrim/history v0.1.0
	github.com/pkoukk/tiktoken-go v0.1.8
	github.com/tmc/langchaingo v0.1.14
)

require (
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

