package trpc_test

import (
	"context"
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	htrpc "github.com/histrim/history/frameworks/trpc"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// hostileServer is the local OpenAI endpoint the model hook sends to,
// started once.
var hostileServer = sync.OnceValue(func() *httptest.Server {
	return httptest.NewServer(&loopserver.OpenAI{Judge: loopserver.Skew{Window: 4000, Factor: 1}, Window: 4000})
})

// tailor is the Strategy's TailorMessages at budget with opts, as the
// suite's Trim (it gives no Result).
func tailor(msgs []model.Message, budget int, opts ...history.Option) ([]model.Message, history.Result, error) {
	out, err := htrpc.NewStrategy(htrpc.Config{Options: opts}).TailorMessages(context.Background(), msgs, budget)
	return out, history.Result{}, err
}

// hostile describes this module to the hostile-input suite: the
// Strategy's trim, and trpc-agent-go's OpenAI model tailoring with it,
// wrapped, against a local endpoint. trpc-agent-go's messages are values
// whose parts are pointers a caller can leave nil.
var hostile = adaptertest.Hostile[model.Message]{
	Trim: tailor, ToHistory: htrpc.ToHistory,
	Hooks: map[string]func([]model.Message, int) ([]model.Message, error){
		"Wrap": func(msgs []model.Message, budget int) ([]model.Message, error) {
			s := htrpc.NewStrategy(htrpc.Config{Calibration: &history.Calibration{}, StepTrim: true})
			ch, err := newModel(hostileServer().URL+"/v1", max(budget, 1), s).GenerateContent(context.Background(), &model.Request{Messages: msgs})
			if err != nil {
				return nil, theirs(err)
			}
			for range ch { // the provider's refusals are the local server's, not the module's
			}
			return nil, nil
		},
	},
	Text: func(role history.Role, text string) model.Message {
		switch role {
		case history.RoleSystem:
			return model.NewSystemMessage(text)
		case history.RoleAssistant:
			return model.NewAssistantMessage(text)
		}
		return model.NewUserMessage(text)
	},
	Call: func(ids ...string) model.Message {
		m := model.NewAssistantMessage("")
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, model.ToolCall{Type: "function", ID: id,
				Function: model.FunctionDefinitionParam{Name: "grep", Arguments: []byte(`{"q":1}`)}})
		}
		return m
	},
	Results: func(ids ...string) []model.Message {
		var out []model.Message
		for _, id := range ids {
			out = append(out, model.NewToolMessage(id, "grep", "found "+id))
		}
		return out
	},
	Cases: hostileCases(),
}

// theirs returns err when it is the module's, nil when trpc-agent-go's.
func theirs(err error) error {
	if strings.HasPrefix(err.Error(), "history") {
		return err
	}
	return nil
}

// hostileCases are the parts trpc-agent-go's types let a caller leave
// nil, empty or out of range.
func hostileCases() []adaptertest.HostileCase[model.Message] {
	u := model.NewUserMessage("go")
	huge := adaptertest.HugePNG()
	parts := func(p ...model.ContentPart) model.Message {
		return model.Message{Role: model.RoleUser, ContentParts: p}
	}
	return []adaptertest.HostileCase[model.Message]{
		{Name: "a part with nothing set", Msgs: []model.Message{parts(model.ContentPart{})}},
		{Name: "a text part with a nil text", Msgs: []model.Message{parts(model.ContentPart{Type: model.ContentTypeText})}},
		{Name: "an image part with a nil image", Msgs: []model.Message{parts(model.ContentPart{Type: model.ContentTypeImage})}},
		{Name: "an image claiming 2^31 pixels a side", Msgs: []model.Message{parts(model.ContentPart{Type: model.ContentTypeImage,
			Image: &model.Image{Data: huge, Format: "png"}})}},
		{Name: "an image URL that is no URL", Msgs: []model.Message{parts(model.ContentPart{Type: model.ContentTypeImage,
			Image: &model.Image{URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(huge)[:9] + "\xff"}})}},
		{Name: "a file part with a nil file", Msgs: []model.Message{parts(model.ContentPart{Type: model.ContentTypeFile})}},
		{Name: "a tool message without a tool id", Msgs: []model.Message{u, model.NewToolMessage("", "grep", "x")}},
		{Name: "a call without an id", Msgs: []model.Message{u, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{Function: model.FunctionDefinitionParam{Name: "grep"}}}}}},
		{Name: "a call in a user message", Msgs: []model.Message{{Role: model.RoleUser, ToolCalls: []model.ToolCall{{ID: "c"}}}}},
		{Name: "arguments that are not JSON", Msgs: []model.Message{u, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c",
			Function: model.FunctionDefinitionParam{Name: "grep", Arguments: []byte("\xff{")}}}}, model.NewToolMessage("c", "grep", "x")}},
		{Name: "reasoning only", Msgs: []model.Message{u, {Role: model.RoleAssistant, ReasoningContent: adaptertest.InvalidUTF8}}},
		{Name: "an unknown role", Msgs: []model.Message{{Role: "robot", Content: "x"}}},
	}
}

// TestHostile: hostile inputs through the Strategy, ToHistory and a
// wrapped model give a typed error or a valid output, never a panic
// (adaptertest.Hostile).
func TestHostile(t *testing.T) { hostile.Run(t) }

// FuzzHostile is the hostile-input suite's fuzz target.
func FuzzHostile(f *testing.F) { hostile.Fuzz(f) }
