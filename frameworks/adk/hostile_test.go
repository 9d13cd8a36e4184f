package adk_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/adapters/gemini"
	hadk "github.com/histrim/history/frameworks/adk"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/plugin"
	"google.golang.org/adk/runner"
	"google.golang.org/adk/session"
	"google.golang.org/genai"
)

// callbacksHook returns a hook that runs contents through the callbacks'
// plugin in ADK's runner, the model (Gemini's, recorded) against a local
// endpoint answering status and body to every request: a plugin before
// the callbacks' puts contents in the request, as a runtime's own plugin
// may. It returns what the callbacks gave the model last (the resend,
// after an overflow) and the first error they reported. What needs t is
// built here, once: a fuzz target may not use it.
func callbacksHook(t testing.TB, status int, body string) func([]*genai.Content, int) ([]*genai.Content, error) {
	gm := geminiModel(t, answering(t, status, body).URL)
	tl := tools(t, loopserver.Words(10, 20))
	return func(contents []*genai.Content, budget int) ([]*genai.Content, error) {
		m := &recordingLLM{LLM: gm, keep: true}
		var reported error
		cb, err := hadk.New(hadk.Config{Budget: budget, Model: m, Calibration: &history.Calibration{},
			Options: []history.Option{history.WithStepTrim()},
			OnError: func(err error) {
				if reported == nil {
					reported = err
				}
			}})
		if err != nil {
			return nil, err
		}
		inject, err := plugin.New(plugin.Config{Name: "inject",
			BeforeModelCallback: func(_ agent.CallbackContext, req *model.LLMRequest) (*model.LLMResponse, error) {
				req.Contents = append([]*genai.Content(nil), contents...)
				return nil, nil
			}})
		if err != nil {
			panic(err) // a name and a callback: plugin.New does not fail
		}
		ours, err := cb.Plugin()
		if err != nil {
			panic(err)
		}
		ag, err := llmagent.New(llmagent.Config{Name: "coder", Model: m, Instruction: loopserver.SystemPrompt, Tools: tl})
		if err != nil {
			panic(err)
		}
		r, err := runner.New(runner.Config{AppName: "loop", Agent: ag, SessionService: session.InMemoryService(), AutoCreateSession: true,
			PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{inject, ours}}})
		if err != nil {
			panic(err)
		}
		for range r.Run(context.Background(), "user", "s", genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		}
		return m.last(), reported
	}
}

// hostile describes this module to the hostile-input suite: the Gemini
// adapter's entry points the callbacks use, and the callbacks in ADK's
// runner (BeforeModel on an answered request, OnModelError on one Gemini
// rejects for its length). A request must never be left without
// contents.
func hostile(t testing.TB) *adaptertest.Hostile[*genai.Content] {
	return &adaptertest.Hostile[*genai.Content]{
		Trim: func(c []*genai.Content, budget int, opts ...history.Option) ([]*genai.Content, history.Result, error) {
			return gemini.Trim(nil, c, budget, opts...)
		},
		RecoverOverflow: func(c []*genai.Content, perr error, attempt int, opts ...history.Option) ([]*genai.Content, history.Result, error) {
			return gemini.RecoverOverflow(nil, c, perr, attempt, opts...)
		},
		ToHistory: gemini.ToHistory, Validate: gemini.Validate,
		Hooks: map[string]func([]*genai.Content, int) ([]*genai.Content, error){
			"BeforeModel":  callbacksHook(t, http.StatusOK, answerBody),
			"OnModelError": callbacksHook(t, http.StatusBadRequest, overflowBody),
		},
		NonEmpty: true,
		Errors:   []error{hadk.ErrNoBudget, gemini.ErrInvalidContent, gemini.ErrUnpaired, gemini.ErrMissingSignature, gemini.ErrNoContents},
		Text: func(role history.Role, text string) *genai.Content {
			if role == history.RoleAssistant {
				return genai.NewContentFromText(text, genai.RoleModel)
			}
			return genai.NewContentFromText(text, genai.RoleUser) // Gemini's system instruction is not a content
		},
		Call: func(ids ...string) *genai.Content {
			c := &genai.Content{Role: genai.RoleModel}
			for _, id := range ids {
				c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: "grep", Args: map[string]any{"q": id}}})
			}
			return c
		},
		Results: func(ids ...string) []*genai.Content {
			c := &genai.Content{Role: genai.RoleUser}
			for _, id := range ids {
				c.Parts = append(c.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "grep", Response: map[string]any{"output": "found " + id}}})
			}
			return []*genai.Content{c}
		},
		Cases: hostileCases(),
	}
}

// hostileCases are the contents and parts genai's types let a caller
// leave nil, empty or out of range.
func hostileCases() []adaptertest.HostileCase[*genai.Content] {
	u := genai.NewContentFromText("go", genai.RoleUser)
	content := func(role string, parts ...*genai.Part) *genai.Content {
		return &genai.Content{Role: role, Parts: parts}
	}
	call := content(genai.RoleModel, &genai.Part{FunctionCall: &genai.FunctionCall{Name: "grep"}})
	respond := func(r map[string]any) *genai.Content {
		return content(genai.RoleUser, &genai.Part{FunctionResponse: &genai.FunctionResponse{Name: "grep", Response: r}})
	}
	return []adaptertest.HostileCase[*genai.Content]{
		{Name: "a nil content", Msgs: []*genai.Content{u, nil}},
		{Name: "a nil part", Msgs: []*genai.Content{content(genai.RoleUser, nil)}},
		{Name: "a part with nothing set", Msgs: []*genai.Content{content(genai.RoleUser, &genai.Part{})}},
		{Name: "a content without parts", Msgs: []*genai.Content{u, content(genai.RoleModel), content(genai.RoleUser)}},
		{Name: "a response that is nil", Msgs: []*genai.Content{u, call, respond(nil)}},
		{Name: "arguments that do not encode", Msgs: []*genai.Content{u, content(genai.RoleModel,
			&genai.Part{FunctionCall: &genai.FunctionCall{Name: "grep", Args: map[string]any{"f": func() {}}}}), respond(map[string]any{})}},
		{Name: "a response that does not encode", Msgs: []*genai.Content{u, call, respond(map[string]any{"c": make(chan int)})}},
		{Name: "a thought without text, a garbage signature", Msgs: []*genai.Content{u, content(genai.RoleModel, &genai.Part{Thought: true},
			&genai.Part{FunctionCall: &genai.FunctionCall{Name: "grep"}, ThoughtSignature: []byte(adaptertest.Binary)}),
			respond(map[string]any{})}},
		{Name: "an image claiming 2^31 pixels a side", Msgs: []*genai.Content{content(genai.RoleUser,
			&genai.Part{InlineData: &genai.Blob{Data: adaptertest.HugePNG(), MIMEType: "image/png"}})}},
		{Name: "inline data without bytes", Msgs: []*genai.Content{content(genai.RoleUser, &genai.Part{InlineData: &genai.Blob{MIMEType: "image/png"}})}},
		{Name: "an unknown role", Msgs: []*genai.Content{content("system", &genai.Part{Text: "x"})}},
	}
}

// TestHostile: hostile inputs through the Gemini adapter's entry points
// and the callbacks in ADK's runner give a typed error or a valid
// request, never a panic, and never a request without contents
// (adaptertest.Hostile).
func TestHostile(t *testing.T) { hostile(t).Run(t) }

// FuzzHostile is the hostile-input suite's fuzz target.
func FuzzHostile(f *testing.F) { hostile(f).Fuzz(f) }
