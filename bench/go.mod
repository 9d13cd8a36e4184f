module github.com/histrim/history/bench

go 1.24

require github.com/histrim/history v0.0.0

require (
	github.com/histrim/history/frameworks/trpc v0.0.0-00010101000000-000000000000
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	trpc.group/trpc-go/trpc-a2a-go v0.2.6-0.20260721084546-18c8244d0acb // indirect
	trpc.group/trpc-go/trpc-agent-go v1.11.2
)

replace github.com/histrim/history => ..

replace github.com/histrim/history/frameworks/trpc => ../frameworks/trpc
