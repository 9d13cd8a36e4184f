package sdktest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/loopserver"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/internal/wiretest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	goopenai "github.com/sashabaranov/go-openai"
)

// loopModes are the provider's countings a loop runs at window: at 16k a
// provider counting 1.35 times the library's estimate and one drifting
// from 1.0 to 1.4 at turn 25; at 32k the drift alone (CI time).
func loopModes(window int) []adaptertest.Mode {
	if window <= 16_000 {
		return []adaptertest.Mode{adaptertest.Modes()[0], adaptertest.Modes()[2]}
	}
	return []adaptertest.Mode{adaptertest.Modes()[2]}
}

// raceOnce leaves out, under the race detector, every loop of a client
// (a way of sending) but its first. The race run's loops are 15 turns,
// short of the drift (turn 25): a client's other loops differ from its
// first in the window and the provider's counting, and the detector
// checks the calls, the same in each; the plain run checks every loop of
// the matrix. The zero value is ready to use.
type raceOnce map[string]bool

// ran reports whether the race run has run a loop of client already,
// and records one; without the detector, always false.
func (o *raceOnce) ran(client string) bool {
	if !race.Enabled {
		return false
	}
	if *o == nil {
		*o = map[string]bool{}
	}
	had := (*o)[client]
	(*o)[client] = true
	return had
}

// runChatLoop runs l.Turns user turns of loopserver's script with c,
// whose transcript is never trimmed by the runtime: the Transport trims
// what goes out.
func runChatLoop(t *testing.T, l *adaptertest.Loop, c adaptertest.Runtime) {
	t.Helper()
	adaptertest.RunTurns(t, l, c, loopserver.Task, func(id string) string { return loopserver.ToolResult(id, l.Words) })
}

// openaiGo is the loop's runtime on openai-go.
type openaiGo struct {
	client openai.Client
	params openai.ChatCompletionNewParams
	stream bool
}

func (o *openaiGo) User(task string) {
	o.params.Messages = append(o.params.Messages, openai.UserMessage(task))
}
func (o *openaiGo) Result(id, text string) {
	o.params.Messages = append(o.params.Messages, openai.ToolMessage(text, id))
}

func (o *openaiGo) Step(ctx context.Context) ([]string, int, error) {
	var msg openai.ChatCompletionMessage
	var prompt int
	if o.stream {
		o.params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		s := o.client.Chat.Completions.NewStreaming(ctx, o.params)
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			acc.AddChunk(s.Current())
		}
		if err := s.Err(); err != nil {
			return nil, 0, err
		}
		if len(acc.Choices) != 1 {
			return nil, 0, errors.New("no choice in the stream")
		}
		msg, prompt = acc.Choices[0].Message, int(acc.Usage.PromptTokens)
	} else {
		c, err := o.client.Chat.Completions.New(ctx, o.params)
		if err != nil {
			return nil, 0, err
		}
		msg, prompt = c.Choices[0].Message, int(c.Usage.PromptTokens)
	}
	o.params.Messages = append(o.params.Messages, msg.ToParam())
	var ids []string
	for _, c := range msg.ToolCalls {
		ids = append(ids, c.ID)
	}
	return ids, prompt, nil
}

func openaiGoTools() []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		out[i] = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: name,
			Description: openai.String(loopserver.ToolDescription(name)), Parameters: loopserver.ToolParameters()})
	}
	return out
}

// goOpenAI is the loop's runtime on go-openai.
type goOpenAI struct {
	client *goopenai.Client
	req    goopenai.ChatCompletionRequest
}

