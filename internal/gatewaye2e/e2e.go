// Package gatewaye2e drives the vendors' own TypeScript clients from npm
// (gateway/e2e: openai 7.55.0 for chat, @anthropic-ai/sdk 1.10.0,
// @openai/agents 0.20.0 with its Responses and Chat Completions models) in
// 50-turn tool loops through a gateway, against stand-ins of each API,
// for the gateway's end-to-end tests: package gateway's (the APIs the
// core module trims) and cmd/histrim-gateway's (Responses too, its codec
// registered by the responses adapter).
package gatewaye2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/wire"
)

// nodeRun is one loop of a node client, as loop.mjs reports it.
type nodeRun struct {
	Label, Client          string
	Turns, Failed          int
	ToolRuns, LostToolRuns int
	Errors                 []string
	MS                     int
}

// e2eRun is one loop's setting and what the stand-in saw.
type e2eRun struct {
	label         string
	path          string // the API's path
	window        int
	stream, dense bool
	viaGateway    bool
	trims         func() uint64
	loop          *adaptertest.Loop
	node          nodeRun
	base, control string
	model         string
	turns         int
}

// Client is an npm client the test drives, with the model it asks for,
// the path of its API, and the window and streaming of its loops in the
// default run (with HISTRIM_E2E_FULL set, every client runs at 16k and
// 32k, streamed and not).
type Client struct {
	Name, Model, Path string
	Window            int
	Stream            bool
}

// Clients are the four clients: together they cover both windows and
// both modes (and without agents-responses too).
var Clients = []Client{
	{"chat", "gpt-4o-mini", "/v1/chat/completions", 16_000, false},
	{"anthropic", "claude-sonnet-4-5", "/v1/messages", 32_000, true},
	{"agents-responses", "gpt-4.1-mini", "/v1/responses", 16_000, true},
	{"agents-chat", "gpt-4o-mini", "/v1/chat/completions", 32_000, false},
}

// Gateway starts a gateway in front of upstream whose models have the
// window window (closed when t ends); it returns the gateway's URL and a
// function that counts the requests it trimmed so far.
type Gateway func(t *testing.T, upstream string, window int) (url string, trims func() uint64)

