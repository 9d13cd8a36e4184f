package openai

//lint:file-ignore SA1019 tests of the deprecated function_call, which the adapter must still handle.

import "github.com/openai/openai-go/v3"

// legacyAssistant returns an assistant message using the deprecated
// function_call.
func legacyAssistant(content, name, args string) openai.ChatCompletionMessageParamUnion {
	a := &openai.ChatCompletionAssistantMessageParam{
		FunctionCall: openai.ChatCompletionAssistantMessageParamFunctionCall{Name: name, Arguments: args},
	}
	if content != "" {
		a.Content.OfString = openai.String(content)
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: a}
}

// legacyResult returns a deprecated function-role message answering a
// function_call.
func legacyResult(name, content string) openai.ChatCompletionMessageParamUnion {
	return openai.ChatCompletionMessageParamUnion{OfFunction: &openai.ChatCompletionFunctionMessageParam{Name: name, Content: openai.String(content)}}
}
