package loopserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/histrim/history"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPlay: the script answers a task with its steps, one after the
// other, and ends with a text, whatever the earlier steps became.
func TestPlay(t *testing.T) {
	task := 5
	msgs := []history.Message{{Role: history.RoleSystem, Content: SystemPrompt}, {Role: history.RoleUser, Content: Task(task)}}
	for step := 1; ; step++ {
		r := Play(msgs)
		if len(r.Calls) == 0 {
			if step-1 != Steps(task) || r.Text != fmt.Sprintf("Task %d is done: %d tool steps.", task, Steps(task)) {
				t.Fatalf("after %d steps: %+v, want the end of %d steps", step-1, r, Steps(task))
			}
			return
		}
		if len(r.Calls) != StepCalls(task, step) {
			t.Fatalf("step %d: %d calls, want %d", step, len(r.Calls), StepCalls(task, step))
		}
		a := history.Message{Role: history.RoleAssistant}
		for _, c := range r.Calls {
			a.ToolCalls = append(a.ToolCalls, history.ToolCall{ID: "x" + c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		// A trim dropped the previous steps: the script still knows the step.
		msgs = append(msgs[:2], a)
		for _, c := range a.ToolCalls {
			msgs = append(msgs, history.Message{Role: history.RoleTool, ToolCallID: c.ID, Content: ToolResult(c.ID, Words(150, 500))})
		}
	}
}

func TestToolResultLength(t *testing.T) {
	for _, id := range []string{"a", "call_1_1_0", "call_9_3_1"} {
		first, again := ToolResult(id, Words(150, 500)), ToolResult(id, Words(150, 500))
		n := len(strings.Fields(first))
		if n < 150 || n > 500 || first != again {
			t.Errorf("%s: %d words, or not deterministic", id, n)
		}
	}
}

// TestOpenAI: a reply with usage, OpenAI's overflow body and its pairing
// 400, read from the wire.
func TestOpenAI(t *testing.T) {
	s := &OpenAI{Judge: Skew{Window: 200, Factor: 1}, Window: 200}
	srv := httptest.NewServer(s)
	defer srv.Close()
	task, _ := json.Marshal(Task(1))
	code, body := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":`+string(task)+`}]}`)
	if code != 200 || !strings.Contains(body, `"tool_calls"`) || !strings.Contains(body, `"prompt_tokens"`) {
		t.Errorf("reply: %d %s", code, body)
	}
	long, _ := json.Marshal(strings.Repeat("word ", 400))
	code, body = post(t, srv.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":`+string(long)+`}]}`)
	if err := history.IsContextOverflow(fmt.Errorf("%s", body)); code != 400 || !err || !strings.Contains(body, `"context_length_exceeded"`) {
		t.Errorf("overflow: %d %s", code, body)
	}
	if ov, ok := history.ParseOverflow(fmt.Errorf("%s", body)); !ok || ov.Limit != 200 || ov.Used <= 200 {
		t.Errorf("overflow sizes %+v %v", ov, ok)
	}
	code, body = post(t, srv.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`)
	if code != 400 || !strings.Contains(body, "must be a response to a preceeding message") {
		t.Errorf("pairing: %d %s", code, body)
	}
	code, body = post(t, srv.URL+"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":`+string(task)+`}]}`)
	if code != 200 || !strings.Contains(body, `"index":0,"name"`) && !strings.Contains(body, `"tool_calls"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") || !strings.Contains(body, `"prompt_tokens"`) {
		t.Errorf("stream: %d %s", code, body)
	}
	if st := s.Stats(); st.Requests != 4 || st.Accepted != 2 || st.Overflows != 1 || st.PairingErrors != 1 || len(s.Problems()) != 0 {
		t.Errorf("stats %+v, problems %v", st, s.Problems())
	}
}

// TestGemini: a reply with usageMetadata, Gemini's overflow body and its
// pairing 400s, read from the wire.
func TestGemini(t *testing.T) {
	s := &Gemini{Judge: Skew{Window: 200, Factor: 1}, Window: 200}
	srv := httptest.NewServer(s)
	defer srv.Close()
	url := srv.URL + "/v1beta/models/gemini-test:generateContent"
	task, _ := json.Marshal(Task(1))
	user := `{"role":"user","parts":[{"text":` + string(task) + `}]}`
	code, body := post(t, url, `{"contents":[`+user+`]}`)
	if code != 200 || !strings.Contains(body, `"functionCall"`) || !strings.Contains(body, `"promptTokenCount"`) {
		t.Errorf("reply: %d %s", code, body)
	}
	long, _ := json.Marshal(strings.Repeat("word ", 400))
	code, body = post(t, url, `{"contents":[{"role":"user","parts":[{"text":`+string(long)+`}]}]}`)
	if ov, ok := history.ParseOverflow(fmt.Errorf("%s", body)); code != 400 || !ok || ov.Limit != 200 || ov.Used <= 200 {
		t.Errorf("overflow: %d %s (%+v)", code, body, ov)
	}
	call := `{"role":"model","parts":[{"functionCall":{"id":"a","name":"grep","args":{}}}]}`
	resp := `{"role":"user","parts":[{"functionResponse":{"id":"a","name":"grep","response":{"output":"x"}}}]}`
	for _, tc := range []struct {
		contents, want, reason string
	}{
		{user + "," + call + "," + resp, "", "a call and its response"},
		{user + "," + resp, GeminiOrderBody, "a response after no call"},
		{user + "," + call, GeminiCountBody, "a call left unanswered"},
		{user + "," + call + "," + user, GeminiCountBody, "a call followed by a text"},
	} {
		code, body = post(t, url, `{"contents":[`+tc.contents+`]}`)
		if tc.want == "" && code != 200 || tc.want != "" && body != tc.want {
			t.Errorf("%s: %d %s", tc.reason, code, body)
		}
	}
	code, body = post(t, srv.URL+"/v1beta/models/gemini-test:streamGenerateContent?alt=sse", `{"contents":[`+user+`]}`)
	if code != 200 || !strings.HasPrefix(body, "data: {") {
		t.Errorf("stream: %d %s", code, body)
	}
	if len(s.Problems()) != 0 {
		t.Errorf("problems %v", s.Problems())
	}
}
