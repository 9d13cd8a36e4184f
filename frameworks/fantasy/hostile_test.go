package fantasy_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"

	"charm.land/fantasy"
	"github.com/histrim/history"
	hfantasy "github.com/histrim/history/frameworks/fantasy"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/models"
)

// nilDeref is an error whose Error dereferences its receiver: a typed nil
// of it panics when read.
type nilDeref struct{ msg *string }

func (e *nilDeref) Error() string { return *e.msg }

// ours returns err when it is the module's, nil when it is the
// provider's (a refusal of what the local server would not take).
func ours(err error) error {
	var pe *fantasy.ProviderError
	if errors.As(err, &pe) {
		return nil
	}
	return err
}

// hostileServer is the local OpenAI-compatible endpoint the Model hooks
// send to, started once.
var hostileServer = sync.OnceValue(func() *httptest.Server {
	return httptest.NewServer(&loopserver.OpenAI{Judge: loopserver.Skew{Window: 4000, Factor: 1}, Window: 4000})
})

// hostileHooks are the module's entry points in a fantasy agent:
// PrepareStep, and a Model over fantasy's OpenAI-compatible provider
// (Generate and Stream) against a local endpoint.
func hostileHooks(t testing.TB) map[string]func([]fantasy.Message, int) ([]fantasy.Message, error) {
	lm := languageModel(t, hostileServer().URL+"/v1")
	return map[string]func([]fantasy.Message, int) ([]fantasy.Message, error){
		"PrepareStep": func(msgs []fantasy.Message, budget int) ([]fantasy.Message, error) {
			_, res, err := hfantasy.PrepareStep(hfantasy.Config{Budget: budget, Options: []history.Option{history.WithStepTrim()}})(
				context.Background(), fantasy.PrepareStepFunctionOptions{Messages: msgs})
			return res.Messages, err
		},
		"Model.Generate": func(msgs []fantasy.Message, budget int) ([]fantasy.Message, error) {
			m := hfantasy.NewModel(lm, hfantasy.Config{Budget: budget, Calibration: &history.Calibration{}})
			_, err := m.Generate(context.Background(), fantasy.Call{Prompt: msgs})
			return nil, ours(err)
		},
		"Model.Stream": func(msgs []fantasy.Message, budget int) ([]fantasy.Message, error) {
			m := hfantasy.NewModel(lm, hfantasy.Config{Budget: budget, Calibration: &history.Calibration{}})
			s, err := m.Stream(context.Background(), fantasy.Call{Prompt: msgs})
			if err != nil {
				return nil, ours(err)
			}
			for part := range s {
				if part.Type == fantasy.StreamPartTypeError {
					return nil, ours(part.Error)
				}
			}
			return nil, nil
		},
	}
}

// hostile describes this module to the hostile-input suite: fantasy's
// messages, with the parts, outputs and errors a caller can leave nil or
// typed nil.
func hostile(t testing.TB) *adaptertest.Hostile[fantasy.Message] {
	return &adaptertest.Hostile[fantasy.Message]{
		Trim: hfantasy.Trim, RecoverOverflow: hfantasy.RecoverOverflow, ToHistory: hfantasy.ToHistory, Validate: hfantasy.Validate,
		Hooks: hostileHooks(t),
		// At budget 0 the hooks are the door, and the suite's model
		// ("local-16k") is not in the table: the typed error.
		Errors: []error{hfantasy.ErrUnpaired, models.ErrUnknownModel},
		ProviderErrors: []error{(*fantasy.ProviderError)(nil),
			errors.Join((*fantasy.ProviderError)(nil), &fantasy.ProviderError{Message: "too long", ContextTooLargeErr: true})},
		Text: func(role history.Role, text string) fantasy.Message {
			r := map[history.Role]fantasy.MessageRole{history.RoleSystem: fantasy.MessageRoleSystem, history.RoleAssistant: fantasy.MessageRoleAssistant}[role]
			if r == "" {
				r = fantasy.MessageRoleUser
			}
			return fantasy.Message{Role: r, Content: []fantasy.MessagePart{fantasy.TextPart{Text: text}}}
		},
		Call: func(ids ...string) fantasy.Message {
			m := fantasy.Message{Role: fantasy.MessageRoleAssistant}
			for _, id := range ids {
				m.Content = append(m.Content, fantasy.ToolCallPart{ToolCallID: id, ToolName: "grep", Input: `{"q":1}`})
			}
			return m
		},
		Results: func(ids ...string) []fantasy.Message {
			m := fantasy.Message{Role: fantasy.MessageRoleTool}
			for _, id := range ids {
				m.Content = append(m.Content, fantasy.ToolResultPart{ToolCallID: id, Output: fantasy.ToolResultOutputContentText{Text: "found " + id}})
			}
			return []fantasy.Message{m}
		},
		Cases: hostileCases(),
	}
}

