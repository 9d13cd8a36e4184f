package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// A conversation whose Trimmer writes a summary with NewSummarizer when
// turns must go. The stand-in for the API below prints each summary
// request: the last request's messages, byte for byte, and the
// instruction appended, so that the provider reads them from its cache.
func ExampleNewSummarizer() {
	var last json.RawMessage // the messages of the last request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		reply := "Noted."
		if n := len(req.Messages); n > 0 && bytes.Contains(req.Messages[n-1], []byte("Pause the task")) {
			prev, _ := json.Marshal(req.Messages[:n-1])
			fmt.Printf("summary request: the last request's %d messages, the same: %v, and the instruction\n", n-1, bytes.Equal(prev, last))
			reply = "Task: a JSON parser in Go. Decisions: a hand-written lexer. Files: lexer.go."
		} else {
			last, _ = json.Marshal(req.Messages)
		}
		content, _ := json.Marshal(reply)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":0,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, content)
	}))
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"))

	sum := hopenai.NewSummarizer(client, hopenai.SummarizerConfig{Summary: history.SummaryOptions{MaxTokens: 200}})
	tr := hopenai.NewTrimmer(sum.Option(), history.WithPin(1)) // the task's opening request stays
	defer tr.Close()
	transcript := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("You are a coding agent."),
		openai.UserMessage("Write a JSON parser in Go, with no dependencies."),
	}
	params := openai.ChatCompletionNewParams{Model: "gpt-4.1"}
	for i := range 8 {
		if i > 0 {
			transcript = append(transcript, openai.UserMessage(fmt.Sprintf("Step %d: %s", i, strings.Repeat("more detail please ", 20))))
		}
		var err error
		if params.Messages, _, err = tr.Trim(transcript, 500); err != nil {
			fmt.Println(err)
			return
		}
		sum.Sent(params) // what the next summary request repeats
		c, err := client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			fmt.Println(err)
			return
		}
		transcript = append(transcript, c.Choices[0].Message.ToParam())
	}
	// The last request: the system prompt, the summary, the task, the
	// turns that fit.
	fmt.Println(*params.Messages[1].GetContent().AsAny().(*string))
	fmt.Println(*params.Messages[2].GetContent().AsAny().(*string))
	// Output:
	// summary request: the last request's 12 messages, the same: true, and the instruction
	// [Summary of 3 earlier turn(s): 7 messages, about 261 tokens]
	// Task: a JSON parser in Go. Decisions: a hand-written lexer. Files: lexer.go.
	// Write a JSON parser in Go, with no dependencies.
}
