// Command trim shows the Gemini adapter's door on an agent loop's history:
// it builds a conversation with an image, thought signatures and parallel
// function calls, fits it with a Trimmer (gemini.NewTrimmer, then Fit with
// the model's name, the contents and the request's config) before
// "sending" it, and checks the result against Gemini's rules (pairing,
// order, Gemini 3's signatures). It runs offline: no client is created and
// nothing is sent, so there is no usage to Observe (a real loop calls
// tr.Observe(resp.UsageMetadata) after each response).
//
// The door takes the window from the models table: 1,048,576 tokens for
// gemini-3.5-flash, which six days of a conversation never reach. So that
// the example trims offline, it gives the Trimmer a window of 4,000 tokens
// of its own with history.WithModel, an option of the caller's, which
// overrides the door's (docs/options.md), as for a deployment whose window
// is smaller than the table's. A program naming a real model leaves it out.
package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"log"
	"os"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/gemini"
	"github.com/histrim/history/models"
	"google.golang.org/genai"
)

func main() {
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 800, 600))); err != nil {
		log.Fatal(err)
	}
	system := genai.NewContentFromText("You are a travel assistant.", genai.RoleUser)
	var contents []*genai.Content
	for day := 1; day <= 6; day++ {
		city := []string{"Paris", "Rome", "Oslo", "Lima", "Kyoto", "Cairo"}[day-1]
		contents = append(contents,
			&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				genai.NewPartFromText(fmt.Sprintf("Day %d: plan a walk in %s around this map.", day, city)),
				genai.NewPartFromBytes(img.Bytes(), "image/png"),
			}},
			&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: "I need the weather and the sights.", Thought: true},
				// Gemini 3 signs the first call of a step; the trim
				// returns the signature on this very part.
				{FunctionCall: &genai.FunctionCall{Name: "weather", Args: map[string]any{"city": city}}, ThoughtSignature: []byte{0xC0, byte(day)}},
				genai.NewPartFromFunctionCall("sights", map[string]any{"city": city}),
			}},
			&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				genai.NewPartFromFunctionResponse("sights", map[string]any{"list": strings.Repeat(city+" museum; ", 30)}),
				genai.NewPartFromFunctionResponse("weather", map[string]any{"temp_c": 18 + day}),
			}},
			genai.NewContentFromText(fmt.Sprintf("Walk plan for %s: %s", city, strings.Repeat("turn left, ", 40)), genai.RoleModel),
		)
	}

	const model = "gemini-3.5-flash"
	config := &genai.GenerateContentConfig{SystemInstruction: system, MaxOutputTokens: 1000}
	// A window smaller than the table's, so that the offline run trims
	// (see above): the reply's room is the request's MaxOutputTokens.
	small := models.Model{Name: model, Provider: "google", Window: 4000, Output: int(config.MaxOutputTokens)}
	tr := gemini.NewTrimmer(nil, history.WithModel(small), history.WithOnTrim(func(e history.Event) { // one per conversation; Fit reads the system instruction from config
		fmt.Printf("event: dropped %d turns (%d messages), sending %d tokens, budget %d\n",
			e.DroppedTurns, e.DroppedMessages, e.TokensAfter, e.Budget)
	}))
	out, res, err := tr.Fit(context.Background(), model, contents, config)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("kept %d of %d contents in %d turns\n", len(out), len(contents), res.KeptTurns)
	for i, c := range out {
		fmt.Printf("  %d %-5s %s\n", i, c.Role, describe(c))
	}
	if err := gemini.Validate(out); err != nil {
		fmt.Println("invalid:", err)
		os.Exit(1)
	}
	fmt.Println("calls paired, in order, each step signed: ok")
}

// describe summarises a content's parts.
func describe(c *genai.Content) string {
	var s []string
	for _, p := range c.Parts {
		switch {
		case p.FunctionCall != nil && len(p.ThoughtSignature) > 0:
			s = append(s, fmt.Sprintf("call %s (signature %x)", p.FunctionCall.Name, p.ThoughtSignature))
		case p.FunctionCall != nil:
			s = append(s, "call "+p.FunctionCall.Name)
		case p.FunctionResponse != nil:
			s = append(s, "response "+p.FunctionResponse.Name)
		case p.InlineData != nil:
			s = append(s, "image")
		case p.Thought:
			s = append(s, "thought")
		default:
			t := p.Text
			if len(t) > 40 {
				t = t[:40] + "..."
			}
			s = append(s, fmt.Sprintf("%q", t))
		}
	}
	return strings.Join(s, ", ")
}
