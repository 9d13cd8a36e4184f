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
		name: "empty alone",
		in:   []anthropic.MessageParam{user(text("q")), assistant(comp(`""`)), user(text("next"))},
		want: []string{"text", "text"},
		why:  "an assistant message left with no block is no message (the API rejects empty content but in a final assistant message)",
	}, {
		name: "in a user message",
		in:   []anthropic.MessageParam{user(text(long)), assistant(text(long)), user(text("x"), comp(`"sum"`), text("q")), assistant(text("a")), user(text("next"))},
		want: []string{"compaction text", "text", "text"},
		why:  "a compaction with content must be the first block of the messages whatever its message's role",
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

// TestValidateContent: Validate refuses what the API refuses of a
// message's content: no content but in the final assistant message, and
// a compaction block with empty content.
func TestValidateContent(t *testing.T) {
	empty := param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(`{"type":"compaction","content":"","encrypted_content":"e=="}`))
	none := func(role anthropic.MessageParamRole) anthropic.MessageParam {
		return anthropic.MessageParam{Role: role, Content: []anthropic.ContentBlockParamUnion{}}
	}
	tests := []struct {
		msgs []anthropic.MessageParam
		ok   bool
		why  string
	}{
		{[]anthropic.MessageParam{user(text("q")), none(anthropic.MessageParamRoleAssistant), user(text("next"))}, false, "an assistant message with no content mid-conversation"},
		{[]anthropic.MessageParam{user(text("q")), none(anthropic.MessageParamRoleAssistant)}, true, "the final assistant message may be empty"},
		{[]anthropic.MessageParam{none(anthropic.MessageParamRoleUser)}, false, "a user message with no content"},
		{[]anthropic.MessageParam{user(text("q")), assistant(empty), user(text("next"))}, false, "an empty compaction block"},
	}
	for _, tc := range tests {
		err := Validate(tc.msgs)
		if (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v", tc.why, err)
		}
	}
}

// TestBreakpoints: the API accepts 4 cache_control breakpoints in a
// request, counting automatic caching's top-level one, the tools', the
// system prompt's and the messages'. ValidateRequest counts them all, and
// a trim takes a compaction block's mark off when the system prompt's
// and the messages' are over 4 without it (the system prompt is the
// caller's, and a trim returns only the messages).
func TestBreakpoints(t *testing.T) {
	cc := anthropic.NewCacheControlEphemeralParam()
	marked := func(s string) anthropic.TextBlockParam { return anthropic.TextBlockParam{Text: s, CacheControl: cc} }
	msg := func(role anthropic.MessageParamRole, s string, mark bool) anthropic.MessageParam {
		b := anthropic.TextBlockParam{Text: s}
		if mark {
			b.CacheControl = cc
		}
		return anthropic.MessageParam{Role: role, Content: []anthropic.ContentBlockParamUnion{{OfText: &b}}}
	}
	four := []anthropic.TextBlockParam{marked("a"), marked("b"), marked("c"), marked("d")}
	base := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100}
	tests := []struct {
		p   func(p *anthropic.MessageNewParams)
		ok  bool
		why string
	}{
		{func(p *anthropic.MessageNewParams) {
			p.System = four[:3]
			p.Messages = []anthropic.MessageParam{msg(anthropic.MessageParamRoleUser, "q", true)}
		}, true, "four in all"},
		{func(p *anthropic.MessageNewParams) {
			p.System = four[:3]
			p.CacheControl = cc
			p.Messages = []anthropic.MessageParam{msg(anthropic.MessageParamRoleUser, "q", true)}
		}, false, "automatic caching takes a fifth"},
		{func(p *anthropic.MessageNewParams) {
			p.System = four
			p.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "t", InputSchema: anthropic.ToolInputSchemaParam{}, CacheControl: cc}}}
			p.Messages = []anthropic.MessageParam{msg(anthropic.MessageParamRoleUser, "q", false)}
		}, false, "a marked tool and four in the system prompt"},
	}
	for _, tc := range tests {
		p := base
		tc.p(&p)
		if err := ValidateRequest(p); (err == nil) != tc.ok {
			t.Errorf("%s: ValidateRequest = %v", tc.why, err)
		}
	}
	comp := param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(`{"type":"compaction","content":"sum","encrypted_content":"e==","cache_control":{"type":"ephemeral"}}`))
	in := []anthropic.MessageParam{{Role: anthropic.MessageParamRoleAssistant, Content: []anthropic.ContentBlockParamUnion{comp}}, msg(anthropic.MessageParamRoleUser, "q", false)}
	out, _, err := Trim(four, in, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	p := base
	p.System, p.Messages = four, out
	if err := ValidateRequest(p); err != nil {
		t.Errorf("a system prompt with four marks and a marked compaction block: %v", err)
	}
	raw, _ := json.Marshal(out[0])
	if !strings.Contains(string(raw), `"encrypted_content":"e=="`) || strings.Contains(string(raw), "cache_control") {
		t.Errorf("the compaction block is sent without its mark, and otherwise as it came: %s", raw)
	}
}