// Run drives clients (node loop.mjs in dir, the directory of gateway/e2e)
// in tool loops against stand-ins of each API (standin.go): once through
// the gateway gw starts, once pointed at the stand-in directly (the
// baseline). Through the gateway, for each API whose requests the
// Transport trims in this program (wire.API.Trims): 0 failed turns, 0
// pairing violations, 0 requests without the latest user message;
// directly: most turns fail. Streamed loops get id-dense tool output, the
// others code-like output. One node process per client; 10 turns under
// the race detector. It skips t, saying why, when HISTRIM_NODE (the node
// binary) is unset.
func Run(t *testing.T, dir string, clients []Client, gw Gateway) {
	node := os.Getenv("HISTRIM_NODE")
	if node == "" {
		t.Skip("HISTRIM_NODE is not set: it names the node binary that runs the npm clients of gateway/e2e (.ci/run installs them with npm ci and sets it)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatalf("HISTRIM_NODE is set but the clients are not installed: run npm ci in %s (%v)", dir, err)
	}
	turns := 50
	if race.Enabled {
		turns = 10
	}
	full := os.Getenv("HISTRIM_E2E_FULL") != ""
	var mu sync.Mutex
	var all []*e2eRun
	t.Run("clients", func(t *testing.T) {
		for _, c := range clients {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				var runs []*e2eRun
				for _, window := range []int{16_000, 32_000} {
					for _, stream := range []bool{false, true} {
						if !full && (window != c.Window || stream != c.Stream) {
							continue
						}
						for _, via := range []bool{true, false} {
							r := &e2eRun{path: c.Path, window: window, stream: stream, dense: stream, viaGateway: via, model: c.Model, turns: turns,
								loop: adaptertest.NewLoop(c.Name, adaptertest.Skew(1), window)}
							r.loop.Turns = turns
							kind, mode, where := "code", "json", "direct"
							if r.dense {
								kind = "dense"
							}
							if stream {
								mode = "stream"
							}
							if via {
								where = "gateway"
							}
							r.label = fmt.Sprintf("%s/%dk/%s/%s/%s", c.Name, window/1000, mode, kind, where)
							st := newStandin(r.loop, r.dense)
							srv := httptest.NewServer(st)
							t.Cleanup(srv.Close)
							r.base, r.control = srv.URL, srv.URL
							if via {
								r.base, r.trims = gw(t, srv.URL, window)
							}
							runs = append(runs, r)
						}
					}
				}
				runNode(t, node, dir, c.Name, runs)
				mu.Lock()
				all = append(all, runs...)
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	var table strings.Builder
	table.WriteString("| client | window | mode | tool output | via | turns | failed turns | requests | overflows | pairing violations | without the latest user message | tool runs | tool runs thrown away |\n|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	trims := 0
	for _, r := range all {
		s := r.loop.Stats()
		parts := strings.Split(r.label, "/")
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", parts[0], parts[1], parts[2], parts[3], parts[4],
			r.node.Turns, r.node.Failed, s.Requests, s.Overflows, s.Violations, s.Missing, r.node.ToolRuns, r.node.LostToolRuns)
		if r.trims != nil {
			trims += int(r.trims())
		}
	}
	t.Logf("the npm clients' loops (%d turns):\n%s", turns, table.String())
	for _, r := range all {
		// Most turns fail without the gateway; in the race detector's 10
		// turns the history has only begun to outgrow the window.
		most := 2*r.node.Failed > r.node.Turns
		if race.Enabled {
			most = r.node.Failed > 0
		}
		if !r.viaGateway && !most {
			t.Errorf("%s: without the gateway only %d of %d turns failed: the baseline does not overflow (notes: %v)", r.label, r.node.Failed, r.node.Turns, r.loop.Notes())
		}
	}
	if trims == 0 {
		t.Fatal("the gateways trimmed nothing")
	}
	var unread []string
	for _, r := range all {
		s := r.loop.Stats()
		if !r.viaGateway {
			continue
		}
		if !wire.Detect(r.path).Trims() {
			if !slices.Contains(unread, r.path) {
				unread = append(unread, r.path)
			}
			continue
		}
		if r.node.Failed > 0 || s.Violations > 0 || s.Missing > 0 {
			t.Errorf("%s through the gateway: %d failed turns, %d pairing violations, %d requests without the latest user message; errors %v; notes %v",
				r.label, r.node.Failed, s.Violations, s.Missing, r.node.Errors, r.loop.Notes())
		}
	}
	if len(unread) > 0 {
		t.Logf("not checked through the gateway: the trimming transport does not read %v in this program (their codec is registered by an adapter module: cmd/histrim-gateway's test checks them), so the gateway forwards those requests untouched", unread)
	}
}

// runNode runs loop.mjs for one client over runs, one node process, and
// records each run's report.
func runNode(t *testing.T, node, dir, client string, runs []*e2eRun) {
	t.Helper()
	type spec struct {
		Label   string `json:"label"`
		Base    string `json:"base"`
		Control string `json:"control"`
		Model   string `json:"model"`
		Stream  bool   `json:"stream"`
		Turns   int    `json:"turns"`
	}
	cfg := struct {
		Client string `json:"client"`
		Runs   []spec `json:"runs"`
	}{Client: client}
	for _, r := range runs {
		cfg.Runs = append(cfg.Runs, spec{r.label, r.base, r.control, r.model, r.stream, r.turns})
	}
	b, _ := json.Marshal(cfg)
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	limit := 5 * time.Minute
	if len(runs) > 2 { // HISTRIM_E2E_FULL: eight loops in one process
		limit = 20 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "loop.mjs", file)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node loop.mjs (%s): %v\n%s\n%s", client, err, out, stderr.String())
	}
	byLabel := map[string]*e2eRun{}
	for _, r := range runs {
		byLabel[r.label] = r
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	got := 0
	for sc.Scan() {
		var nr nodeRun
		if err := json.Unmarshal(sc.Bytes(), &nr); err != nil {
			t.Fatalf("node printed %q: %v", sc.Text(), err)
		}
		r := byLabel[nr.Label]
		if r == nil {
			t.Fatalf("node reported an unknown run %q", nr.Label)
		}
		r.node = nr
		got++
	}
	if got != len(runs) {
		t.Fatalf("node reported %d runs of %d\n%s", got, len(runs), stderr.String())
	}
}
