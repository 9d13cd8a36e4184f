package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	hopenai "github.com/histrim/history/adapters/openai"
	"github.com/histrim/history/adapters/openai/internal/fakeprovider"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The whole loop a runtime runs, with the real openai-go client against a
// local endpoint that counts differently from the library: trim with a
// Calibration, the request's Overhead, elision and step trimming; observe
// usage.prompt_tokens; recover from context_length_exceeded.

// loopLimit is the provider's window in TestAgentLoop, and the budget the
// runtime configures: a runtime states the window, the calibration finds
// what fits.
const loopLimit = 12_000

// loopStats is what one run of the loop measured besides what the
// adaptertest.Loop counts.
type loopStats struct {
	turns, maxAttempt int
	// estErr and fitErr hold, after 1, 3 and 10 observations, the error of
	// the calibration's estimate of the next request's provider count:
	// from cal.Budget (sent × window / Budget(window)), and from the fitted
	// model (scale × sent + overhead).
	estErr, fitErr map[int]float64
	provider       fakeprovider.Stats
	// afterFirst counts the rejections after the first recovery.
	afterFirst int
}

// runLoop runs l.Turns (50) user turns of 1 to 6 tool steps against the local
// provider, which counts and checks every request through l (l.Mode, with
// l.Window as its window; l.Budget is the budget). It records every error that
// would reach the caller in l and goes on with the next turn.
//
// With a trimmer kind ("trimmer", or "trimmer+cal" with the Calibration)
// it runs as a runtime that keeps its whole transcript and trims it before
// every request with one Trimmer (low-water mark 0.7, elision, step
// trimming, the tools as overhead), recovering with the Trimmer's
// RecoverOverflow; kind "trim" is Trim with the Calibration.
func runLoop(t *testing.T, l *adaptertest.Loop, kind string) loopStats {
	stateful := kind != "trim"
	t.Helper()
	p := &fakeprovider.Provider{Limit: l.Window, Judge: l}
	srv := httptest.NewServer(p)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	budget := l.Budget

	params := openai.ChatCompletionNewParams{Model: "gpt-test", Tools: fakeprovider.Tools()}
	var cal history.Calibration
	opts := []history.Option{
		history.WithCalibration(&cal),
		history.WithOverhead(hopenai.Overhead(params, nil)),
		history.WithElision(history.ElideOptions{}),
		history.WithStepTrim(),
	}
	trim := func(msgs []openai.ChatCompletionMessageParamUnion) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
		return hopenai.Trim(msgs, budget, opts...)
	}
	recover := func(msgs, sent []openai.ChatCompletionMessageParamUnion, err error, attempt int) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
		return hopenai.RecoverOverflow(sent, err, attempt, opts...)
	}
	if stateful {
		topts := []history.Option{history.WithOverhead(hopenai.Overhead(params, nil)), history.WithLowWater(0.7),
			history.WithElision(history.ElideOptions{}), history.WithStepTrim()}
		if kind == "trimmer+cal" {
			topts = append(topts, history.WithCalibration(&cal))
		}
		tr := hopenai.NewTrimmer(topts...)
		trim = func(msgs []openai.ChatCompletionMessageParamUnion) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
			return tr.Trim(msgs, budget)
		}
		recover = func(msgs, _ []openai.ChatCompletionMessageParamUnion, err error, attempt int) ([]openai.ChatCompletionMessageParamUnion, history.Result, error) {
			return tr.RecoverOverflow(msgs, err, attempt)
		}
	}
	st := loopStats{estErr: map[int]float64{}, fitErr: map[int]float64{}}
	recovered := false
	observed := 0
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding agent. Use the tools to inspect the repository before you answer.")}

	for turn := 1; turn <= l.Turns; turn++ {
		st.turns++
		task := fakeprovider.Task(turn)
		l.Turn(turn, task)
		msgs = append(msgs, openai.UserMessage(task))
	steps:
		for step := 0; ; step++ {
			if step > 8 {
				t.Fatalf("turn %d does not end", turn)
			}
			sent, res, err := trim(msgs)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				l.Error(fmt.Errorf("Trim: %w", err))
				break
			}
			params.Messages = sent
			completion, err := client.Chat.Completions.New(ctx, params)
			for attempt := 1; err != nil && attempt <= 2; attempt++ {
				if !history.IsContextOverflow(err) {
					break
				}
				l.Rejected(attempt-1, res, &cal)
				st.maxAttempt = max(st.maxAttempt, attempt)
				if recovered {
					st.afterFirst++
				}
				recovered = true
				var rerr error
				if params.Messages, res, rerr = recover(msgs, params.Messages, err, attempt); rerr != nil {
					l.Error(fmt.Errorf("RecoverOverflow after %v: %w", err, rerr))
					break steps
				}
				completion, err = client.Chat.Completions.New(ctx, params)
			}
			if err != nil {
				l.Error(err)
				break
			}
			prompt := int(completion.Usage.PromptTokens)
			if observed == 1 || observed == 3 || observed == 10 {
				est := float64(res.TokensAfter) * float64(budget) / float64(cal.Budget(budget))
				st.estErr[observed] = math.Abs(est-float64(prompt)) / float64(prompt)
				scale, overhead, _, _ := cal.Model()
				st.fitErr[observed] = math.Abs(scale*float64(res.TokensAfter)+overhead-float64(prompt)) / float64(prompt)
			}
			cal.Observe(res.TokensAfter, prompt)
			observed++
			l.Accepted(res.Trimmed, prompt)
			if len(completion.Choices) != 1 {
				t.Fatalf("turn %d: %d choices", turn, len(completion.Choices))
			}
			reply := completion.Choices[0].Message
			// The history becomes what was sent, and the reply; a stateful
			// runtime keeps its transcript.
			if !stateful {
				msgs = params.Messages
			}
			msgs = append(msgs, reply.ToParam())
			if len(reply.ToolCalls) == 0 {
				break
			}
			for _, c := range reply.ToolCalls {
				msgs = append(msgs, openai.ToolMessage(fakeprovider.RunToolWords(c.ID, l.Words), c.ID))
			}
		}
	}
	st.provider = p.Stats()
	return st
}

