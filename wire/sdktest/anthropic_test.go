package sdktest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/anthropicserver"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/wiretest"
)

// anthropicV2 is the loop's runtime on anthropic-sdk-go v2.
type anthropicV2 struct {
	client  anthropic.Client
	params  anthropic.MessageNewParams
	results []anthropic.ContentBlockParamUnion
}

func (a *anthropicV2) User(task string) {
	a.params.Messages = append(a.params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(task)))
}

func (a *anthropicV2) Result(id, text string) {
	a.results = append(a.results, anthropic.NewToolResultBlock(id, text, false))
}

func (a *anthropicV2) Step(ctx context.Context) ([]string, int, error) {
	if len(a.results) > 0 {
		a.params.Messages = append(a.params.Messages, anthropic.NewUserMessage(a.results...))
		a.results = nil
	}
	reply, err := a.client.Messages.New(ctx, a.params)
	if err != nil {
		return nil, 0, err
	}
	a.params.Messages = append(a.params.Messages, reply.ToParam())
	var ids []string
	for _, b := range reply.Content {
		if b.Type == "tool_use" {
			ids = append(ids, b.ID)
		}
	}
	u := reply.Usage
	return ids, int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), nil
}

// TestAnthropicLoops runs 50 user turns of tool calls through the
// Transport with anthropic-sdk-go v2 against the local Messages API (the
// API's pairing, thinking signatures, breakpoints and "prompt is too
// long" 400), at 16k and 32k windows, with and without thinking: no turn
// fails, nothing is refused but for length, and each refusal is recovered
// inside the Transport. Under the race detector each way of sending
// (thinking or not) runs its first loop alone (raceOnce).
func TestAnthropicLoops(t *testing.T) {
	var once raceOnce
	for _, window := range []int{16_000, 32_000} {
		for _, thinking := range []bool{false, true} {
			for _, mode := range loopModes(window) {
				if thinking != (mode.Name == adaptertest.Modes()[2].Name) && window > 16_000 || thinking && mode.Name != adaptertest.Modes()[2].Name {
					continue // CI time: thinking with the drift, at both windows; without it at 16k
				}
				if once.ran(fmt.Sprintf("thinking=%v", thinking)) {
					continue
				}
				t.Run(fmt.Sprintf("%d/thinking=%v/%s", window, thinking, mode.Name), func(t *testing.T) {
					t.Parallel()
					l := adaptertest.NewLoop("anthropic-sdk-go/v2", mode, window)
					if race.Enabled {
						l.Turns = 15
					}
					srv := &anthropicserver.Server{Backend: "anthropic", Window: window, Judge: l, Thinking: thinking}
					ts := httptest.NewServer(srv)
					defer ts.Close()
					var ev wiretest.Events
					tr := wiretest.Transport(&ev, "local", "vllm", window)
					tools := make([]anthropic.ToolUnionParam, len(loopserver.ToolNames))
					for i, name := range loopserver.ToolNames {
						tools[i] = anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: loopserver.ToolParameters()["properties"]}, name)
					}
					// The http.Client, or the SDK's middleware chain
					// (thinking's loops): both ways of installing it.
					install := option.WithHTTPClient(&http.Client{Transport: tr})
					if thinking {
						install = option.WithMiddleware(tr.Middleware)
					}
					c := &anthropicV2{
						client: anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("test"), option.WithMaxRetries(0), install),
						params: anthropic.MessageNewParams{Model: "local", MaxTokens: 1024,
							System: []anthropic.TextBlockParam{{Text: loopserver.SystemPrompt}}, Tools: tools},
					}
					runChatLoop(t, l, c)
					s, st := l.Stats(), srv.Stats()
					t.Logf("%s\n%s\n%v; server refused %v", adaptertest.TableHeader, s.Row(), &ev, st.Rejected)
					if s.Errors > 0 || s.Violations > 0 || s.Missing > 0 {
						t.Errorf("%d failed turns, %d pairing violations, %d requests without the latest task\n%v", s.Errors, s.Violations, s.Missing, l.Notes())
					}
					for why, n := range st.Rejected {
						if why != "invalid_request_error" || n != ev.Overflows {
							t.Errorf("the server refused %d requests for %s (%d refusals for length seen)", n, why, ev.Overflows)
						}
					}
					ev.Check(t, 10, st.Rejected["invalid_request_error"])
				})
			}
		}
	}
}
