// Package goopenai trims chat histories held as
// github.com/sashabaranov/go-openai messages ([]openai.ChatCompletionMessage)
// to a token budget with github.com/histrim/history, without separating a
// tool call from its result and without losing anything the caller put in
// them.
//
// # Usage
//
// The loop a runtime runs before each request (examples/agentloop is it
// as a program; its test runs it against a local endpoint):
//
//	var cal history.Calibration // one per model, kept across requests
//	opts := []history.Option{
//		history.WithCalibration(&cal),
//		history.WithOverhead(goopenai.Overhead(req, nil)), // tools count too
//		history.WithElision(history.ElideOptions{}),
//		history.WithStepTrim(),
//	}
//	req.Messages, res, err = goopenai.Trim(msgs, window, opts...)
//	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
//		return err
//	}
//	resp, err := client.CreateChatCompletion(ctx, req)
//	for attempt := 1; err != nil && attempt <= 2; attempt++ {
//		var rerr error
//		if req.Messages, res, rerr = goopenai.RecoverOverflow(req.Messages, err, attempt, opts...); rerr != nil {
//			break // not an overflow, or nothing left to drop: err stands
//		}
//		resp, err = client.CreateChatCompletion(ctx, req)
//	}
//	if err != nil {
//		return err
//	}
//	cal.Observe(res.TokensAfter, resp.Usage.PromptTokens)
//	msgs = append(req.Messages, resp.Choices[0].Message)
//
// # Mapping
//
// One native message is one history.Message, so Result.Kept indexes the
// caller's slice and history.WithPin takes indices into it. system and
// developer messages are system messages (the leading ones are kept by
// every trim); user messages open turns, their MultiContent text parts
// counted as text and image_url parts as images (the dimensions of a base64
// PNG, JPEG or GIF data URL read from its header, Detail kept; a remote
// image is priced at its largest); assistant messages carry their content,
// refusal, reasoning_content (a reasoning part, so step trimming keeps a
// thinking step whole) and tool calls; tool messages answer a call by
// tool_call_id. The deprecated function_call and function message pair
// through the fixed id "legacy_function_call".
//
// # What comes back
//
// Trim returns the caller's own values for every message it keeps, and
// new values only for: the notices it inserts (a plain message of the
// notice's role: user by default); an assistant message whose unanswered
// calls the sweep stripped, or whose arguments
// history.ElideOptions.ClearArguments cleared (a copy with the remaining
// calls); and a tool result history.WithElision elided (a copy whose
// Content is the placeholder and MultiContent nil). Trimming an earlier
// output again never stacks notices: a message that reads exactly as a
// rendered notice (same role, text and name, nothing else) is recognised,
// the turn notice right after the leading system messages, the step notice
// anywhere. A message someone wrote with exactly a notice's text is the
// only false positive.
//
// # Overflows and calibration
//
// The client returns OpenAI's HTTP 400 context_length_exceeded as an
// *openai.APIError, and a body it cannot read as OpenAI's (vLLM, a proxy)
// as an *openai.RequestError holding it; RecoverOverflow takes either, and
// the core reads the sizes from their text. Overhead counts the request's
// tools, functions and response format; with history.WithOverhead,
// Result.TokensAfter counts the whole request, which
// history.Calibration.Observe relates to usage.prompt_tokens.
//
// # Module
//
// This adapter is its own module, so that the core does not depend on the
// client. It has the shape every adapter shares (internal/adapt, see
// docs/adapters.md): the conversion both ways, the provider's rules as a
// table (Validate), and Overhead are its own; Trim, RecoverOverflow,
// Positions, NewTrimmer (a stateful Trimmer, whose state saves and
// restores), NewConversations (history.Conversations over this package's
// messages) and the errors come from the core's internal packages, so it
// is released together with the core.
package goopenai
