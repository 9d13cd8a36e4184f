module github.com/histrim/history/adapters/openai/sdklatest

go 1.26.0

require (
	github.com/histrim/history v0.1.0
	github.com/histrim/history/adapters/openai v0.1.0
	github.com/openai/openai-go/v3 v3.96.0
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkoukk/tiktoken-go v0.1.8 // indirect
	github.com/pkoukk/tiktoken-go-loader v0.0.2 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)

replace (
	github.com/histrim/history => ../../..
	github.com/histrim/history/adapters/openai => ..
)
