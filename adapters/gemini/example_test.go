package gemini_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/gemini"
	"google.golang.org/genai"
)

func ExampleTrim() {
	system := genai.NewContentFromText("You are a weather bot.", genai.RoleUser)
	contents := []*genai.Content{
		genai.NewContentFromText("Tell me about clouds. "+strings.Repeat("Be thorough. ", 60), genai.RoleUser),
		genai.NewContentFromText(strings.Repeat("Clouds are water. ", 60), genai.RoleModel),
		genai.NewContentFromText("What is the weather in Paris?", genai.RoleUser),
		genai.NewContentFromFunctionCall("weather", map[string]any{"city": "Paris"}, genai.RoleModel),
		genai.NewContentFromFunctionResponse("weather", map[string]any{"temp_c": 21}, genai.RoleUser),
		genai.NewContentFromText("It is 21°C in Paris.", genai.RoleModel),
	}

	out, res, err := gemini.Trim(system, contents, 100)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range out {
		p := c.Parts[0]
		switch {
		case p.FunctionCall != nil:
			fmt.Printf("%s: call %s\n", c.Role, p.FunctionCall.Name)
		case p.FunctionResponse != nil:
			fmt.Printf("%s: response %s\n", c.Role, p.FunctionResponse.Name)
		default:
			fmt.Printf("%s: %s\n", c.Role, p.Text)
		}
	}
	fmt.Println("same pointer:", out[2] == contents[3])
	fmt.Printf("dropped %d turn (%d messages), sending %d tokens (budget %d)\n", res.DroppedTurns, res.DroppedMessages, res.TokensAfter, res.Budget)
	fmt.Println("valid:", gemini.Validate(out) == nil)
	// Output:
	// user: [earlier turns omitted to fit the context window]
	// user: What is the weather in Paris?
	// model: call weather
	// user: response weather
	// model: It is 21°C in Paris.
	// same pointer: true
	// dropped 1 turn (2 messages), sending 73 tokens (budget 100)
	// valid: true
}

func ExampleValidate() {
	contents := []*genai.Content{
		genai.NewContentFromText("Weather in Paris and Rome?", genai.RoleUser),
		{Role: genai.RoleModel, Parts: []*genai.Part{
			genai.NewPartFromFunctionCall("weather", map[string]any{"city": "Paris"}),
			genai.NewPartFromFunctionCall("weather", map[string]any{"city": "Rome"}),
		}},
		genai.NewContentFromFunctionResponse("weather", map[string]any{"temp_c": 21}, genai.RoleUser),
	}
	fmt.Println(gemini.Validate(contents))

	// Trim's orphan sweep strips the unanswered call, so what it returns
	// is always acceptable.
	out, _, _ := gemini.Trim(nil, contents, 1000, history.WithoutBreadcrumb())
	fmt.Println(len(out[1].Parts), gemini.Validate(out))
	// Output:
	// history/gemini: content 1: function call "weather" has no response in the next turn
	// 1 <nil>
}

func ExampleRecoverOverflow() {
	// A stand-in for the Gemini API that counts 30% more tokens than the
	// library's estimate and rejects requests over 400 as Google does.
	const limit = 400
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Contents []*genai.Content `json:"contents"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		msgs, _ := gemini.ToHistory(req.Contents)
		n := history.Estimate(msgs, nil) * 13 / 10
		if n > limit {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"code":400,"message":"The input token count (%d) exceeds the maximum number of tokens allowed (%d).","status":"INVALID_ARGUMENT"}}`, n, limit)
			return
		}
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"Sunny."}]}}],"usageMetadata":{"promptTokenCount":%d}}`, n)
	}))
	defer srv.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "key", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL}})
	if err != nil {
		fmt.Println(err)
		return
	}

	contents := []*genai.Content{
		genai.NewContentFromText("Tell me about clouds. "+strings.Repeat("Be thorough. ", 40), genai.RoleUser),
		genai.NewContentFromText(strings.Repeat("Clouds are water. ", 60), genai.RoleModel),
		genai.NewContentFromText("And about rain? "+strings.Repeat("Be thorough. ", 20), genai.RoleUser),
		genai.NewContentFromText(strings.Repeat("Rain is water too. ", 60), genai.RoleModel),
		genai.NewContentFromText("What is the weather in Paris?", genai.RoleUser),
	}
	out, _, _ := gemini.Trim(nil, contents, limit) // fits by the library's count
	resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", out, nil)
	for attempt := 1; err != nil && attempt <= 2; attempt++ {
		fmt.Println("rejected:", err)
		var res history.Result
		var rerr error
		if out, res, rerr = gemini.RecoverOverflow(nil, out, err, attempt); rerr != nil {
			break // not an overflow, or nothing left to drop: err is Gemini's
		}
		fmt.Printf("retry %d: %d of %d contents, %d turns dropped, target %d tokens\n", attempt, len(out), len(contents), res.DroppedTurns, res.Budget)
		resp, err = client.Models.GenerateContent(ctx, "gemini-2.5-flash", out, nil)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("accepted:", resp.UsageMetadata.PromptTokenCount, "prompt tokens;", resp.Text())
	// Output:
	// rejected: Error 400, Message: The input token count (430) exceeds the maximum number of tokens allowed (400)., Status: INVALID_ARGUMENT, Details: []
	// retry 1: 2 of 5 contents, 1 turns dropped, target 277 tokens
	// accepted: 32 prompt tokens; Sunny.
}