// TestAgentLoop runs the loop against a provider that counts 1.3 times
// the library's estimate and one that counts 0.8 times, with the budget
// set to the provider's window: the calibration must keep every request
// under the window after at most one overflow, while filling it.
func TestAgentLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		factor float64
	}{
		{"provider counts 1.3x", 1.3},
		{"provider counts 0.8x", 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := adaptertest.NewLoop("openai", adaptertest.Skew(tc.factor), loopLimit).RaceShort()
			l.MinWords, l.MaxWords = 250, 1150 // the agentloop example's results
			st := runLoop(t, l, "trim")
			ls := l.Stats()
			t.Logf("F=%.1f: %d turns, %d requests, %d trimmed, %d overflows (max attempt %d), mean provider prompt of trimmed requests %.1f%% of the limit; estimate error (Budget) after 1/3/10 observations %.2f%% / %.2f%% / %.2f%%, (fit) %.2f%% / %.2f%% / %.2f%%",
				tc.factor, st.turns, ls.Requests, ls.Trimmed, ls.Overflows, st.maxAttempt, 100*ls.Fill(),
				100*st.estErr[1], 100*st.estErr[3], 100*st.estErr[10], 100*st.fitErr[1], 100*st.fitErr[3], 100*st.fitErr[10])
			if st.provider.Overflows != ls.Overflows {
				t.Errorf("the provider answered %d overflows, the loop counted %d", st.provider.Overflows, ls.Overflows)
			}
			if st.provider.BadRequests != 0 {
				t.Errorf("provider rejected %d requests as unreadable", st.provider.BadRequests)
			}
			if st.provider.Requests != ls.Requests || st.provider.Accepted+st.provider.Overflows+st.provider.PairingErrors != ls.Requests {
				t.Errorf("provider saw %+v, the loop counted %d requests", st.provider, ls.Requests)
			}
			l.Check(t) // at most 1 overflow, no error, no violation, fill >= 85%
		})
	}
}

