package wire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/histrim/history/models"
	"github.com/histrim/history/wire"
)

// A client whose every chat request is trimmed to the model's window: the
// one line is the http.Client given to the SDK (openai-go:
// option.WithHTTPClient(client); go-openai: config.HTTPClient = client).
// Here the model's window is 4,000 tokens and the conversation 30 turns of
// tool calls; the upstream, a stand-in, prints what it received.
func ExampleTransport() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		fmt.Printf("upstream received %d messages\n", len(body.Messages))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"done"}}],"usage":{"prompt_tokens":3000}}`)
	}))
	defer upstream.Close()

	client := &http.Client{Transport: &wire.Transport{
		// models.Lookup by default; here a local model of 4,000 tokens.
		Models: func(_ context.Context, name string) (models.Model, error) {
			return models.Model{Name: name, Window: 4_000}, nil
		},
		OnEvent: func(e wire.Event) {
			fmt.Printf("trimmed: %v, %d of %d messages sent, within a budget of %d\n", e.Trimmed, e.Sent, e.Messages, e.Budget)
		},
		Logger: slog.New(slog.DiscardHandler),
	}}

	msgs := []string{`{"role":"system","content":"You are a coding agent."}`}
	for i := range 30 {
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"user","content":"task %d"}`, i),
			fmt.Sprintf(`{"role":"assistant","tool_calls":[{"id":"c%d","type":"function","function":{"name":"read","arguments":"{}"}}]}`, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"c%d","content":%q}`, i, strings.Repeat("output ", 120)),
			`{"role":"assistant","content":"done"}`)
	}
	body := `{"model":"local","messages":[` + strings.Join(msgs, ",") + `]}`
	resp, err := client.Post(upstream.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status)
	// Output:
	// upstream received 38 messages
	// trimmed: true, 38 of 121 messages sent, within a budget of 3800
	// 200 OK
}

// Parse reads a body's messages as the bytes they came in; Body puts
// others in their place and leaves every other byte as it came.
func ExampleParse() {
	body := []byte(`{"model": "gpt-4.1", "x_unknown": {"kept": true},
  "messages": [{"role":"system","content":"Be brief."}, {"role":"user","content":"old"}, {"role":"user","content":"new"}],
  "temperature": 0}`)
	r, err := wire.Parse("/v1/chat/completions", body)
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := r.Messages()
	fmt.Println(r.API, r.Model, len(msgs))
	fmt.Printf("%s\n", r.Body([]json.RawMessage{msgs[0], msgs[2]}))
	// Output:
	// chat_completions gpt-4.1 3
	// {"model": "gpt-4.1", "x_unknown": {"kept": true},
	//   "messages": [{"role":"system","content":"Be brief."},{"role":"user","content":"new"}],
	//   "temperature": 0}
}
