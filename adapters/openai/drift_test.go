package openai_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/race"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestDriftOverflows measures docs/calibration.md's claim about drift: the
// README's loop (complete, readme_test.go) runs 40 turns against a
// provider that counts 1.0x and then 1.4x from turn 20. Only the request that meets the
// change overflows when the provider's error states the sizes (OpenAI's);
// when it states none, the first retry cannot know how far the count
// moved and may overflow too. No error reaches the caller either way.
// Left out of go test -race for its cost (single-goroutine trims, as the
// loop matrix).
func TestDriftOverflows(t *testing.T) {
	if race.Enabled {
		t.Skip("left out of the race detector's run for its cost (see the doc comment); go test without -race runs it")
	}
	for _, tc := range []struct {
		name         string
		sizes        bool
		maxOverflows int
	}{
		{"the error states the sizes", true, 1},
		{"the error states no sizes", false, 2},
	} {
		for _, window := range []int{12_000, 32_000} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, window), func(t *testing.T) {
				l := adaptertest.NewLoop("openai", adaptertest.Mode{Name: "drift-1.0-1.4", Text: 1, Tool: 1, Schema: 1, DriftTurn: 20, Drift: 1.4}, window)
				l.Turns = 40
				readmeLoop(t, l, tc.sizes)
				st := l.Stats()
				t.Logf("%d requests, %d overflows, %d errors", st.Requests, st.Overflows, st.Errors)
				if st.Overflows < 1 || st.Overflows > tc.maxOverflows || st.Errors > 0 {
					t.Errorf("%d overflows (want 1 to %d), %d errors to the caller", st.Overflows, tc.maxOverflows, st.Errors)
					for _, n := range l.Notes() {
						t.Log(n)
					}
				}
			})
		}
	}
}

// readmeLoop runs l's turns through the README's complete function (with
// a Calibration of its own: complete's is global, so the runs do not run
// in parallel) against
// fakeprovider's scripted model counting as l does; without sizes, its
// context_length_exceeded errors state none.
func readmeLoop(t *testing.T, l *adaptertest.Loop, sizes bool) {
	p := &fakeprovider.Provider{Limit: l.Window, Judge: l}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if !sizes && rec.Code == http.StatusBadRequest && bytes.Contains(body, []byte("context_length_exceeded")) {
			body = []byte(`{"error":{"message":"The input exceeds the context window of this model.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	window := l.Window
	params := openai.ChatCompletionNewParams{Model: "gpt-test", Tools: fakeprovider.Tools()}

	cal = history.Calibration{} // the README's, which the loop feeds
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools to inspect the repository before you answer.")}
	for turn := 1; turn <= l.Turns; turn++ {
		task := fakeprovider.Task(turn)
		l.Turn(turn, task)
		msgs = append(msgs, openai.UserMessage(task))
		for step := 0; ; step++ {
			if step > 8 {
				t.Fatalf("turn %d does not end", turn)
			}
			c, next, err := complete(ctx, client, params, msgs, window)
			if err != nil {
				l.Error(err)
				break
			}
			msgs = next
			reply := c.Choices[0].Message
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, tc := range reply.ToolCalls {
				msgs = append(msgs, openai.ToolMessage(fakeprovider.RunToolWords(tc.ID, l.Words), tc.ID))
			}
		}
	}
}