// TestStatefulLoop runs the loop with the Trimmer against a provider
// counting 1.3 times the library's estimate, with and without a
// Calibration, at a budget of the window and of 1.25 times it: once the
// Trimmer has recovered from one rejection, its next plans fit what the
// provider said (issues 23 and 33: at most 1 rejection after the first
// recovery).
func TestStatefulLoop(t *testing.T) {
	adaptertest.StatefulLoops(t, "openai", loopLimit, func(t *testing.T, l *adaptertest.Loop, calibrate bool) {
		runLoop(t, l, map[bool]string{false: "trimmer", true: "trimmer+cal"}[calibrate])
	})
}

// Replays: histories that LangChain's and LiteLLM's trimmers turned into
// requests OpenAI rejects, or into requests without the user's latest
// question, each naming its source. Each is trimmed here at budgets from 1
// to above its size with every option set of the ladder, and sent with the
// real client to a local endpoint that answers a broken tool pairing with
// OpenAI's own 400: every trim is valid, keeps the latest request, and is
// accepted; the peer's output is rejected.

type msg = openai.ChatCompletionMessageParamUnion

// callMsg is an assistant message with text and one function call.
func callMsg(text, id, name, args string) msg {
	u := openai.AssistantMessage(text)
	u.OfAssistant.ToolCalls = []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args}}}}
	return u
}

// endpoint returns a client for a local Chat Completions endpoint that
// enforces OpenAI's tool-pairing rules with its 400 bodies ("Invalid
// parameter: messages with role 'tool' must be a response to a preceeding
// message with 'tool_calls'.", smarter-sh/smarter#264, miurla/morphic#136;
// "An assistant message with 'tool_calls' must be followed by tool
// messages responding to each 'tool_call_id'. The following tool_call_ids
// did not have response messages: call_...", router-for-me/CLIProxyAPI#2798).
func endpoint(t *testing.T) (openai.Client, *fakeprovider.Provider) {
	t.Helper()
	p := &fakeprovider.Provider{Limit: 1_000_000, Factor: 1}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0)), p
}

func send(c openai.Client, msgs []msg) error {
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs})
	return err
}

// replay trims in at budgets from 1 to above its size with every ladder
// set and sends each output: it must pass Validate, hold in's last user
// message, and be accepted.
func replay(t *testing.T, c openai.Client, in []msg) {
	t.Helper()
	latest := -1
	for i := range in {
		if in[i].OfUser != nil {
			latest = i
		}
	}
	hist, err := hopenai.ToHistory(in)
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, set := range adaptertest.LadderSets(false) {
		name, opts := set.Name, set.Opts
		for _, budget := range adaptertest.Budgets(history.Estimate(hist, nil), 60) {
			out, _, err := hopenai.Trim(in, budget, opts...)
			if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			if err := hopenai.Validate(out); err != nil {
				t.Fatalf("%s, budget %d: %v", name, budget, err)
			}
			if !slices.ContainsFunc(out, func(m msg) bool { return m.OfUser != nil && m.OfUser == in[latest].OfUser }) {
				t.Fatalf("%s, budget %d: the latest user message was dropped", name, budget)
			}
			if err := send(c, out); err != nil {
				t.Fatalf("%s, budget %d: rejected: %v", name, budget, err)
			}
			sent++
		}
	}
	if sent == 0 {
		t.Fatal("nothing sent")
	}
}

// rejected checks that the peer's output is rejected with a 400 whose
// message starts with want.
func rejected(t *testing.T, c openai.Client, peer []msg, want string) {
	t.Helper()
	err := send(c, peer)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.HasPrefix(apiErr.Message, want) {
		t.Fatalf("the peer's output: got %v, want a 400 saying %q", err, want)
	}
	if hopenai.Validate(peer) == nil {
		t.Fatal("Validate passes the peer's output, which OpenAI rejects")
	}
}

