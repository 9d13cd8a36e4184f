package eino

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	orderedmap "github.com/wk8/go-ordered-map/v2"
)

// overflowErr is the error Eino's OpenAI chat model returns when the
// endpoint rejects a request as too long (its APIError, converted from
// the HTTP 400 body), with the sizes OpenAI states.
func overflowErr(used, limit int) error {
	return &einoopenai.APIError{
		Code: "context_length_exceeded", Type: "invalid_request_error", Param: ptr("messages"),
		Message:    fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", limit, used),
		HTTPStatus: "400 Bad Request", HTTPStatusCode: 400,
	}
}

// agentTurns is a conversation of n turns, each a task, a tool step with
// a result of about size tokens and an answer, after a system prompt.
func agentTurns(n, size int) []*schema.Message {
	out := []*schema.Message{schema.SystemMessage("You are an agent.")}
	for i := range n {
		id := fmt.Sprintf("call_%d", i)
		out = append(out,
			schema.UserMessage(fmt.Sprintf("task %d", i)),
			schema.AssistantMessage("", []schema.ToolCall{call(id, "read_file", `{"path":"a.go"}`)}),
			schema.ToolMessage(strings.Repeat("line of code here\n", size/4), id, schema.WithToolName("read_file")),
			schema.AssistantMessage(fmt.Sprintf("done %d", i), nil))
	}
	return out
}

func TestRecoverOverflow(t *testing.T) {
	six := agentTurns(6, 400)
	sent := tokens(t, six)
	rateLimit := &einoopenai.APIError{Code: "rate_limit_exceeded", Type: "requests", HTTPStatusCode: 429,
		Message: "Rate limit reached for requests"}
	trimmed, _, err := Trim(six, sent/2)
	if err != nil {
		t.Fatal(err)
	}
	last := agentTurns(1, 400)
	tests := []struct {
		name    string
		in      []*schema.Message
		err     error
		attempt int
		opts    []history.Option
		want    error // errors.Is
		// maxTokens bounds the Result; dropped is the least number of
		// turns dropped.
		maxTokens, dropped int
		// elided is the least number of results elided.
		elided int
	}{
		{name: "rate limit", in: six, err: rateLimit, attempt: 1, want: history.ErrNotOverflow, maxTokens: sent},
		{name: "nil error", in: six, err: nil, attempt: 1, want: history.ErrNotOverflow, maxTokens: sent},
		{name: "sizes stated", in: six, err: overflowErr(sent*12/10, sent), attempt: 1,
			maxTokens: sent * 10 / 12 * 90 / 100, dropped: 1},
		{name: "second attempt", in: six, err: overflowErr(sent*12/10, sent), attempt: 2,
			maxTokens: sent * 10 / 12 * 75 / 100, dropped: 2},
		{name: "no sizes", in: six, err: errors.New("error, status code: 400, message: context_length_exceeded"), attempt: 1,
			maxTokens: sent * 3 / 4, dropped: 1},
		{name: "earlier output, notice replaced", in: trimmed, err: overflowErr(sent, sent*9/10), attempt: 1,
			maxTokens: sent / 2, dropped: 1},
		{name: "elision first", in: six, err: overflowErr(sent*12/10, sent), attempt: 1,
			opts: []history.Option{history.WithElision(history.ElideOptions{}), history.WithStepTrim()}, maxTokens: sent * 10 / 12 * 90 / 100, elided: 1},
		{name: "nothing left", in: last, err: overflowErr(9000, 8000), attempt: 1, want: history.ErrCannotRecover,
			maxTokens: tokens(t, last)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tt.in)
			out, res, err := RecoverOverflow(tt.in, tt.err, tt.attempt, tt.opts...)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if adaptertest.JSON(t, tt.in) != before {
				t.Fatal("the input was modified")
			}
			if err := Validate(out); err != nil {
				t.Fatalf("output fails Validate: %v", err)
			}
			if got := tokens(t, out); (got != res.TokensAfter && tt.want != history.ErrNotOverflow) || got > tt.maxTokens {
				t.Errorf("output counts %d, Result %d, want at most %d", got, res.TokensAfter, tt.maxTokens)
			}
			if res.DroppedTurns < tt.dropped {
				t.Errorf("dropped %d turns, want at least %d", res.DroppedTurns, tt.dropped)
			}
			if res.ElidedResults < tt.elided {
				t.Errorf("elided %d results, want at least %d", res.ElidedResults, tt.elided)
			}
			notices := 0
			for j, k := range res.Kept {
				switch {
				case k < 0:
					notices++
					if out[j].Extra[KindKey] != "breadcrumb" {
						t.Errorf("notice %d is not marked", j)
					}
				case !slices.Contains(res.Modified, j) && out[j] != tt.in[k]:
					t.Errorf("message %d is not the caller's pointer %d", j, k)
				}
			}
			if notices > 1 || (res.DroppedTurns > 0 && notices != 1) {
				t.Errorf("%d notices after dropping %d turns", notices, res.DroppedTurns)
			}
			if out[len(out)-1] != tt.in[len(tt.in)-1] || out[0] != tt.in[0] {
				t.Error("the system prompt or the latest message was not kept")
			}
			switch {
			case errors.Is(err, history.ErrNotOverflow):
				if len(out) != len(tt.in) || cap(out) != len(out) || res.Trimmed {
					t.Errorf("not an overflow: %d of %d messages (cap %d), Trimmed %v", len(out), len(tt.in), cap(out), res.Trimmed)
				}
			case errors.Is(err, history.ErrCannotRecover):
				var re *history.RecoverError
				if !errors.As(err, &re) || !errors.Is(err, tt.err) || re.Limit != 8000 || re.Used != 9000 {
					t.Errorf("want a *history.RecoverError wrapping the provider's error with its sizes, got %#v", err)
				}
			}
		})
	}
}

