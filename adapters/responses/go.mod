module github.com/histrim/history/adapters/responses

go 1.24

require (
	github.com/histrim/history v0.1.0
	github.com/openai/openai-go/v3 v3.44.0
)

require (
	github.com/tidwall/gjson v1.18.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)

