package openai

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
)

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Current weather in a city."),
		Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})
}

func schemaFormat() openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "answer", Schema: map[string]any{"type": "object", "properties": map[string]any{"temp_c": map[string]any{"type": "number"}}}},
	}}
}

// recorder is a Counter that records the text of each message it counts
// and prices it at its length in bytes.
type recorder struct{ texts []string }

func (r *recorder) CountMessage(m history.Message) int {
	if m.Role != history.RoleSystem || len(m.Parts) > 0 || m.Name != "" {
		return -1 << 20 // not the message Overhead must build
	}
	r.texts = append(r.texts, m.Content)
	return len(m.Content)
}

func TestOverhead(t *testing.T) {
	const (
		toolJSON   = `[{"function":{"name":"get_weather","description":"Current weather in a city.","parameters":{"properties":{"city":{"type":"string"}},"type":"object"}},"type":"function"}]`
		formatJSON = `{"json_schema":{"name":"answer","schema":{"properties":{"temp_c":{"type":"number"}},"type":"object"}},"type":"json_schema"}`
		overJSON   = `[{"type":"custom","custom":{"name":"shell","x_vendor":1}}]`
		fnJSON     = `[{"name":"lookup","description":"Look a term up."}]`
		extraJSON  = `[{"function":{"name":"get_weather","description":"Current weather in a city.","parameters":{"properties":{"city":{"type":"string"}},"type":"object"}},"type":"function","strict_mode":"vendor"}]`
	)
	withMessages := openai.ChatCompletionNewParams{
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("counted by Trim, not here")},
		Tools:    []openai.ChatCompletionToolUnionParam{weatherTool()},
	}
	extra := weatherTool()
	extra.OfFunction.SetExtraFields(map[string]any{"strict_mode": "vendor"})
	legacy := openai.ChatCompletionNewParams{}
	//lint:ignore SA1019 the deprecated functions are still sent, so they are counted.
	legacy.Functions = []openai.ChatCompletionNewParamsFunction{{Name: "lookup", Description: openai.String("Look a term up.")}}
	tests := []struct {
		name   string
		params openai.ChatCompletionNewParams
		want   []string // the texts counted, in order
	}{
		{"nothing besides the messages", openai.ChatCompletionNewParams{Model: "gpt-test", Messages: withMessages.Messages}, nil},
		{"tools, messages not read", withMessages, []string{toolJSON}},
		{"tools and response format", openai.ChatCompletionNewParams{Tools: withMessages.Tools, ResponseFormat: schemaFormat()}, []string{toolJSON, formatJSON}},
		{"json_object format", openai.ChatCompletionNewParams{ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}, []string{`{"type":"json_object"}`}},
		{"deprecated functions", legacy, []string{fnJSON}},
		{"override tool as sent", openai.ChatCompletionNewParams{Tools: []openai.ChatCompletionToolUnionParam{param.Override[openai.ChatCompletionToolUnionParam](json.RawMessage(`{"type":"custom","custom":{"name":"shell","x_vendor":1}}`))}}, []string{overJSON}},
		{"extra fields as sent", openai.ChatCompletionNewParams{Tools: []openai.ChatCompletionToolUnionParam{extra}}, []string{extraJSON}},
		{"explicit nulls", openai.ChatCompletionNewParams{Tools: param.NullSlice[[]openai.ChatCompletionToolUnionParam](), ResponseFormat: param.NullStruct[openai.ChatCompletionNewParamsResponseFormatUnion]()}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r recorder
			got := Overhead(tc.params, &r)
			if !slices.Equal(r.texts, tc.want) {
				t.Fatalf("counted %q\nwant    %q", r.texts, tc.want)
			}
			want := 0
			for _, s := range tc.want {
				want += len(s)
			}
			if got != want {
				t.Fatalf("Overhead = %d, want %d (the sum of the counts)", got, want)
			}
			// A nil Counter is Heuristic, counting the same messages.
			h := 0
			for _, s := range tc.want {
				h += history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: s})
			}
			if got := Overhead(tc.params, nil); got != h {
				t.Fatalf("Overhead(nil counter) = %d, want Heuristic's %d", got, h)
			}
		})
	}
}

// TestOverheadCounts: negative counts count 0, huge ones saturate.
func TestOverheadCounts(t *testing.T) {
	p := openai.ChatCompletionNewParams{Tools: []openai.ChatCompletionToolUnionParam{weatherTool()}, ResponseFormat: schemaFormat()}
	tests := []struct {
		count, want int
	}{
		{-5, 0},
		{math.MaxInt, math.MaxInt},
		{math.MaxInt/2 + 1, math.MaxInt},
		{7, 14},
	}
	for _, tc := range tests {
		c := history.CounterFunc(func(history.Message) int { return tc.count })
		if got := Overhead(p, c); got != tc.want {
			t.Errorf("count %d per part: Overhead = %d, want %d", tc.count, got, tc.want)
		}
	}
}

// TestOverheadAsSent: what Overhead counts is the tools and
// response_format JSON the real client sends.
func TestOverheadAsSent(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer srv.Close()
	params := openai.ChatCompletionNewParams{
		Model:          "gpt-test",
		Messages:       []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		Tools:          []openai.ChatCompletionToolUnionParam{weatherTool(), param.Override[openai.ChatCompletionToolUnionParam](json.RawMessage(`{"type":"custom","custom":{"name":"shell"}}`))},
		ResponseFormat: schemaFormat(),
	}
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	var sent map[string]json.RawMessage
	if err := json.Unmarshal(body, &sent); err != nil {
		t.Fatal(err)
	}
	var r recorder
	Overhead(params, &r)
	want := []string{string(sent["tools"]), string(sent["response_format"])}
	if !slices.Equal(r.texts, want) {
		t.Fatalf("counted %q\nthe client sent %q", r.texts, want)
	}
}
