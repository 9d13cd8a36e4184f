package langchaingo

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

// TestDoor runs the loop through the door with langchaingo's OpenAI
// model: Fit names the model (gpt-3.5-turbo: the window from the table)
// and passes the call's options (the tools, which it counts), then
// RecoverOverflow on the same transcript, and Observe of each response.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "langchaingo", "gpt-3.5-turbo", func(t *testing.T, l *adaptertest.Loop, name string) {
		srv := &loopServer{loop: l}
		hs := httptest.NewServer(srv)
		defer hs.Close()
		llm, err := openai.New(openai.WithBaseURL(hs.URL), openai.WithToken("x"), openai.WithModel(name))
		if err != nil {
			t.Fatal(err)
		}
		tr := NewTrimmer()
		ctx := context.Background()
		tools := loopTools()
		r := rng(1300)
		full := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You are a coding agent. Use the tools to answer each task.")}
		call := 0
		for turn := range l.Turns {
			task := fmt.Sprintf("Task %d: %s", turn, words(&r, 10+r.intn(30)))
			full = append(full, llms.TextParts(llms.ChatMessageTypeHuman, task))
			l.Turn(turn+1, task)
			steps := 1 + r.intn(6)
		loop:
			for step := 0; step <= steps; step++ {
				next := reply{text: fmt.Sprintf("Done with task %d: %s", turn, words(&r, 20+r.intn(40)))}
				if step < steps {
					next = reply{}
					for range 1 + r.intn(4)/3 {
						call++
						c := wireCall{ID: fmt.Sprintf("call_%d", call), Type: "function"}
						c.Function.Name = fmt.Sprintf("tool_%02d", r.intn(20))
						c.Function.Arguments = fmt.Sprintf(`{"path":"src/file_%d.go","query":"%s"}`, r.intn(100), words(&r, 2))
						next.calls = append(next.calls, c)
					}
				}
				srv.mu.Lock()
				srv.next = next
				srv.mu.Unlock()
				send, res, err := tr.Fit(ctx, name, full, llms.WithTools(tools))
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					l.Error(fmt.Errorf("Fit: %w", err))
					break
				}
				resp, err := llm.GenerateContent(ctx, send, llms.WithTools(tools))
				for attempt := 1; err != nil && attempt <= 2 && IsContextOverflow(err); attempt++ {
					var rerr error
					if send, res, rerr = tr.RecoverOverflow(full, err, attempt); rerr != nil {
						l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
						break loop
					}
					resp, err = llm.GenerateContent(ctx, send, llms.WithTools(tools))
				}
				if err != nil {
					l.Error(fmt.Errorf("step %d: %w", step, err))
					break
				}
				if v := tr.Observe(resp); v == history.VerdictInvalid {
					t.Errorf("step %d: the response's usage was not observed", step)
				}
				l.Accepted(res.Trimmed, PromptTokens(resp))
				c := resp.Choices[0]
				if len(c.ToolCalls) == 0 {
					full = append(full, llms.TextParts(llms.ChatMessageTypeAI, c.Content))
					break
				}
				ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
				for _, tc := range c.ToolCalls {
					ai.Parts = append(ai.Parts, tc)
				}
				full = append(full, ai)
				for _, tc := range c.ToolCalls {
					n := l.MinWords + r.intn(l.MaxWords-l.MinWords+1)
					full = append(full, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{
						ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: words(&r, n)}}})
				}
			}
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, p := range srv.problems {
			t.Errorf("server: %s", p)
		}
	})
}
