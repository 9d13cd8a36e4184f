package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/histrim/history/gateway"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/race"
)

// upstreamLog is a chat-completions stand-in (loopserver.OpenAI, counting
// as the Loop's mode, rejecting over its window with OpenAI's 400) that
// records every body it receives.
type upstreamLog struct {
	mu     sync.Mutex
	bodies [][]byte
	srv    *loopserver.OpenAI
}

func (u *upstreamLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.bodies = append(u.bodies, b)
	u.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(b))
	u.srv.ServeHTTP(w, r)
}

// chatLoop drives turns user turns of the loops' script through the
// gateways, each request to one of them picked by pick: the client keeps
// its whole history and sends it every time, as a plain tool loop does.
// It returns the bodies the client sent and the number of failed turns.
func chatLoop(t *testing.T, l *adaptertest.Loop, turns int, gateways []string, pick func() int) (sent [][]byte, failed int) {
	t.Helper()
	msgs := []map[string]any{{"role": "system", "content": loopserver.SystemPrompt}}
	var tools []any
	for _, name := range loopserver.ToolNames {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{
			"name": name, "description": loopserver.ToolDescription(name), "parameters": loopserver.ToolParameters()}})
	}
	for n := 1; n <= turns; n++ {
		task := loopserver.Task(n)
		l.Turn(n, task)
		msgs = append(msgs, map[string]any{"role": "user", "content": task})
		for step := 0; ; step++ {
			if step > 10 {
				t.Fatalf("turn %d: no final answer after 10 steps", n)
			}
			body, _ := json.Marshal(map[string]any{"model": "gpt-3.5-turbo", "messages": msgs, "tools": tools, "max_tokens": 1024})
			sent = append(sent, body)
			resp, err := http.Post(gateways[pick()]+"/v1/chat/completions", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			rb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed++
				l.Error(fmt.Errorf("status %d: %.200s", resp.StatusCode, rb))
				break
			}
			var out struct {
				Choices []struct {
					Message map[string]any `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(rb, &out); err != nil || len(out.Choices) == 0 {
				t.Fatalf("turn %d: answer %.200s", n, rb)
			}
			m := out.Choices[0].Message
			msgs = append(msgs, m)
			calls, _ := m["tool_calls"].([]any)
			if len(calls) == 0 {
				break
			}
			for _, c := range calls {
				id := c.(map[string]any)["id"].(string)
				msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": id, "content": loopserver.ToolResult(id, l.Words)})
			}
		}
	}
	return sent, failed
}

// startGateway serves a gateway over upstream with the store at storeURL.
func startGateway(t *testing.T, upstream, storeURL string) string {
	t.Helper()
	g, err := gateway.New(context.Background(), gateway.Config{Upstream: upstream, Store: storeURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() { srv.Close(); g.Close() })
	return srv.URL
}

// TestReplicasOverRedis runs one 50-turn chat tool loop through one
// gateway (memory store) and the same loop through three gateways sharing
// a Redis, each request routed to one of them at random: the upstream
// receives the same prompts byte for byte (issue 35's acceptance).
func TestReplicasOverRedis(t *testing.T) {
	addr := os.Getenv("HISTRIM_REDIS_ADDR")
	if addr == "" {
		t.Skip("HISTRIM_REDIS_ADDR is not set: no Redis to share (.ci/run starts one; by hand: source .ci/services && histrim_services_start)")
	}
	register()
	turns := 50
	if race.Enabled {
		turns = 15
	}
	run := func(replicas int, storeURL string) (sent, received [][]byte, failed int) {
		l := adaptertest.NewLoop("gateway", adaptertest.Skew(1), 16_385)
		up := &upstreamLog{srv: &loopserver.OpenAI{Judge: l, Window: 16_385}}
		upSrv := httptest.NewServer(up)
		defer upSrv.Close()
		var gws []string
		for range replicas {
			gws = append(gws, startGateway(t, upSrv.URL, storeURL))
		}
		rng := rand.New(rand.NewPCG(35, 3))
		sent, failed = chatLoop(t, l, turns, gws, func() int { return rng.IntN(len(gws)) })
		return sent, up.bodies, failed
	}
	_, one, failedOne := run(1, "memory:")
	prefix := "histrim-replicas-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	sent, three, failedThree := run(3, "redis://"+addr+"/0?prefix="+prefix)

	trimmed := 0
	for i := range min(len(sent), len(three)) {
		if !bytes.Equal(sent[i], three[i]) {
			trimmed++
		}
	}
	if trimmed == 0 {
		t.Skip("the gateways forwarded every request as the client sent it: this tree has no trimming transport under the gateway yet (package wire), so there is nothing replicas could send differently")
	}
	if len(one) != len(three) {
		t.Fatalf("one gateway sent %d requests upstream, three sent %d", len(one), len(three))
	}
	for i := range one {
		if !bytes.Equal(one[i], three[i]) {
			t.Fatalf("request %d differs between one gateway and three (%d and %d bytes): each replica's trims aim with its own Calibration of the model (docs/gateway.md, Limits)", i, len(one[i]), len(three[i]))
		}
	}
	if failedOne != 0 || failedThree != 0 {
		t.Errorf("failed turns: %d with one gateway, %d with three", failedOne, failedThree)
	}
	t.Logf("%d requests, %d trimmed, byte for byte the same through one gateway and three", len(one), trimmed)
}