// hostileCases are the parts, outputs and errors fantasy's types let a
// caller leave nil or typed nil, and sizes out of range.
func hostileCases() []adaptertest.HostileCase[fantasy.Message] {
	msg := func(role fantasy.MessageRole, parts ...fantasy.MessagePart) fantasy.Message {
		return fantasy.Message{Role: role, Content: parts}
	}
	u := fantasy.NewUserMessage("go")
	call := msg(fantasy.MessageRoleAssistant, fantasy.ToolCallPart{ToolCallID: "c", ToolName: "grep", Input: "{}"})
	result := func(o fantasy.ToolResultOutputContent) fantasy.Message {
		return msg(fantasy.MessageRoleTool, fantasy.ToolResultPart{ToolCallID: "c", Output: o})
	}
	executed := func(o fantasy.ToolResultOutputContent) fantasy.Message {
		return msg(fantasy.MessageRoleAssistant, fantasy.ToolResultPart{ToolCallID: "w", Output: o, ProviderExecuted: true})
	}
	var typedNil *nilDeref
	huge := adaptertest.HugePNG()
	return []adaptertest.HostileCase[fantasy.Message]{
		{Name: "a nil part", Msgs: []fantasy.Message{msg(fantasy.MessageRoleUser, nil)}},
		{Name: "a typed-nil text part", Msgs: []fantasy.Message{msg(fantasy.MessageRoleUser, (*fantasy.TextPart)(nil))}},
		{Name: "a typed-nil reasoning part", Msgs: []fantasy.Message{u, msg(fantasy.MessageRoleAssistant, (*fantasy.ReasoningPart)(nil))}},
		{Name: "a typed-nil file part", Msgs: []fantasy.Message{msg(fantasy.MessageRoleUser, fantasy.TextPart{Text: "look"}, (*fantasy.FilePart)(nil))}},
		{Name: "a typed-nil call part", Msgs: []fantasy.Message{u, msg(fantasy.MessageRoleAssistant, (*fantasy.ToolCallPart)(nil))}},
		{Name: "a typed-nil result part", Msgs: []fantasy.Message{u, call, msg(fantasy.MessageRoleTool, (*fantasy.ToolResultPart)(nil))}},
		{Name: "pointer parts", Msgs: []fantasy.Message{msg(fantasy.MessageRoleUser, &fantasy.TextPart{Text: "go"}),
			msg(fantasy.MessageRoleAssistant, &fantasy.ToolCallPart{ToolCallID: "c", ToolName: "grep"}),
			msg(fantasy.MessageRoleTool, &fantasy.ToolResultPart{ToolCallID: "c", Output: &fantasy.ToolResultOutputContentText{Text: "x"}})}},
		{Name: "a nil output", Msgs: []fantasy.Message{u, call, result(nil)}},
		{Name: "a typed-nil text output", Msgs: []fantasy.Message{u, call, result((*fantasy.ToolResultOutputContentText)(nil))}},
		{Name: "a typed-nil error output", Msgs: []fantasy.Message{u, call, result((*fantasy.ToolResultOutputContentError)(nil))}},
		{Name: "a typed-nil media output", Msgs: []fantasy.Message{u, call, result((*fantasy.ToolResultOutputContentMedia)(nil))}},
		{Name: "an error output without an error", Msgs: []fantasy.Message{u, call, result(fantasy.ToolResultOutputContentError{})}},
		{Name: "an error output whose error is a typed nil", Msgs: []fantasy.Message{u, call, result(fantasy.ToolResultOutputContentError{Error: typedNil})}},
		{Name: "a typed-nil error output in an old turn", Msgs: []fantasy.Message{u, call, result(fantasy.ToolResultOutputContentError{Error: typedNil}),
			fantasy.NewUserMessage("next")}},
		{Name: "a provider-executed result whose error is a typed nil", Msgs: []fantasy.Message{u, executed(fantasy.ToolResultOutputContentError{Error: typedNil})}},
		{Name: "a provider-executed result with a typed-nil output", Msgs: []fantasy.Message{u, executed((*fantasy.ToolResultOutputContentText)(nil))}},
		{Name: "an image claiming 2^31 pixels a side", Msgs: []fantasy.Message{msg(fantasy.MessageRoleUser, fantasy.FilePart{Data: huge, MediaType: "image/png"})}},
		{Name: "a media output claiming 2^31 pixels a side", Msgs: []fantasy.Message{u, call,
			result(fantasy.ToolResultOutputContentMedia{Data: base64.StdEncoding.EncodeToString(huge), MediaType: "image/png"})}},
		{Name: "a media output that is no base64", Msgs: []fantasy.Message{u, call, result(fantasy.ToolResultOutputContentMedia{Data: "\xff!!", MediaType: "image/png"})}},
		{Name: "a message without parts", Msgs: []fantasy.Message{msg(fantasy.MessageRoleUser), msg(fantasy.MessageRoleAssistant), msg(fantasy.MessageRoleUser)}},
		{Name: "an unknown role", Msgs: []fantasy.Message{msg("robot", fantasy.TextPart{Text: "x"})}},
	}
}

// TestHostile: hostile inputs through Trim, RecoverOverflow, ToHistory,
// Validate, PrepareStep and a Model give a typed error or a valid output,
// never a panic (adaptertest.Hostile).
func TestHostile(t *testing.T) { hostile(t).Run(t) }

// FuzzHostile is the hostile-input suite's fuzz target.
func FuzzHostile(f *testing.F) { hostile(f).Fuzz(f) }

// TestOverheadTypedNilTool: a typed-nil tool among a call's tools counts
// nothing, as a nil one does (it panicked).
func TestOverheadTypedNilTool(t *testing.T) {
	tools := []fantasy.Tool{(*fantasy.FunctionTool)(nil), nil, fantasy.FunctionTool{Name: "grep"}}
	if got, want := hfantasy.Overhead(tools, nil), hfantasy.Overhead(tools[2:], nil); got != want {
		t.Errorf("Overhead = %d, want %d (the tool that is there)", got, want)
	}
}

// TestIsOverflowTypedNil: a typed-nil *fantasy.ProviderError, alone or
// wrapped, is no overflow, and reading it does not panic (it did).
func TestIsOverflowTypedNil(t *testing.T) {
	for _, err := range []error{(*fantasy.ProviderError)(nil), errors.Join(errors.New("x"), (*fantasy.ProviderError)(nil))} {
		if hfantasy.IsOverflow(err) {
			t.Errorf("IsOverflow(%T) = true", err)
		}
	}
}