func (o *goOpenAI) User(task string) {
	o.req.Messages = append(o.req.Messages, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: task})
}
func (o *goOpenAI) Result(id, text string) {
	o.req.Messages = append(o.req.Messages, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, ToolCallID: id, Content: text})
}
func (o *goOpenAI) Step(ctx context.Context) ([]string, int, error) {
	resp, err := o.client.CreateChatCompletion(ctx, o.req)
	if err != nil {
		return nil, 0, err
	}
	msg := resp.Choices[0].Message
	o.req.Messages = append(o.req.Messages, msg)
	var ids []string
	for _, c := range msg.ToolCalls {
		ids = append(ids, c.ID)
	}
	return ids, resp.Usage.PromptTokens, nil
}

func goOpenAITools() []goopenai.Tool {
	out := make([]goopenai.Tool, len(loopserver.ToolNames))
	for i, name := range loopserver.ToolNames {
		out[i] = goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: name, Description: loopserver.ToolDescription(name), Parameters: loopserver.ToolParameters()}}
	}
	return out
}

// TestChatLoops runs 50 user turns of tool calls through the Transport
// with openai-go (streamed and not, and through option.WithMiddleware)
// and go-openai, at 16k and 32k windows (loopModes): the runtime sends its whole transcript every
// time and no turn fails, no request breaks the pairing or lacks the
// latest task, and each refusal for length is recovered inside the
// Transport. Under the race detector each client runs its first loop
// alone (raceOnce).
func TestChatLoops(t *testing.T) {
	clients := []string{"openai-go", "openai-go/stream", "go-openai", "openai-go/middleware"}
	windows := []int{16_000, 32_000}
	var once raceOnce
	for _, name := range clients {
		for _, window := range windows {
			for _, mode := range loopModes(window) {
				if name == "openai-go/middleware" && (window > 16_000 || mode.Name != adaptertest.Modes()[2].Name) {
					continue // CI time: the middleware's chain once
				}
				if once.ran(name) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/%s", name, window, mode.Name), func(t *testing.T) {
					t.Parallel()
					l := adaptertest.NewLoop(name, mode, window)
					if race.Enabled {
						l.Turns = 15
					}
					srv := &loopserver.OpenAI{Judge: l, Window: window}
					ts := httptest.NewServer(srv)
					defer ts.Close()
					var ev wiretest.Events
					tr := wiretest.Transport(&ev, "local", "vllm", window)
					hc := &http.Client{Transport: tr}
					var c adaptertest.Runtime
					switch name {
					case "openai-go", "openai-go/stream":
						c = &openaiGo{
							client: openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), option.WithHTTPClient(hc)),
							params: openai.ChatCompletionNewParams{Model: "local", Tools: openaiGoTools(),
								Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(loopserver.SystemPrompt)}},
							stream: name == "openai-go/stream",
						}
					case "openai-go/middleware":
						c = &openaiGo{
							client: openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0), option.WithMiddleware(tr.Middleware)),
							params: openai.ChatCompletionNewParams{Model: "local", Tools: openaiGoTools(),
								Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(loopserver.SystemPrompt)}},
						}
					case "go-openai":
						cfg := goopenai.DefaultConfig("sk-test")
						cfg.BaseURL, cfg.HTTPClient = ts.URL+"/v1", hc
						c = &goOpenAI{client: goopenai.NewClientWithConfig(cfg), req: goopenai.ChatCompletionRequest{Model: "local", Tools: goOpenAITools(),
							Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleSystem, Content: loopserver.SystemPrompt}}}}
					}
					runChatLoop(t, l, c)
					s := l.Stats()
					st := srv.Stats()
					t.Logf("%s\n%s\n%v", adaptertest.TableHeader, s.Row(), &ev)
					for _, p := range srv.Problems() {
						t.Error("server: " + p)
					}
					if s.Errors > 0 || s.Violations > 0 || s.Missing > 0 || st.BadRequests > 0 {
						t.Errorf("%d failed turns, %d pairing violations, %d requests without the latest task, %d bad requests\n%v",
							s.Errors, s.Violations, s.Missing, st.BadRequests, l.Notes())
					}
					ev.Check(t, 10, st.Overflows)
				})
			}
		}
	}
}