// TestRecoverOverflowInvalid: a message that does not convert is reported
// as Trim reports it, with no messages.
func TestRecoverOverflowInvalid(t *testing.T) {
	in := []*schema.Message{schema.UserMessage("a"), nil}
	out, res, err := RecoverOverflow(in, overflowErr(10, 5), 1)
	if !errors.Is(err, ErrInvalidMessage) || out != nil || res.Messages != nil {
		t.Fatalf("got %v, %d messages, %d in Result", err, len(out), len(res.Messages))
	}
	_, _, err = RecoverOverflow(agentTurns(3, 100), overflowErr(10, 5), 1, history.WithPin(2))
	var oe *history.OptionError
	if !errors.As(err, &oe) {
		t.Fatalf("pinning a message with tool calls: got %v, want a *history.OptionError", err)
	}
}

// TestRecoverOverflowCalibration: RecoverOverflow records in the
// calibration what the overflow error says, so that the next trim aims
// lower.
func TestRecoverOverflowCalibration(t *testing.T) {
	in := agentTurns(6, 400)
	sent := tokens(t, in)
	var cal history.Calibration
	if _, _, err := RecoverOverflow(in, overflowErr(sent*13/10, sent), 1, history.WithCalibration(&cal)); err != nil {
		t.Fatal(err)
	}
	if got := cal.Budget(sent); got >= sent*10/13 {
		t.Errorf("after an overflow at 1.3x, the calibrated budget for %d is %d", sent, got)
	}
}

func TestOverhead(t *testing.T) {
	props := orderedmap.New[string, *jsonschema.Schema]()
	props.Set("path", &jsonschema.Schema{Type: "string", Description: "file to read"})
	read := &schema.ToolInfo{Name: "read_file", Desc: "Reads a file of the workspace.",
		ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&jsonschema.Schema{Type: "object", Properties: props, Required: []string{"path"}})}
	grep := &schema.ToolInfo{Name: "grep", Desc: "Searches the workspace.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{
			"pattern": {Type: schema.String, Desc: "regular expression", Required: true}})}
	noParams := &schema.ToolInfo{Name: "now", Desc: "Current time."}
	readJSON := `[{"type":"function","function":{"name":"read_file","description":"Reads a file of the workspace.",` +
		`"parameters":{"type":"object","properties":{"path":{"type":"string","description":"file to read"}},"required":["path"]}}}]`
	bytesCounter := history.CounterFunc(func(m history.Message) int { return len(m.Content) })
	tests := []struct {
		name  string
		tools []*schema.ToolInfo
		c     history.Counter
		want  int
	}{
		{name: "none", tools: nil, want: 0},
		{name: "empty", tools: []*schema.ToolInfo{}, want: 0},
		{name: "only nil", tools: []*schema.ToolInfo{nil}, want: 0},
		{name: "wire JSON", tools: []*schema.ToolInfo{read}, c: bytesCounter, want: len(readJSON)},
		{name: "heuristic", tools: []*schema.ToolInfo{read},
			want: history.Heuristic().CountMessage(history.Message{Role: history.RoleSystem, Content: readJSON})},
		{name: "no parameters", tools: []*schema.ToolInfo{noParams}, c: bytesCounter,
			want: len(`[{"type":"function","function":{"name":"now","description":"Current time.","parameters":null}}]`)},
		{name: "params form", tools: []*schema.ToolInfo{grep}, c: bytesCounter,
			want: len(`[{"type":"function","function":{"name":"grep","description":"Searches the workspace.",` +
				`"parameters":{"type":"object","properties":{"pattern":{"type":"string","description":"regular expression"}},"required":["pattern"]}}}]`)},
		{name: "negative counter", tools: []*schema.ToolInfo{read}, c: history.CounterFunc(func(history.Message) int { return -5 }), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Overhead(tt.tools, tt.c); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
	// Two tools encode as one array: [a] and [b] cost one byte more than [a,b].
	one, two := Overhead([]*schema.ToolInfo{read}, bytesCounter), Overhead([]*schema.ToolInfo{read, grep}, bytesCounter)
	if two != one+Overhead([]*schema.ToolInfo{grep}, bytesCounter)-1 {
		t.Errorf("two tools cost %d, one %d", two, one)
	}
}

// TestOverheadInTrim: WithOverhead(Overhead(...)) leaves room for the
// tools and TokensAfter counts them.
func TestOverheadInTrim(t *testing.T) {
	in := agentTurns(4, 200)
	tools := []*schema.ToolInfo{{Name: "read_file", Desc: strings.Repeat("Reads a file. ", 40)}}
	over := Overhead(tools, nil)
	budget := tokens(t, in)
	out, res, err := Trim(in, budget, history.WithOverhead(over))
	if err != nil {
		t.Fatal(err)
	}
	if got := tokens(t, out); res.TokensAfter != got+over || res.TokensAfter > budget || len(out) >= len(in) {
		t.Errorf("%d of %d messages, %d tokens + %d overhead, Result %d, budget %d", len(out), len(in), got, over, res.TokensAfter, budget)
	}
}

func tokens(t testing.TB, msgs []*schema.Message) int {
	t.Helper()
	h, err := ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(h, nil)
}
