package wire

import (
	"io"

	"testing"
)

// TestUsage reads the prompt's count in each API's response, whole and
// streamed, the stream cut into pieces of every size (a usage event split
// across reads is still read), with the reason for each case.
func TestUsage(t *testing.T) {
	cases := []struct {
		name string
		api  API
		sse  bool
		body string
		want int
	}{
		{"chat completion", ChatCompletions, false, `{"id":"x","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":3}}`, 1200},
		{"chat stream: the include_usage chunk", ChatCompletions, true,
			"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":77,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", 77},
		{"chat stream with CRLF lines", ChatCompletions, true, "data: {\"usage\":{\"prompt_tokens\":9}}\r\n\r\n", 9},
		{"chat stream without usage", ChatCompletions, true, "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", 0},
		{"anthropic message: input and both cache figures", AnthropicMessages, false,
			`{"type":"message","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":5}}`, 3210},
		{"anthropic stream: message_start", AnthropicMessages, true,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":40,\"cache_read_input_tokens\":60}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"x\"}}\n\n", 100},
		{"responses: usage.input_tokens (cached tokens are part of it)", Responses, false,
			`{"id":"resp_1","object":"response","output":[],"usage":{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096},"output_tokens":7,"total_tokens":5007}}`, 5000},
		{"responses stream: response.completed, not response.created's null usage", Responses, true,
			"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"usage\":null}}\n\n" +
				"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"tokens\"}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_1\",\"usage\":{\"input_tokens\":812,\"output_tokens\":3}}}\n\n", 812},
		{"gemini: usageMetadata.promptTokenCount (cached content is part of it)", Gemini, false,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]}}],"usageMetadata":{"promptTokenCount":4100,"cachedContentTokenCount":4000,"candidatesTokenCount":3,"totalTokenCount":4103}}`, 4100},
		{"gemini stream (alt=sse): the last chunk's promptTokenCount, CRLF-framed", Gemini, true,
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],\"usageMetadata\":{\"promptTokenCount\":900}}\r\n\r\n" +
				"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]}}],\"usageMetadata\":{\"promptTokenCount\":905,\"candidatesTokenCount\":2}}\r\n\r\n", 905},
		{"gemini stream without alt=sse: one JSON array of chunks", Gemini, false,
			`[{"candidates":[],"usageMetadata":{"promptTokenCount":70}},{"candidates":[],"usageMetadata":{"promptTokenCount":77}}]`, 77},
		{"gemini: a chat usage is not Gemini's", Gemini, false, `{"usage":{"prompt_tokens":5}}`, 0},
		{"a body that is not JSON", ChatCompletions, false, `<html>`, 0},
	}
	for _, c := range cases {
		for piece := 1; piece <= len(c.body); piece++ {
			got := 0
			calls := 0
			u := newUsageBody(io.NopCloser(&chunked{s: c.body, n: piece}), c.api, c.sse, func(n int) { got = n; calls++ })
			out, err := io.ReadAll(u)
			if err != nil || string(out) != c.body {
				t.Fatalf("%s: the body changed in passing: %q, %v", c.name, out, err)
			}
			_ = u.Close()
			if got != c.want || calls > 1 {
				t.Fatalf("%s, read %d bytes at a time: got %d (%d reports), want %d", c.name, piece, got, calls, c.want)
			}
			if !c.sse {
				break
			}
		}
	}
}

// chunked reads s n bytes at a time.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.s))
	copy(p, c.s[:k])
	c.s = c.s[k:]
	return k, nil
}
