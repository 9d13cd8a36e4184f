package responses

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/histrim/history"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

func TestOverhead(t *testing.T) {
	tool := responses.ToolParamOfFunction("lookup", map[string]any{
		"type":       "object",
		"properties": map[string]any{"q": map[string]any{"type": "string"}},
	}, true)
	toolsJSON, err := json.Marshal([]responses.ToolUnionParam{tool})
	if err != nil {
		t.Fatal(err)
	}
	sys := func(s string) int {
		return history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: s})
	}
	tests := []struct {
		name   string
		params responses.ResponseNewParams
		c      history.Counter
		want   int
	}{
		{name: "nothing besides the input", want: 0},
		{name: "tools", params: responses.ResponseNewParams{Tools: []responses.ToolUnionParam{tool}}, want: sys(string(toolsJSON))},
		{name: "instructions", params: responses.ResponseNewParams{Instructions: openai.String("Be brief.")}, want: sys("Be brief.")},
		{name: "tools and instructions", params: responses.ResponseNewParams{Tools: []responses.ToolUnionParam{tool}, Instructions: openai.String("Be brief.")},
			want: sys(string(toolsJSON)) + sys("Be brief.")},
		{name: "negative counts are 0", params: responses.ResponseNewParams{Instructions: openai.String("x")},
			c: history.CounterFunc(func(history.Message) int { return -5 }), want: 0},
		{name: "huge counts saturate", params: responses.ResponseNewParams{Tools: []responses.ToolUnionParam{tool}, Instructions: openai.String("x")},
			c: history.CounterFunc(func(history.Message) int { return math.MaxInt }), want: math.MaxInt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Overhead(tc.params, tc.c); got != tc.want {
				t.Fatalf("Overhead = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestOverheadReachesTokensAfter: with the overhead, the items get the
// budget less the tools, and TokensAfter counts the whole request.
func TestOverheadReachesTokensAfter(t *testing.T) {
	items := []Item{userItem("hello"), assistantItem("hi")}
	params := responses.ResponseNewParams{Instructions: openai.String("You are a helpful assistant with a long brief.")}
	ov := Overhead(params, nil)
	_, plain, err := Trim(items, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	_, with, err := Trim(items, 10_000, history.WithOverhead(ov))
	if err != nil {
		t.Fatal(err)
	}
	if ov <= 0 || with.TokensAfter != plain.TokensAfter+ov {
		t.Fatalf("TokensAfter %d with overhead %d, %d without", with.TokensAfter, ov, plain.TokensAfter)
	}
}
