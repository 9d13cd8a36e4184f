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
	"regexp"
	"slices"
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

// startGateway serves a gateway over upstream with the store at storeURL
// (and window, when positive, as every model's window: -window).
func startGateway(t *testing.T, upstream, storeURL string, window int) string {
	t.Helper()
	g, err := gateway.New(context.Background(), gateway.Config{Upstream: upstream, Store: storeURL, Window: window}, nil)
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
			gws = append(gws, startGateway(t, upSrv.URL, storeURL, 0))
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
	sameRequests(t, one, three, failedOne, failedThree, "each replica's trims aim with its own Calibration of the model (docs/gateway.md, Limits)")
	t.Logf("%d requests, %d trimmed, byte for byte the same through one gateway and three", len(one), trimmed)
}

// truncating is an upstream that truncates a prompt over numCtx tokens
// silently, as Ollama does over its num_ctx: it answers, and its usage
// counts numCtx.
type truncating struct {
	next    http.Handler
	numCtx  int
	mu      sync.Mutex
	prompts []int // the prompt of each request, as counted before truncating
}

var promptTokens = regexp.MustCompile(`"prompt_tokens":\s*(\d+)`)

func (u *truncating) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	u.next.ServeHTTP(rec, r)
	body := promptTokens.ReplaceAllFunc(rec.Body.Bytes(), func(m []byte) []byte {
		n, _ := strconv.Atoi(string(promptTokens.FindSubmatch(m)[1]))
		u.mu.Lock()
		u.prompts = append(u.prompts, n)
		u.mu.Unlock()
		return []byte(`"prompt_tokens":` + strconv.Itoa(min(n, u.numCtx)))
	})
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// TestReplicasTruncationOverRedis: the loop of TestReplicasOverRedis
// against an upstream that truncates every prompt over 8,192 tokens
// silently (a local server over its num_ctx), behind gateways told a
// window of 32,768: three replicas sharing a Redis learn the window at the
// response one gateway learns it, and send its prompts byte for byte.
// (Before, each replica learnt from the truncations it saw itself: with
// random routing, two in a row at one replica came later than at one
// gateway, and the replicas sent whole prompts that one gateway trimmed.)
func TestReplicasTruncationOverRedis(t *testing.T) {
	addr := os.Getenv("HISTRIM_REDIS_ADDR")
	if addr == "" {
		t.Skip("HISTRIM_REDIS_ADDR is not set: no Redis to share (.ci/run starts one; by hand: source .ci/services && histrim_services_start)")
	}
	register()
	const window, numCtx = 32_768, 8_192
	turns := 20
	if race.Enabled {
		turns = 8
	}
	run := func(replicas int, storeURL string) (received [][]byte, prompts []int, failed int) {
		l := adaptertest.NewLoop("gateway", adaptertest.Skew(1), 1<<20) // the server refuses nothing
		up := &upstreamLog{srv: &loopserver.OpenAI{Judge: l, Window: 1 << 20}}
		tr := &truncating{next: up, numCtx: numCtx}
		upSrv := httptest.NewServer(tr)
		defer upSrv.Close()
		var gws []string
		for range replicas {
			gws = append(gws, startGateway(t, upSrv.URL, storeURL, window))
		}
		rng := rand.New(rand.NewPCG(35, 4))
		_, failed = chatLoop(t, l, turns, gws, func() int { return rng.IntN(len(gws)) })
		return up.bodies, tr.prompts, failed
	}
	one, truncOne, failedOne := run(1, "memory:")
	prefix := "histrim-truncation-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	three, _, failedThree := run(3, "redis://"+addr+"/0?prefix="+prefix)
	// The prompts grow past twice the server's window (a count under half
	// of what was sent is a truncation: wire's rule), two truncations in a
	// row teach the window, and from then on every prompt fits it: none
	// after the last prompt over twice the window is truncated.
	over, last := 0, -1
	for i, p := range truncOne {
		if p > 2*numCtx {
			over, last = over+1, i
		}
	}
	late := 0
	for _, p := range truncOne[last+1:] {
		if p > numCtx {
			late++
		}
	}
	if over < 2 || last == len(truncOne)-1 || late > 0 {
		t.Errorf("one gateway: %d prompts over twice the window (want 2 or more, to learn it), the last of them request %d of %d, %d truncated after it (want 0): %v", over, last, len(truncOne), late, truncOne)
	}
	sameRequests(t, one, three, failedOne, failedThree, "each replica learns a silent truncation's window from what it sees alone")
	t.Logf("%d requests, byte for byte the same through one gateway and three; the largest prompt %d, %d over twice the window before it was learnt", len(one), slices.Max(truncOne), over)
}

// sameRequests fails t unless the upstream received the same requests,
// byte for byte, from one gateway (one) and from three (three), and no
// turn failed; why says what a difference would mean.
func sameRequests(t *testing.T, one, three [][]byte, failedOne, failedThree int, why string) {
	t.Helper()
	if len(one) != len(three) {
		t.Fatalf("one gateway sent %d requests upstream, three sent %d", len(one), len(three))
	}
	for i := range one {
		if !bytes.Equal(one[i], three[i]) {
			t.Fatalf("request %d differs between one gateway and three (%d and %d bytes): %s", i, len(one[i]), len(three[i]), why)
		}
	}
	if failedOne != 0 || failedThree != 0 {
		t.Errorf("failed turns: %d with one gateway, %d with three", failedOne, failedThree)
	}
}
