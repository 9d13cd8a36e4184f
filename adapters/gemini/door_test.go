package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"google.golang.org/genai"
)

// TestDoor runs the loop through the door with the real client: the call
// names the model and the Trimmer takes its window from the table, its
// output room from MaxOutputTokens, the system instruction and the tools
// from the config, and learns the provider's count from each response's
// promptTokenCount.
func TestDoor(t *testing.T) {
	adaptertest.DoorLoop(t, "gemini", loopModel, func(t *testing.T, l *adaptertest.Loop, model string) {
		srv := &loopServer{loop: l}
		ts := httptest.NewServer(srv)
		defer ts.Close()
		ctx := context.Background()
		client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: ts.URL}})
		if err != nil {
			t.Fatal(err)
		}
		config := &genai.GenerateContentConfig{
			SystemInstruction: genai.NewContentFromText("You are a coding agent. Use the tools to read files before you answer.", genai.RoleUser),
			Tools:             loopToolDecls(),
			MaxOutputTokens:   4096,
		}
		tr := NewTrimmer(nil)
		var all []*genai.Content // the runtime's full transcript
		for turn := range l.Turns {
			text := taskText(turn)
			l.Turn(turn+1, text)
			all = append(all, genai.NewContentFromText(text, genai.RoleUser))
		steps:
			for {
				out, res, err := tr.Fit(ctx, model, all, config)
				if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
					l.Error(fmt.Errorf("Fit: %w", err))
					break
				}
				resp, err := client.Models.GenerateContent(ctx, model, out, config)
				for attempt := 1; err != nil && attempt <= 2 && history.IsContextOverflow(err); attempt++ {
					var rerr error
					if out, res, rerr = tr.RecoverOverflow(all, err, attempt); rerr != nil {
						l.Error(fmt.Errorf("RecoverOverflow attempt %d: %w", attempt, rerr))
						break steps
					}
					resp, err = client.Models.GenerateContent(ctx, model, out, config)
				}
				if err != nil {
					l.Error(err)
					break
				}
				if v := tr.Observe(resp.UsageMetadata); v == history.VerdictInvalid {
					t.Errorf("Observe(%+v) = VerdictInvalid", resp.UsageMetadata)
				}
				l.Accepted(res.Trimmed, int(resp.UsageMetadata.PromptTokenCount))
				answer := resp.Candidates[0].Content
				all = append(all, answer)
				var results []*genai.Part
				for _, p := range answer.Parts {
					if fc := p.FunctionCall; fc != nil {
						results = append(results, &genai.Part{FunctionResponse: &genai.FunctionResponse{
							ID: fc.ID, Name: fc.Name, Response: map[string]any{"output": toolOutput(fc.ID, l.Words)}}})
					}
				}
				if results == nil {
					break
				}
				all = append(all, &genai.Content{Role: genai.RoleUser, Parts: results})
			}
		}
		for _, p := range srv.problems {
			t.Error("server: " + p)
		}
	})
}
