package fakeprovider

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func call(id string) openai.ChatCompletionMessageParamUnion {
	u := openai.AssistantMessage("")
	u.OfAssistant.Content = openai.ChatCompletionAssistantMessageParamContentUnion{}
	u.OfAssistant.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "read_file", Arguments: "{}"},
	}}}
	return u
}

func send(t *testing.T, p *Provider, params openai.ChatCompletionNewParams) (*openai.ChatCompletion, error) {
	t.Helper()
	srv := httptest.NewServer(p)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	params.Model = "gpt-test"
	return client.Chat.Completions.New(context.Background(), params)
}

func TestProvider(t *testing.T) {
	sys := openai.SystemMessage("sys")
	task := openai.UserMessage(Task(3)) // steps=3 (see TestWorld)
	tests := []struct {
		name     string
		msgs     []openai.ChatCompletionMessageParamUnion
		tools    bool
		limit    int
		wantCall string // the first call ID of the reply; "" for a final text
		wantErr  string // in the error; "" for none
		stat     func(s Stats) int
	}{
		{name: "task opens step 1", msgs: []openai.ChatCompletionMessageParamUnion{sys, task}, wantCall: "call_3_1_0"},
		{name: "step 2 after step 1", msgs: []openai.ChatCompletionMessageParamUnion{sys, task, call("call_3_1_0"), openai.ToolMessage("out", "call_3_1_0")}, wantCall: "call_3_2_0"},
		{name: "final text after the last step", msgs: []openai.ChatCompletionMessageParamUnion{sys, task, call("call_3_3_0"), openai.ToolMessage("out", "call_3_3_0")}},
		{name: "tool message answering nothing", msgs: []openai.ChatCompletionMessageParamUnion{sys, task, openai.ToolMessage("out", "x")},
			wantErr: "must be a response to a preceeding message with 'tool_calls'", stat: func(s Stats) int { return s.PairingErrors }},
		{name: "call never answered", msgs: []openai.ChatCompletionMessageParamUnion{sys, task, call("c1"), openai.UserMessage("next")},
			wantErr: "did not have response messages: c1", stat: func(s Stats) int { return s.PairingErrors }},
		{name: "over the limit", msgs: []openai.ChatCompletionMessageParamUnion{sys, task}, tools: true, limit: 100,
			wantErr: "context_length_exceeded", stat: func(s Stats) int { return s.Overflows }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Provider{Limit: 100_000, Factor: 1.3}
			if tc.limit > 0 {
				p.Limit = tc.limit
			}
			params := openai.ChatCompletionNewParams{Messages: tc.msgs}
			if tc.tools {
				params.Tools = Tools()
			}
			completion, err := send(t, p, params)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || tc.stat(p.Stats()) != 1 {
					t.Fatalf("error %v, stats %+v; want %q counted", err, p.Stats(), tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			hist, _ := hopenai.ToHistory(tc.msgs)
			if want := int(math.Ceil(1.3 * float64(history.Estimate(hist, nil)))); int(completion.Usage.PromptTokens) != want {
				t.Fatalf("prompt_tokens %d, want %d", completion.Usage.PromptTokens, want)
			}
			m := completion.Choices[0].Message
			got := ""
			if len(m.ToolCalls) > 0 {
				got = m.ToolCalls[0].ID
			}
			if got != tc.wantCall || (got == "" && m.Content == "") {
				t.Fatalf("reply calls %q (content %q), want %q", got, m.Content, tc.wantCall)
			}
		})
	}
}

// TestOverflowAnswer: the overflow answer is OpenAI's, and states the
// provider's count (messages plus the tools JSON as received) and limit.
func TestOverflowAnswer(t *testing.T) {
	p := &Provider{Limit: 1000, Factor: 2}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("sys"), openai.UserMessage(Task(1))}
	_, err := send(t, p, openai.ChatCompletionNewParams{Messages: msgs, Tools: Tools()})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("error %v, want an HTTP 400 *openai.Error", err)
	}
	hist, _ := hopenai.ToHistory(msgs)
	raw, _ := json.Marshal(Tools()) // as the client sends it
	want := history.Overflow{Used: 2*history.Estimate(hist, nil) + history.EstimateText(string(raw)), Limit: 1000}
	if ov, ok := history.ParseOverflow(err); !ok || ov != want {
		t.Fatalf("ParseOverflow = %+v, %v; want %+v", ov, ok, want)
	}
}

// TestWorld: the tasks ask for 1 to 6 steps, tool results run 250 to 1,150
// words (and the same for the same call ID), and there are 20 tools.
func TestWorld(t *testing.T) {
	seen := map[string]bool{}
	for n := 1; n <= 200; n++ {
		s := Task(n)
		i := strings.Index(s, "(steps=")
		if i < 0 || len(s) != i+len("(steps=N)") || s[i+7] < '1' || s[i+7] > '6' {
			t.Fatalf("Task(%d) = %q", n, s)
		}
		seen[s[i:]] = true
	}
	if len(seen) != 6 || !strings.HasSuffix(Task(3), "(steps=3)") {
		t.Fatalf("steps seen %v; Task(3) = %q", seen, Task(3))
	}
	lo, hi := math.MaxInt, 0
	for n := range 300 {
		id := "call_" + strings.Repeat("x", n%7) + string(rune('a'+n%26))
		out := RunTool(id)
		words := len(strings.Fields(out))
		lo, hi = min(lo, words), max(hi, words)
		if again := RunTool(id); again != out {
			t.Fatal("RunTool is not deterministic")
		}
	}
	if lo < 250 || hi > 1150 || hi-lo < 600 {
		t.Fatalf("tool results of %d to %d words, want a spread within 250 to 1150", lo, hi)
	}
	if len(Tools()) != 20 {
		t.Fatalf("%d tools", len(Tools()))
	}
}