// TestReplayLangChainLeadingToolMessage replays langchain-ai/langchain#33245:
// trim_messages(messages, strategy="last", token_counter=len, max_tokens=5)
// returned ToolMessage, HumanMessage, AIMessage, HumanMessage, AIMessage:
// the tool message whose AIMessage (with the tool call abc123) was cut
// off, which OpenAI rejects (the same failure as
// langchain-ai/langchain#35313: "Error code: 400 - Invalid parameter:
// messages with role 'tool' must be a response to a preceding message with
// 'tool_calls'"). The first four messages are the issue's; the last two
// stand for its elided rest.
func TestReplayLangChainLeadingToolMessage(t *testing.T) {
	c, _ := endpoint(t)
	in := []msg{
		openai.UserMessage("What's the weather in Florida?"),
		callMsg("Let's check the weather in Florida", "abc123", "get_weather", `{"location":"Florida"}`),
		openai.ToolMessage("It's sunny.", "abc123"),
		openai.UserMessage("I see"),
		openai.AssistantMessage("Do you want to know anything else?"),
		openai.UserMessage("What about Texas?"),
		openai.AssistantMessage("Texas is sunny too."),
	}
	rejected(t, c, in[2:], "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
	replay(t, c, in)
}

// TestReplayLangChainJSOrphanTool replays what ../shared/REFERENCES.md
// measured of LangChain.js trimMessages: on a plain agent history it
// returned system, tool, ai, human, ai, an orphan tool message after the
// system prompt.
func TestReplayLangChainJSOrphanTool(t *testing.T) {
	c, _ := endpoint(t)
	in := []msg{
		openai.SystemMessage("You are a helpful assistant with a weather tool."),
		openai.UserMessage("Weather in Oslo?"),
		callMsg("", "call_oslo", "get_weather", `{"city":"Oslo"}`),
		openai.ToolMessage("Oslo: 4 °C, rain. "+strings.Repeat("hourly data ", 30), "call_oslo"),
		openai.AssistantMessage("It is 4 °C and raining in Oslo."),
		openai.UserMessage("And tomorrow?"),
		openai.AssistantMessage("Tomorrow will be dry, around 6 °C."),
	}
	peer := []msg{in[0], in[3], in[4], in[5], in[6]}
	rejected(t, c, peer, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
	replay(t, c, in)
}

// TestReplayLangChainDropsLatestRequest replays the trims that sent the
// model a request without the user's question: langchain-ai/langchainjs#8287
// (trimMessages with strategy "first" and allowPartial "would always strip
// away the HumanMessage completely", leaving the system prompt alone) and
// airas-org/airas#655 (trim_messages with strategy="last" and
// allow_partial=False returned an empty list when the question alone
// exceeded the limit; OpenAI then answers "Invalid 'messages': empty
// array. Expected an array with minimum length 1, but got an empty array
// instead.", CopilotKit/CopilotKit#529). The latest turn is always kept:
// over budget it comes with history.ErrLatestTurnTooLarge, for the caller
// to act on, never silently dropped.
func TestReplayLangChainDropsLatestRequest(t *testing.T) {
	c, _ := endpoint(t)
	entity := `{"name":"ACME","filings":[` + strings.Repeat(`{"year":2020,"revenue":1000000,"notes":"restated"},`, 200) + `{}]}`
	in := []msg{
		openai.SystemMessage("You summarise entities. " + strings.Repeat("Follow the house style. ", 40)),
		openai.UserMessage("Please analyze this entity data: " + entity),
	}
	out, res, err := hopenai.Trim(in, 500)
	if !errors.Is(err, history.ErrLatestTurnTooLarge) || len(out) != 2 || out[1].OfUser != in[1].OfUser || res.TokensAfter <= 500 {
		t.Fatalf("Trim = %d messages, %d tokens, %v; want both kept and ErrLatestTurnTooLarge", len(out), res.TokensAfter, err)
	}
	replay(t, c, in)
}

// TestReplayLiteLLMDropsToolResult replays BerriAI/litellm#6505: with
// system, user, assistant (tool call), tool, litellm's trim_messages
// returned the messages without the tool result, which OpenAI rejects
// ("An assistant message with 'tool_calls' must be followed by tool
// messages responding to each 'tool_call_id'. ...").
func TestReplayLiteLLMDropsToolResult(t *testing.T) {
	c, _ := endpoint(t)
	in := []msg{
		openai.SystemMessage("You look things up."),
		openai.UserMessage("Find the invoice for order 1138."),
		callMsg("", "call_inv", "find_invoice", `{"order":1138}`),
		openai.ToolMessage("invoice INV-1138: 240.00 EUR, paid", "call_inv"),
	}
	rejected(t, c, in[:3], "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'.")
	replay(t, c, in)
}

// TestClearedArgumentsAccepted sends requests trimmed with cleared
// arguments through the real openai-go client to the local endpoint that
// enforces OpenAI's pairing rules (fakeprovider), at budgets from the
// fully elided size to the whole: every request is accepted, and the
// endpoint receives, decoded from the wire, the arguments and the size
// the core counted.
func TestClearedArgumentsAccepted(t *testing.T) {
	p := &fakeprovider.Provider{Limit: 1_000_000, Factor: 1}
	var got []msg
	srv := httptest.NewServer(capture(p, &got))
	t.Cleanup(srv.Close)
	c := openai.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))

	result := strings.Repeat("wrote 30 lines\n", 40)
	in := []msg{openai.SystemMessage("You are a coding agent."), openai.UserMessage("Add the handlers.")}
	for i := range 6 {
		id := "w" + strconv.Itoa(i)
		content := strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) {}\n", 20+i)
		in = append(in, callMsg("", id, "write_file", `{"path":"f`+strconv.Itoa(i)+`.go","content":`+strconv.Quote(content)+`}`), openai.ToolMessage(result, id))
	}
	in = append(in, callMsg("", "t1", "run_tests", `{}`), openai.ToolMessage("ok", "t1"))
	elide := history.ElideOptions{KeepRecent: 1, MinTokens: -1, ClearArguments: 16}
	opts := []history.Option{history.WithElision(elide)}
	hist, err := hopenai.ToHistory(in)
	if err != nil {
		t.Fatal(err)
	}
	er, err := history.ElideToolResults(hist, elide)
	if err != nil {
		t.Fatal(err)
	}
	least, total := history.Estimate(er.Messages, nil), history.Estimate(hist, nil)
	maxCleared := 0
	for budget := least; budget <= total; budget += (total - least) / 8 {
		out, res, err := hopenai.Trim(in, budget, opts...)
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if err := send(c, out); err != nil {
			t.Fatalf("budget %d: the trimmed request was rejected: %v", budget, err)
		}
		back, err := hopenai.ToHistory(got)
		if err != nil {
			t.Fatal(err)
		}
		var sent, want []string
		for _, m := range back {
			for _, tc := range m.ToolCalls {
				sent = append(sent, tc.Arguments)
			}
		}
		for _, m := range res.Messages {
			for _, tc := range m.ToolCalls {
				want = append(want, tc.Arguments)
			}
		}
		cleared := 0
		for _, a := range sent {
			if strings.HasPrefix(a, `{"elided":"[arguments elided: `) {
				cleared++
			}
		}
		if received := history.Estimate(back, nil); received != res.TokensAfter || len(sent) != len(want) {
			t.Fatalf("budget %d: the endpoint received %d tokens and %d calls; the core counted %d and kept %d", budget, received, len(sent), res.TokensAfter, len(want))
		}
		for i := range want {
			if sent[i] != want[i] {
				t.Fatalf("budget %d: call %d arrived with %.60q..., the core kept %.60q...", budget, i, sent[i], want[i])
			}
		}
		maxCleared = max(maxCleared, cleared)
	}
	if maxCleared != 6 || p.Stats().PairingErrors != 0 {
		t.Fatalf("at most %d calls cleared (want all 6 at the lowest budget), %d pairing errors", maxCleared, p.Stats().PairingErrors)
	}
}

// capture wraps p, recording the messages of each request as the
// endpoint receives them.
func capture(p *fakeprovider.Provider, msgs *[]msg) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []msg `json:"messages"`
		}
		_ = json.Unmarshal(body, &req) // the provider answers a body it cannot read
		*msgs = req.Messages
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.ServeHTTP(w, r)
	})
}
