package gemini_test

import (
	"fmt"
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
