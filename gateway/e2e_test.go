package gateway

import (
	"path/filepath"
	"testing"

	"github.com/histrim/history/internal/gatewaye2e"
	"github.com/histrim/history/wire"
)

// TestNodeClients drives the vendors' own TypeScript clients from npm
// (openai 7.55.0 for chat, @anthropic-ai/sdk 1.10.0, @openai/agents
// 0.20.0 with its Responses and Chat Completions models; gateway/e2e's
// package.json) in 50-turn tool loops, streamed and not, at 16k and 32k
// windows, against stand-ins of each API (internal/gatewaye2e): once
// through the gateway, once pointed at the stand-in directly (the
// baseline). Through the gateway: 0 failed turns, 0 pairing violations, 0
// requests without the latest user message; directly: most turns fail.
// One node process per client, each client at one window and mode (the
// four together cover both of each), or all four with HISTRIM_E2E_FULL
// set (docs/gateway.md's table); 10 turns under the race detector. The
// Agents SDK's Responses model is not driven here: `histrim serve` does
// not read Responses (package wire trims it only where the responses
// adapter registered its codec), and cmd/histrim-gateway's
// TestNodeResponses drives it through the gateway that does.
func TestNodeClients(t *testing.T) {
	dir, _ := filepath.Abs("e2e")
	var clients []gatewaye2e.Client
	for _, c := range gatewaye2e.Clients {
		if wire.Detect(c.Path).Trims() {
			clients = append(clients, c)
		}
	}
	gatewaye2e.Run(t, dir, clients, func(t *testing.T, upstream string, window int) (string, func() uint64) {
		g, srv := newTestGateway(t, Config{Upstream: upstream, Window: window})
		return srv.URL, func() uint64 { return g.metrics.total(mTrims) }
	})
}
