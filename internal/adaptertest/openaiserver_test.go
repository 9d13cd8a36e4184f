package adaptertest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestOpenAIPairingServer(t *testing.T) {
	srv := OpenAIPairingServer(t)
	for _, tc := range []struct {
		name, messages string
		status         int
		body           string
	}{
		{"paired", `[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a"},{"id":"b"}]},{"role":"tool","tool_call_id":"b"},{"role":"tool","tool_call_id":"a"},{"role":"user","content":"r"}]`, 200, `"content":"ok"`},
		{"orphan tool message", `[{"role":"system","content":"s"},{"role":"tool","tool_call_id":"a"},{"role":"user","content":"q"}]`, 400, fmt.Sprintf(OpenAIOrphanBody, 1)},
		{"answered twice", `[{"role":"assistant","tool_calls":[{"id":"a"}]},{"role":"tool","tool_call_id":"a"},{"role":"tool","tool_call_id":"a"}]`, 400, fmt.Sprintf(OpenAIOrphanBody, 2)},
		{"unanswered call", `[{"role":"assistant","tool_calls":[{"id":"a"},{"id":"b"}]},{"role":"tool","tool_call_id":"a"},{"role":"user","content":"q"}]`, 400, "did not have response messages: b"},
		{"unanswered call at the end", `[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a"}]}]`, 400, `did not have response messages: a","type":"invalid_request_error","param":"messages.[2].role"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(`{"messages":`+tc.messages+`}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.body) {
				t.Fatalf("status %d, body %s; want %d with %s", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
}
