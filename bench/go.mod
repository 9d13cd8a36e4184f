module github.com/histrim/history/bench

go 1.24

require github.com/histrim/history v0.1.0

require (
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	trpc.group/trpc-go/trpc-a2a-go v0.2.6-0.20260721084546-18c8244d0acb // indirect
	trpc.group/trpc-go/trpc-agent-go v1.11.2 // indirect
)


replace github.com/histrim/history => ..
