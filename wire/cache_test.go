package wire

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// TestRewriteCaches: the messages and blocks a trim writes anew are kept
// by the bytes they came from (chatElided, anthropicRebuilt,
// anthropicElided), so a resent transcript is not written again; a hit
// gives the bytes a miss gives, another placeholder or content for the
// same bytes is written anew, and nothing kept shares a byte with the
// request the bytes came in (a body the caller reuses changes nothing
// kept).
func TestRewriteCaches(t *testing.T) {
	body := []byte(`{"role":"tool","tool_call_id":"call_7","content":"line one\nline two","x-extra":1}`)
	orig := json.RawMessage(body)
	chat := func(text string) string {
		return string(chatElide(orig, &history.Message{Role: history.RoleTool, ToolCallID: "call_7", Content: text}))
	}
	block := json.RawMessage(`{"type":"tool_result","tool_use_id":"toolu_1","content":"long output","cache_control":{"type":"ephemeral"}}`)
	elide := func(text string) string {
		b := block
		out, ok := anthropicElide(&b, text)
		if !ok {
			t.Fatalf("anthropicElide(%q) failed", text)
		}
		return string(out)
	}
	msg := json.RawMessage(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"z":true}`)
	rebuild := func(content ...string) string {
		cs := make([]json.RawMessage, len(content))
		for i, c := range content {
			cs[i] = json.RawMessage(c)
		}
		return string(anthropicWithContent(msg, cs))
	}
	a, b := `{"type":"text","text":"a"}`, `{"type":"text","text":"[elided]"}`
	for _, tc := range []struct {
		name       string
		run        func() string
		want       string
		uncachedBy func() string
	}{
		{"chat elided", func() string { return chat("[elided: 2 lines]") },
			`{"role":"tool","tool_call_id":"call_7","content":"[elided: 2 lines]","x-extra":1}`,
			func() string {
				return string(chatElideOnce(orig, &history.Message{Role: history.RoleTool, ToolCallID: "call_7", Content: "[elided: 2 lines]"}))
			}},
		{"chat, another placeholder for the same message", func() string { return chat("[digest]") },
			`{"role":"tool","tool_call_id":"call_7","content":"[digest]","x-extra":1}`, nil},
		{"block elided", func() string { return elide("[elided]") },
			`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"[elided]"}],"cache_control":{"type":"ephemeral"}}`, nil},
		{"block, another placeholder", func() string { return elide("[other]") },
			`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"[other]"}],"cache_control":{"type":"ephemeral"}}`, nil},
		{"message rebuilt", func() string { return rebuild(a, b) },
			`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"[elided]"}],"z":true}`, nil},
		{"message, other content", func() string { return rebuild(a) },
			`{"role":"user","content":[{"type":"text","text":"a"}],"z":true}`, nil},
		{"message, content that joins to a prefix of the last", func() string { return rebuild(`{"type":"text","text":"a"}`) },
			`{"role":"user","content":[{"type":"text","text":"a"}],"z":true}`, nil},
	} {
		// Twice in a row (miss, then hit), then after the other cases of
		// the same bytes (the entry replaced).
		for round := range 2 {
			if got := tc.run(); got != tc.want {
				t.Errorf("%s, call %d:\n got %s\nwant %s", tc.name, round+1, got, tc.want)
			}
		}
		if tc.uncachedBy != nil {
			if got := tc.uncachedBy(); got != tc.want {
				t.Errorf("%s without the cache:\n got %s\nwant %s", tc.name, got, tc.want)
			}
		}
	}
	if got, want := rebuild(a, b), `{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"[elided]"}],"z":true}`; got != want {
		t.Errorf("message rebuilt again after other content:\n got %s\nwant %s", got, want)
	}

	// What is kept shares nothing with the bytes it came from.
	kept := chat("[elided: 2 lines]")
	for i := range body {
		body[i] = 'X'
	}
	if got := string(chatElide(json.RawMessage(`{"role":"tool","tool_call_id":"call_7","content":"line one\nline two","x-extra":1}`),
		&history.Message{Role: history.RoleTool, ToolCallID: "call_7", Content: "[elided: 2 lines]"})); got != kept {
		t.Errorf("after the caller's body changed, the same message elides to\n%s\nwant %s", got, kept)
	}
}

// TestJoined checks joined against building the array.
func TestJoined(t *testing.T) {
	for _, tc := range []struct {
		arr     string
		content []string
		want    bool
	}{
		{`[]`, nil, true},
		{`[1]`, []string{`1`}, true},
		{`[1,2]`, []string{`1`, `2`}, true},
		{`[1,2]`, []string{`1,2`}, true}, // the same bytes: the same array
		{`[1,2]`, []string{`1`}, false},
		{`[1]`, []string{`1`, `2`}, false},
		{`[12]`, []string{`1`, `2`}, false},
		{`[1,2`, []string{`1`, `2`}, false},
		{`1,2]`, []string{`1`, `2`}, false},
		{``, nil, false},
	} {
		cs := make([]json.RawMessage, len(tc.content))
		for i, c := range tc.content {
			cs[i] = json.RawMessage(c)
		}
		if got := joined([]byte(tc.arr), cs); got != tc.want {
			t.Errorf("joined(%s, %q) = %v, want %v", tc.arr, tc.content, got, tc.want)
		}
	}
}

// TestAnthropicSplits: where anthropicMessage finds a message's blocks is
// kept by the message's bytes; a hit gives the blocks a scan gives, as
// slices of the message it is given (never of the one first read: a body
// the Transport reads the next request into changes nothing returned),
// and a message that does not read is refused on a hit too.
func TestAnthropicSplits(t *testing.T) {
	for _, raw := range []string{
		`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"u","name":"f","input":{"a":[1,{"b":"]"}]}}],"x":null}`,
		`{ "content" : [ {"type":"text","text":"a \"quoted\" ]"} ] , "role" : "user" }`,
		`{"role":"user","content":"a string"}`,
		`{"role":"user","content":[{"type":"text"`,
		`{"role":"user"}`,
	} {
		scan := splitMessage(json.RawMessage(raw))
		for round := range 3 {
			m := json.RawMessage(raw) // a fresh copy each time
			role, blocks, ok := anthropicMessage(&m)
			if ok != scan.ok || (ok && role != scan.role) || len(blocks) != len(scan.blocks) {
				t.Fatalf("%s, call %d: %q %d blocks %v; scan %+v", raw, round+1, role, len(blocks), ok, scan)
			}
			for i, b := range blocks {
				if string(b) != raw[scan.blocks[i].start:scan.blocks[i].end] || &b[0] != &m[scan.blocks[i].start] {
					t.Fatalf("%s, call %d: block %d is %s, not the message's own bytes", raw, round+1, i, b)
				}
				var v map[string]any
				if json.Unmarshal(b, &v) != nil {
					t.Fatalf("%s: block %d %s is not an object", raw, i, b)
				}
			}
		}
	}
}

// TestAnthropicReuse: the Messages codec that gives its conversions'
// arrays to the next conversion (anthropicmsg.SDK.Reuse) sends, request
// after request, the bytes the same codec sends on fresh arrays, over the
// shared corpus's bodies at budgets from whole to the latest turn, each
// decision made on the arrays of a decision on another body.
func TestAnthropicReuse(t *testing.T) {
	fresh := *anthropicSDK
	fresh.Reuse = false
	plain := fresh.Codec()
	bodies := goldenBodies(t)
	decide := func(c *adapt.Codec[json.RawMessage, json.RawMessage], body []byte, pct int) string {
		r, err := Parse("/v1/messages", body)
		if err != nil {
			t.Fatal(err)
		}
		_, all, _ := c.Trim(r.system, r.Messages(), 1<<40, nil)
		budget := max(all.TokensBefore*pct/100, 1)
		opts := []history.Option{history.WithElision(history.ElideOptions{KeepRecent: 1, ClearArguments: 8}), history.WithStepTrim()}
		out, res, err := c.Trim(r.system, r.Messages(), budget, opts)
		return fmt.Sprintf("%s %v %d %d", r.Body(out), err, res.TokensBefore, res.TokensAfter)
	}
	for _, pct := range []int{100, 35, 10, 1} {
		for i, gb := range bodies {
			want := decide(plain, gb.body, pct)
			for range 2 {
				decide(anthropicCodec, bodies[(i+1)%len(bodies)].body, pct) // another body's arrays
				if got := decide(anthropicCodec, gb.body, pct); got != want {
					t.Fatalf("%s at %d%%: sent on reused arrays\n%.300s\nwant\n%.300s", gb.name, pct, got, want)
				}
			}
		}
	}
}
