package langchaingo

import (
	"encoding/json"
	"testing"

	"github.com/histrim/history"
	"github.com/tmc/langchaingo/llms"
)

func TestOverhead(t *testing.T) {
	tools := loopTools()[:3]
	asSent, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	system := func(s string) history.Message { return history.Message{Role: history.RoleSystem, Content: s} }
	byBytes := history.CounterFunc(func(m history.Message) int { return len(m.Content) })
	negative := history.CounterFunc(func(history.Message) int { return -7 })
	unencodable := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "bad", Parameters: map[string]any{"f": func() {}}}}}
	tests := []struct {
		name  string
		tools []llms.Tool
		c     history.Counter
		want  int
	}{
		{"nil", nil, nil, 0},
		{"empty", []llms.Tool{}, byBytes, 0},
		{"heuristic by default", tools, nil, history.Heuristic().CountMessage(system(string(asSent)))},
		{"the caller's counter, on the JSON as sent", tools, byBytes, len(asSent)},
		{"a negative count is none", tools, negative, 0},
		{"a tool without a function", []llms.Tool{{Type: "function"}}, byBytes, len(`[{"type":"function"}]`)},
	}
	for _, tc := range tests {
		if got := Overhead(tc.tools, tc.c); got != tc.want {
			t.Errorf("%s: Overhead = %d, want %d", tc.name, got, tc.want)
		}
	}
	// Parameters that do not encode are counted in their printed form.
	if got := Overhead(unencodable, byBytes); got < len(`[{"type":"function","function":{"name":"bad","description":"","parameters":"map[f:0x`) {
		t.Errorf("unencodable parameters: Overhead = %d", got)
	}
	if _, ok := unencodable[0].Function.Parameters.(map[string]any); !ok {
		t.Error("Overhead modified the caller's tool")
	}
	// More tools cost more.
	if one, all := Overhead(tools[:1], nil), Overhead(loopTools(), nil); one <= 0 || all <= 10*one {
		t.Errorf("1 tool costs %d, 20 cost %d", one, all)
	}
}
