package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/histrim/history/internal/latency"

	"github.com/histrim/history"
	"github.com/histrim/history/models"
)

// canned is an upstream that reads the request's body, as a connection
// would, and answers with a small completion: what the benchmark measures
// is the Transport's own work.
type canned struct{ stream bool }

func (c canned) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	_ = req.Body.Close()
	body, ct := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1000,"completion_tokens":2}}`, "application/json"
	if c.stream {
		body, ct = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n", "text/event-stream"
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// benchBody returns a chat body of about tokens tokens (the Heuristic's
// count): a tool loop whose results are 200 words each.
func benchBody(tokens int) []byte {
	return []byte(chatBody(benchTurns(tokens), 200))
}

// benchTurns is the number of turns of benchBody(tokens).
func benchTurns(tokens int) int { return max(tokens/history.EstimateText(chatBody(1, 200)), 1) }

// growing returns the bodies of a conversation of turns turns and of the
// 7 turns it goes on to (body(turns) is a conversation of turns turns),
// for latency.Cycle: a client that appends a turn on every request.
func growing(turns int, body func(turns int) string) [][]byte {
	var bodies [][]byte
	for k := range 8 {
		bodies = append(bodies, []byte(body(turns+k)))
	}
	return bodies
}

// BenchmarkTransport measures the latency a Transport adds to a chat
// request of 10k, 100k and 1M tokens (JSON) over forwarding the same body
// untouched: "forward" is the upstream alone, "trim" the Transport over
// it, with a window of half the body (so that it trims; the
// conversation's plan kept from request to request, as in a loop whose
// client resends its transcript). Each reports p50 and p99 of one
// request's time, besides ns/op. "stream-forward" and "stream-trim" are
// the same with "stream": true and a streamed answer, timed to the first
// byte of the stream the caller reads. "grow" (100k tokens) is "trim" for
// a client that appends a turn on every request, 8 requests, and starts
// over (growing): what a request resends as it came is the part the
// Transport's memos find again.
func BenchmarkTransport(b *testing.B) {
	for _, tokens := range []int{10_000, 100_000, 1_000_000} {
		body := benchBody(tokens)
		window := tokens / 2
		tr := &Transport{Base: canned{}, Logger: quiet(), Models: func(_ context.Context, name string) (models.Model, error) {
			return models.Model{Name: name, Window: window}, nil
		}}
		stream := bytes.Replace(body, []byte(`"stream": false`), []byte(`"stream": true`), 1)
		trs := &Transport{Base: canned{stream: true}, Logger: quiet(), Models: tr.Models}
		modes := []string{"forward", "trim", "stream-forward", "stream-trim"}
		if tokens == 100_000 {
			modes = append(modes, "grow")
		}
		for _, mode := range modes {
			b.Run(fmt.Sprintf("%dk/%s", tokens/1000, mode), func(b *testing.B) {
				var rt http.RoundTripper
				body := body
				switch mode {
				case "forward":
					rt = canned{}
				case "trim":
					rt = tr
				case "stream-forward":
					rt, body = canned{stream: true}, stream
				case "stream-trim":
					rt, body = trs, stream
				case "grow":
					tr := &Transport{Base: canned{}, Logger: quiet(), Models: tr.Models}
					latency.Cycle(b, tr, "http://upstream/v1/chat/completions", growing(benchTurns(tokens), func(turns int) string { return chatBody(turns, 200) }), true)
					return
				}
				latency.Requests(b, rt, "http://upstream/v1/chat/completions", body, true) // to the first byte
			})
		}
	}
}

// BenchmarkTransportAnthropic is BenchmarkTransport's JSON case, and its
// "grow", for a Messages body of 100k tokens (thinking blocks, tool calls
// and results).
func BenchmarkTransportAnthropic(b *testing.B) {
	turns := max(100_000/history.EstimateText(anthropicBody(1, 200)), 1)
	body := []byte(anthropicBody(turns, 200))
	tr := &Transport{Base: canned{}, Logger: quiet(), Models: func(_ context.Context, name string) (models.Model, error) {
		return models.Model{Name: name, Window: 50_000}, nil
	}}
	for _, mode := range []string{"forward", "trim", "grow"} {
		b.Run("100k/"+mode, func(b *testing.B) {
			var rt http.RoundTripper = canned{}
			switch mode {
			case "trim":
				rt = tr
			case "grow":
				tr := &Transport{Base: canned{}, Logger: quiet(), Models: tr.Models}
				latency.Cycle(b, tr, "http://upstream/v1/messages", growing(turns, func(turns int) string { return anthropicBody(turns, 200) }), false)
				return
			}
			latency.Requests(b, rt, "http://upstream/v1/messages", body, false)
		})
	}
}
