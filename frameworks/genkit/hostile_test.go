package genkit_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/histrim/history"
	hgenkit "github.com/histrim/history/frameworks/genkit"
	"github.com/histrim/history/internal/adaptertest"
)

// errOverflow is a provider's rejection of a request for its length.
var errOverflow = adaptertest.OverflowText(1000, 2000)

// middleware returns a hook that runs msgs through the Middleware at
// budget, its next model answering with fail (nil: an answer with
// usage): what reached the model, the last time it was called, and what
// the Middleware reported or returned that is not fail itself.
func middleware(fail error) func(msgs []*ai.Message, budget int) ([]*ai.Message, error) {
	return func(msgs []*ai.Message, budget int) ([]*ai.Message, error) {
		var reported error
		var sent []*ai.Message
		next := func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			sent = req.Messages
			if fail != nil {
				return nil, fail
			}
			return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage("ok"), Usage: &ai.GenerationUsage{InputTokens: 10}}, nil
		}
		mw := hgenkit.Middleware(hgenkit.Config{Budget: budget, Calibration: &history.Calibration{},
			OnError: func(err error) { reported = err }, Options: []history.Option{history.WithStepTrim()}})
		_, err := mw(next)(context.Background(), &ai.ModelRequest{Messages: msgs}, nil)
		if err != nil && err != fail {
			return sent, err
		}
		return sent, reported
	}
}

// hostile describes this module to the hostile-input suite: Genkit's
// messages, with the parts a caller can leave nil or empty, and the
// Middleware as the hook.
var hostile = adaptertest.Hostile[*ai.Message]{
	Trim: hgenkit.Trim, RecoverOverflow: hgenkit.RecoverOverflow, ToHistory: hgenkit.ToHistory,
	Hooks: map[string]func([]*ai.Message, int) ([]*ai.Message, error){
		"Middleware":              middleware(nil),
		"Middleware, overflowing": middleware(errOverflow),
	},
	Text: func(role history.Role, text string) *ai.Message {
		switch role {
		case history.RoleSystem:
			return ai.NewSystemTextMessage(text)
		case history.RoleAssistant:
			return ai.NewModelTextMessage(text)
		}
		return ai.NewUserTextMessage(text)
	},
	Call: func(ids ...string) *ai.Message {
		m := ai.NewModelMessage()
		for _, id := range ids {
			m.Content = append(m.Content, ai.NewToolRequestPart(&ai.ToolRequest{Name: "grep", Ref: id, Input: map[string]any{"q": id}}))
		}
		return m
	},
	Results: func(ids ...string) []*ai.Message {
		m := ai.NewMessage(ai.RoleTool, nil)
		for _, id := range ids {
			m.Content = append(m.Content, ai.NewToolResponsePart(&ai.ToolResponse{Name: "grep", Ref: id, Output: "found " + id}))
		}
		return []*ai.Message{m}
	},
	Cases: hostileCases(),
}

// hostileCases are the messages and parts Genkit's types let a caller
// leave nil, empty or out of range.
func hostileCases() []adaptertest.HostileCase[*ai.Message] {
	u := ai.NewUserTextMessage("go")
	call := func(parts ...*ai.Part) *ai.Message { return ai.NewModelMessage(parts...) }
	tool := func(parts ...*ai.Part) *ai.Message { return ai.NewMessage(ai.RoleTool, nil, parts...) }
	req := ai.NewToolRequestPart(&ai.ToolRequest{Name: "grep", Input: map[string]any{}})
	resp := ai.NewToolResponsePart(&ai.ToolResponse{Name: "grep", Output: "x"})
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	huge := "data:image/png;base64," + base64.StdEncoding.EncodeToString(adaptertest.HugePNG())
	return []adaptertest.HostileCase[*ai.Message]{
		{Name: "a nil message", Msgs: []*ai.Message{u, nil}},
		{Name: "a nil part", Msgs: []*ai.Message{u, call(nil), tool(nil)}},
		{Name: "a tool request without its payload", Msgs: []*ai.Message{u, call(&ai.Part{Kind: ai.PartToolRequest}), tool(resp)}},
		{Name: "a tool response without its payload", Msgs: []*ai.Message{u, call(req), tool(&ai.Part{Kind: ai.PartToolResponse})}},
		{Name: "payloads missing in an old turn", Msgs: []*ai.Message{u, call(&ai.Part{Kind: ai.PartToolRequest}), tool(&ai.Part{Kind: ai.PartToolResponse}), ai.NewModelTextMessage("done"), ai.NewUserTextMessage("next")}},
		{Name: "a tool request without its payload in a user message", Msgs: []*ai.Message{ai.NewUserMessage(&ai.Part{Kind: ai.PartToolRequest})}},
		{Name: "a tool response without its payload in a model message", Msgs: []*ai.Message{u, call(&ai.Part{Kind: ai.PartToolResponse})}},
		{Name: "a nil part among a response's content", Msgs: []*ai.Message{u, call(req), tool(ai.NewToolResponsePart(&ai.ToolResponse{Name: "grep", Content: []*ai.Part{nil}}))}},
		{Name: "input that does not encode", Msgs: []*ai.Message{u, call(ai.NewToolRequestPart(&ai.ToolRequest{Name: "grep", Input: func() {}})), tool(resp)}},
		{Name: "cyclic input", Msgs: []*ai.Message{u, call(ai.NewToolRequestPart(&ai.ToolRequest{Name: "grep", Input: cyclic})), tool(resp)}},
		{Name: "output that does not encode", Msgs: []*ai.Message{u, call(req), tool(ai.NewToolResponsePart(&ai.ToolResponse{Name: "grep", Output: make(chan int)}))}},
		{Name: "an image claiming 2^31 pixels a side", Msgs: []*ai.Message{ai.NewUserMessage(ai.NewMediaPart("image/png", huge))}},
		{Name: "a media part that is no URL", Msgs: []*ai.Message{ai.NewUserMessage(ai.NewMediaPart("image/png", "data:\xff;base64,!!"))}},
		{Name: "a custom part that does not encode", Msgs: []*ai.Message{ai.NewUserMessage(ai.NewCustomPart(map[string]any{"f": func() {}}))}},
		{Name: "a part of an unknown kind", Msgs: []*ai.Message{ai.NewUserMessage(&ai.Part{Kind: 99})}},
		{Name: "a message without parts", Msgs: []*ai.Message{ai.NewUserMessage(), ai.NewModelMessage(), ai.NewUserMessage()}},
		{Name: "an unknown role", Msgs: []*ai.Message{ai.NewMessage("robot", nil, ai.NewTextPart("x"))}},
	}
}

// TestHostile: hostile inputs through Trim, RecoverOverflow, ToHistory
// and the Middleware give a typed error or a valid output, never a panic
// (adaptertest.Hostile).
func TestHostile(t *testing.T) { hostile.Run(t) }

// FuzzHostile is the hostile-input suite's fuzz target.
func FuzzHostile(f *testing.F) { hostile.Fuzz(f) }
