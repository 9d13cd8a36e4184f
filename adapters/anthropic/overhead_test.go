package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/histrim/history"
)

func TestOverhead(t *testing.T) {
	weather := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}},
		Required:   []string{"city"},
	}, "get_weather")
	empty := anthropic.ToolInputSchemaParam{Properties: map[string]any{}}
	described := anthropic.ToolUnionParamOfTool(empty, "list_files")
	described.OfTool.Description = anthropic.String("Lists the files of the repository, recursively.")
	extra := anthropic.ToolUnionParamOfTool(empty, "deploy")
	extra.OfTool.SetExtraFields(map[string]any{"x_internal": "a field the SDK does not model"})
	override := param.Override[anthropic.ToolUnionParam](json.RawMessage(`{"name":"raw_tool","input_schema":{"type":"object"},"x":"y"}`))
	format := anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: map[string]any{
		"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}}}
	system := []anthropic.TextBlockParam{{Text: "A long system prompt that Trim counts, not Overhead."}}
	msgs := []anthropic.MessageParam{user(text("hello"))}

	tests := []struct {
		name   string
		params anthropic.MessageNewParams
		want   string // the text counted as one system message; "" for none
	}{
		{"nothing besides the messages", anthropic.MessageNewParams{System: system, Messages: msgs, MaxTokens: 100}, ""},
		{"tools", anthropic.MessageNewParams{Tools: []anthropic.ToolUnionParam{weather, described}},
			`[{"input_schema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather"},` +
				`{"input_schema":{"properties":{},"type":"object"},"name":"list_files","description":"Lists the files of the repository, recursively."}]`},
		{"extra fields and overrides as sent", anthropic.MessageNewParams{Tools: []anthropic.ToolUnionParam{extra, override}},
			`[{"input_schema":{"properties":{},"type":"object"},"name":"deploy","x_internal":"a field the SDK does not model"},` +
				`{"name":"raw_tool","input_schema":{"type":"object"},"x":"y"}]`},
		{"a response schema", anthropic.MessageNewParams{OutputConfig: format},
			`{"schema":{"properties":{"answer":{"type":"string"}},"type":"object"},"type":"json_schema"}`},
		{"tools and a schema, with messages and system", anthropic.MessageNewParams{System: system, Messages: msgs, Tools: []anthropic.ToolUnionParam{weather}, OutputConfig: format},
			`[{"input_schema":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"name":"get_weather"}]` + "\n" +
				`{"schema":{"properties":{"answer":{"type":"string"}},"type":"object"},"type":"json_schema"}`},
		{"an effort without a schema", anthropic.MessageNewParams{OutputConfig: anthropic.OutputConfigParam{Effort: anthropic.OutputConfigEffortLow}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var seen []history.Message
			spy := history.CounterFunc(func(m history.Message) int {
				seen = append(seen, m)
				return 7 * len(m.Content)
			})
			got := Overhead(tc.params, spy)
			if tc.want == "" {
				if got != 0 || len(seen) != 0 {
					t.Fatalf("got %d from %d messages, want 0 and no count", got, len(seen))
				}
				return
			}
			if len(seen) != 1 || seen[0].Role != history.RoleSystem || seen[0].Content != tc.want || got != 7*len(tc.want) {
				t.Fatalf("counted %+v (%d tokens), want one system message holding\n%s", seen, got, tc.want)
			}
			if h, want := Overhead(tc.params, nil), history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: tc.want}); h != want {
				t.Fatalf("nil counter: %d, want Heuristic's %d", h, want)
			}
		})
	}
}

// TestOverheadReachesResult: passed with history.WithOverhead, the
// overhead is part of the Result's TokensAfter, and the budget leaves room
// for it.
func TestOverheadReachesResult(t *testing.T) {
	system, msgs := pinRequest()
	params := anthropic.MessageNewParams{Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{}, "read")}}
	ovh := Overhead(params, nil)
	_, plain, err := Trim(system, msgs, 1_000)
	if err != nil {
		t.Fatal(err)
	}
	_, with, err := Trim(system, msgs, 1_000, history.WithOverhead(ovh))
	if err != nil {
		t.Fatal(err)
	}
	if ovh <= 0 || with.TokensAfter > 1_000 || with.TokensAfter-ovh > plain.TokensAfter || with.TokensAfter-ovh > 1_000-ovh {
		t.Fatalf("overhead %d: TokensAfter %d with it, %d without; want the overhead counted and the messages in the rest", ovh, with.TokensAfter, plain.TokensAfter)
	}
}
