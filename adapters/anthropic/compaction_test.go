package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/anthropicserver"
	"github.com/histrim/history/internal/loopserver"
)

// TestServerCompactionV1: the v1 client (anthropic-sdk-go v1.84.0) with
// server compaction on (context_management set on the request's JSON,
// since v1's GA params do not model it) against the local Messages API:
// the SDK returns compaction blocks as blocks of a type it does not model
// and sends them back as their raw JSON; the adapter drops what precedes
// the latest one, sends it first and byte for byte, and no request is
// rejected.
func TestServerCompactionV1(t *testing.T) {
	srv := &anthropicserver.Server{Backend: "anthropic", Window: 12_000}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	client := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("test"), option.WithMaxRetries(0),
		option.WithJSONSet("context_management", map[string]any{"edits": []any{map[string]any{
			"type": "compact_20260112", "trigger": map[string]any{"type": "input_tokens", "value": 8000}}}}))
	system := []anthropic.TextBlockParam{{Text: loopserver.SystemPrompt}}
	params := anthropic.MessageNewParams{Model: "claude-sonnet-5-5", MaxTokens: 1024, System: system}
	tr := NewTrimmer(system)
	var transcript []anthropic.MessageParam
	requests := 0
	for turn := 1; requests < 80; turn++ {
		transcript = append(transcript, user(text(loopserver.Task(turn))))
		for requests < 80 {
			out, _, err := tr.Trim(transcript, 12_000)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatal(err)
			}
			params.Messages = out
			requests++
			reply, err := client.Messages.New(context.Background(), params)
			if err != nil {
				t.Fatalf("request %d: %v", requests, err)
			}
			transcript = append(transcript, reply.ToParam())
			var results []anthropic.ContentBlockParamUnion
			for _, b := range reply.Content {
				if b.Type == "tool_use" {
					results = append(results, result(b.ID, loopserver.ToolResult(b.ID, loopserver.Words(250, 1150))))
				}
			}
			if len(results) == 0 {
				break
			}
			transcript = append(transcript, user(results...))
		}
	}
	s := srv.Stats()
	t.Logf("v1 client: %d requests, %d accepted, %d compactions, %d compaction blocks sent back (%d byte for byte), cache rewrites client %d server %d",
		s.Requests, s.Accepted, s.Compactions, s.Opaque, s.Verbatim, s.ClientRewrites, s.ServerRewrites)
	if s.Requests != s.Accepted || s.Compactions == 0 || s.Opaque == 0 || s.Opaque != s.Verbatim || s.ClientRewrites != 0 {
		t.Fatalf("%+v", s)
	}
}

// TestCompactionBlocks: what Trim does with compaction blocks: the latest
// one with content is sent first, byte for byte, with nothing before it
// (not even blocks before it in its own message); a null one is sent as
// it came; an empty one is left out; the blocks before the latest one cost
// nothing.
func TestCompactionBlocks(t *testing.T) {
	comp := func(content string) anthropic.ContentBlockParamUnion {
		return param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(`{"type":"compaction","content":` + content + `,"encrypted_content":"e==","signature":"s","tool_changes":[]}`))
	}
	long := strings.Repeat("old words ", 400)
	tests := []struct {
		name string
		in   []anthropic.MessageParam
		want []string // the JSON of each output message's blocks' types
		why  string
	}{{
		name: "front dropped",
		in:   []anthropic.MessageParam{user(text(long)), assistant(text(long)), user(text("q")), assistant(text("x"), comp(`"sum"`), text("a")), user(text("next"))},
		want: []string{"compaction text", "text"},
		why:  "the API reads nothing before the latest compaction block, the text before it in its message included",
	}, {
		name: "null kept",
		in:   []anthropic.MessageParam{user(text("q")), assistant(comp(`null`), text("a")), user(text("next"))},
		want: []string{"text", "compaction text", "text"},
		why:  "a null compaction is a no-op the API accepts back",
	}, {
		name: "empty left out",
		in:   []anthropic.MessageParam{user(text("q")), assistant(comp(`""`), text("a")), user(text("next"))},
		want: []string{"text", "text", "text"},
		why:  "the API rejects an empty one",
	}, {
		name: "latest wins",
		in:   []anthropic.MessageParam{assistant(comp(`"one"`)), user(text("q")), assistant(comp(`"two"`), text("a")), user(text("next"))},
		want: []string{"compaction text", "text"},
		why:  "only the latest compaction is read",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, res, err := Trim(nil, tc.in, 100_000)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range out {
				raw, _ := json.Marshal(m)
				var v struct{ Content []struct{ Type string } }
				_ = json.Unmarshal(raw, &v)
				var types []string
				for _, b := range v.Content {
					types = append(types, b.Type)
				}
				got = append(got, strings.Join(types, " "))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("%s: got %q, want %q", tc.why, got, tc.want)
			}
			if err := Validate(out); err != nil {
				t.Fatal(err)
			}
			if tc.name == "front dropped" && res.TokensAfter > 200 {
				t.Fatalf("what precedes the compaction is counted: %d tokens", res.TokensAfter)
			}
		})
	}
}
