package history

// Tests of RecoverOverflow: targets, results, termination and the hostile
// inputs of the recovery path. The classifier's tests are in
// overflow_test.go and overflow_providers_test.go.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolHistory returns a system message and n turns of four messages each
// (user, assistant calling a tool, tool result, assistant), 40 tokens a turn
// under the unit counter.
func toolHistory(n int) []Message {
	msgs := []Message{{Role: RoleSystem, Content: "be brief"}}
	for i := range n {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			Message{Role: RoleUser, Content: "question " + strconv.Itoa(i)},
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "search", Arguments: `{"q":"x"}`}}},
			Message{Role: RoleTool, ToolCallID: id, Content: "result " + strconv.Itoa(i)},
			Message{Role: RoleAssistant, Content: "answer " + strconv.Itoa(i)},
		)
	}
	return msgs
}

func TestRecoverOverflow(t *testing.T) {
	const (
		anthropic2x = "prompt is too long: 2000 tokens > 1000 maximum"          // Used/Limit = 2
		groq        = "Please reduce the length of the messages or completion." // no numbers
		geminiLimit = "The input token count exceeds the maximum number of tokens allowed (150)."
	)
	// 10 turns of 40 tokens + a 10-token system message = 410 tokens; with
	// the 10-token breadcrumb the fixed part of a trimmed history is 20.
	tests := []struct {
		name      string
		err       string
		attempt   int
		budget    int // expected target
		keptTurns int
		reason    string
	}{
		{"stated sizes, attempt 1", anthropic2x, 1, 184, 4, "410 × 1000/2000 × 0.90"},
		{"stated sizes, attempt 2", anthropic2x, 2, 153, 3, "410 × 1000/2000 × 0.75"},
		{"stated sizes, attempt 3", anthropic2x, 3, 76, 1, "410 × 1000/2000 × 0.375"},
		{"no sizes, attempt 1", groq, 1, 307, 7, "410 × 0.75"},
		{"no sizes, attempt 2", groq, 2, 205, 4, "410 × 0.5"},
		{"no sizes, attempt 3", groq, 3, 102, 2, "410 × 0.25"},
		{"attempt 0 reads as 1", groq, 0, 307, 7, "attempt <= 0 is the first attempt"},
		{"attempt -5 reads as 1", groq, -5, 307, 7, "attempt <= 0 is the first attempt"},
		{"limit only", geminiLimit, 1, 135, 2, "min(410 × 0.75, 150 × 0.90)"},
		{"huge attempt", groq, 1 << 30, 1, 1, "the target never drops below 1; the latest turn stays"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := toolHistory(10)
			orig := clone(in)
			var events []Event
			res, err := RecoverOverflow(in, errors.New(tc.err), tc.attempt, WithCounter(unit),
				WithOnTrim(func(e Event) { events = append(events, e) }))
			if err != nil {
				t.Fatalf("err = %v (%s)", err, tc.reason)
			}
			if !reflect.DeepEqual(in, orig) {
				t.Fatal("input modified")
			}
			checkResult(t, in, res, true)
			if res.Budget != tc.budget || res.KeptTurns != tc.keptTurns || !res.Trimmed {
				t.Fatalf("budget %d kept %d trimmed %v; want budget %d kept %d (%s)",
					res.Budget, res.KeptTurns, res.Trimmed, tc.budget, tc.keptTurns, tc.reason)
			}
			if len(events) != 1 {
				t.Fatalf("%d events, want 1", len(events))
			}
			want := eventOf(res, ReasonOverflow, max(tc.attempt, 1))
			if !reflect.DeepEqual(stripLabels(events[0]), want) {
				t.Fatalf("event %+v, want %+v", events[0], want)
			}
		})
	}
}

func TestRecoverOverflowNotOverflow(t *testing.T) {
	in := toolHistory(3)
	orig := clone(in)
	for _, perr := range []error{
		nil,
		errors.New(`{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29937, Requested 385.","type":"tokens","code":"rate_limit_exceeded"}}`),
		errors.New("400 max_tokens is too large: 6000. This model supports at most 4096 completion tokens, whereas you provided 6000."),
	} {
		fired := false
		res, err := RecoverOverflow(in, perr, 1, WithOnTrim(func(Event) { fired = true }))
		if !errors.Is(err, ErrNotOverflow) {
			t.Fatalf("%v: err = %v, want ErrNotOverflow", perr, err)
		}
		if fired || res.Trimmed || !isIdentity(res.Kept, len(in)) || res.Dropped != nil {
			t.Fatalf("%v: history touched: %+v", perr, res)
		}
		if len(res.Messages) != len(in) || cap(res.Messages) != len(in) || &res.Messages[0] != &in[0] {
			t.Fatalf("%v: Messages is not the input clipped", perr)
		}
		if !reflect.DeepEqual(in, orig) {
			t.Fatal("input modified")
		}
	}
}

func TestRecoverOverflowCannotRecover(t *testing.T) {
	provider := errors.New("prompt is too long: 208310 tokens > 200000 maximum")
	for _, in := range [][]Message{
		toolHistory(1),
		{{Role: RoleSystem, Content: "only a prompt"}},
		nil,
		append([]Message{{Role: RoleSystem, Content: "s"}, Breadcrumb()}, toolHistory(1)[1:]...),
	} {
		fired := false
		res, err := RecoverOverflow(in, fmt.Errorf("call: %w", provider), 2, WithCounter(unit),
			WithOnTrim(func(Event) { fired = true }))
		if !errors.Is(err, ErrCannotRecover) || !errors.Is(err, provider) {
			t.Fatalf("err = %v, want ErrCannotRecover wrapping the provider error", err)
		}
		var re *RecoverError
		if !errors.As(err, &re) {
			t.Fatalf("err %T is not a *RecoverError", err)
		}
		if re.Used != 208310 || re.Limit != 200000 || re.Attempt != 2 || re.Tokens != res.TokensAfter || re.Budget < 1 {
			t.Fatalf("RecoverError %+v", re)
		}
		msg := err.Error()
		for _, want := range []string{"history: cannot recover", "208310 of 200000", "target " + strconv.Itoa(re.Budget), "prompt is too long"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("error %q does not mention %q", msg, want)
			}
		}
		if fired || res.Trimmed {
			t.Fatalf("nothing was dropped, yet trimmed=%v event=%v", res.Trimmed, fired)
		}
		if len(res.Messages) != len(in) {
			t.Fatalf("Result holds %d messages, want the %d left", len(res.Messages), len(in))
		}
	}
}

func TestRecoverOverflowBreadcrumbNotStacked(t *testing.T) {
	first, err := TrimToRecentTurns(toolHistory(10), 300, WithCounter(unit))
	if err != nil || !first.Trimmed {
		t.Fatalf("setup trim: %v", err)
	}
	res, err := RecoverOverflow(first.Messages, errors.New("context_length_exceeded"), 1, WithCounter(unit))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range res.Messages {
		if m.Kind == KindBreadcrumb {
			n++
		}
	}
	if n != 1 || res.Messages[1].Kind != KindBreadcrumb {
		t.Fatalf("%d breadcrumbs: %v", n, render(res.Messages))
	}
	checkResult(t, first.Messages, res, true)
}

// fakeProvider counts a history as factor × the Heuristic count (a provider
// whose tokenizer disagrees with ours) and rejects it above limit with an
// Anthropic-shaped error, or with a size-less error when quiet is set.
type fakeProvider struct {
	factor float64
	limit  int
	quiet  bool
}

func (p fakeProvider) send(msgs []Message) error {
	n := int(float64(Estimate(msgs, Heuristic())) * p.factor)
	if n <= p.limit {
		return nil
	}
	if p.quiet {
		return errors.New(`{"error":{"message":"Your input exceeds the context window of this model.","code":"context_length_exceeded"}}`)
	}
	return fmt.Errorf("anthropic: status 400: prompt is too long: %d tokens > %d maximum", n, p.limit)
}

// TestRecoverOverflowTerminates drives the retry loop against providers that
// reject more than the library expects, including one that rejects
// everything. It must end, either accepted or with ErrCannotRecover, within a
// bounded number of attempts, dropping turns on every attempt.
func TestRecoverOverflowTerminates(t *testing.T) {
	big := toolHistory(200)
	est := Estimate(big, Heuristic())
	tests := []struct {
		name        string
		p           fakeProvider
		maxAttempts int
		accepted    bool
	}{
		{"sizes stated, provider counts 30% more", fakeProvider{factor: 1.3, limit: est / 2}, 1, true},
		{"sizes stated, provider counts 3x more", fakeProvider{factor: 3, limit: est / 2}, 1, true},
		{"no sizes, provider counts 30% more", fakeProvider{factor: 1.3, limit: est / 2, quiet: true}, 3, true},
		{"rejects everything, sizes stated", fakeProvider{factor: 1, limit: 0}, 16, false},
		{"rejects everything, no sizes", fakeProvider{factor: 1, limit: 0, quiet: true}, 16, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs := big
			attempt := 0
			for {
				perr := tc.p.send(msgs)
				if perr == nil {
					if !tc.accepted {
						t.Fatal("accepted")
					}
					break
				}
				attempt++
				if attempt > tc.maxAttempts {
					t.Fatalf("still rejected after %d attempts (%d messages left)", tc.maxAttempts, len(msgs))
				}
				before := Estimate(msgs, Heuristic())
				res, err := RecoverOverflow(msgs, perr, attempt)
				if errors.Is(err, ErrCannotRecover) {
					if tc.accepted {
						t.Fatalf("gave up at attempt %d: %v", attempt, err)
					}
					if !errors.Is(err, perr) {
						t.Fatal("provider error not wrapped")
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if !res.Trimmed || res.TokensAfter >= before {
					t.Fatalf("attempt %d made no progress: %d -> %d", attempt, before, res.TokensAfter)
				}
				checkResult(t, msgs, res, true)
				msgs = res.Messages
			}
		})
	}
}

func TestOverflowTarget(t *testing.T) {
	tests := []struct {
		est     int
		ov      Overflow
		attempt int
		want    int
		reason  string
	}{
		{1000, Overflow{Used: 1100, Limit: 1000}, 1, 818, "1000 × 1000/1100 × 0.9"},
		{1000, Overflow{Used: 900, Limit: 1000}, 1, 999, "a provider that says it fits still gets less than before"},
		{1000, Overflow{}, 1, 750, "blind first attempt"},
		{1000, Overflow{}, 4, 125, "blind fourth attempt"},
		{1000, Overflow{Used: 5}, 1, 750, "Used without Limit is blind"},
		{0, Overflow{}, 1, 1, "never below 1"},
		{1, Overflow{Used: 10, Limit: 5}, 1, 1, "never below 1"},
		{1 << 30, Overflow{Used: 1 << 30, Limit: 1 << 30}, math.MaxInt, 1, "no overflow in the arithmetic"},
	}
	for _, tc := range tests {
		if got := overflowTarget(tc.est, tc.ov, tc.attempt); got != tc.want {
			t.Errorf("overflowTarget(%d, %+v, %d) = %d, want %d (%s)", tc.est, tc.ov, tc.attempt, got, tc.want, tc.reason)
		}
	}
}

func ExampleRecoverOverflow() {
	history := []Message{
		{Role: RoleSystem, Content: "You are a coding agent."},
		{Role: RoleUser, Content: "Read main.go"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"main.go"}`}}},
		{Role: RoleTool, ToolCallID: "c1", Content: strings.Repeat("package main // ...\n", 200)},
		{Role: RoleAssistant, Content: "main.go starts the server."},
		{Role: RoleUser, Content: "Now add a health check."},
	}
	// The provider rejected the request; this is the error as the SDK
	// returned it, possibly wrapped by the runtime.
	providerErr := fmt.Errorf("turn 2: %w", errors.New(
		`400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 1400 tokens > 1000 maximum"}}`))

	res, err := RecoverOverflow(history, providerErr, 1, WithOnTrim(func(e Event) {
		fmt.Printf("%s: dropped %d turn(s), %d -> %d tokens (budget %d, attempt %d)\n",
			e.Reason, e.DroppedTurns, e.TokensBefore, e.TokensAfter, e.Budget, e.Attempt)
	}))
	switch {
	case errors.Is(err, ErrCannotRecover):
		fmt.Println("give up:", err)
	case err != nil:
		fmt.Println("not an overflow:", err)
	default:
		fmt.Println("retry with", len(res.Messages), "messages:")
		for _, m := range res.Messages {
			fmt.Printf("  %s: %s\n", m.Role, m.Content)
		}
	}
	// Output:
	// overflow: dropped 1 turn(s), 1300 -> 33 tokens (budget 835, attempt 1)
	// retry with 3 messages:
	//   system: You are a coding agent.
	//   user: [earlier turns omitted to fit the context window]
	//   user: Now add a health check.
}

// TestRecoverOverflowOrphanSweepShrinks: the history that was sent held a
// large orphan tool result (a tool message whose ToolCallID answers no call).
// The sweep removes it, so the history shrank relative to what was sent and
// the caller can retry: a nil error, not ErrCannotRecover, even though only
// one turn is left and nothing else can be dropped.
func TestRecoverOverflowOrphanSweepShrinks(t *testing.T) {
	in := []Message{
		{Role: RoleUser, Content: "list the files"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "ls", Arguments: `{}`}}},
		{Role: RoleTool, ToolCallID: "a", Content: "main.go"},
		{Role: RoleTool, ToolCallID: "zz", Content: strings.Repeat("orphaned output ", 300)},
	}
	orig := clone(in)
	sent := Estimate(in, Heuristic())
	fired := 0
	res, err := RecoverOverflow(in, errors.New("prompt is too long: 5000 tokens > 4000 maximum"), 1,
		WithOnTrim(func(Event) { fired++ }))
	if err != nil {
		t.Fatalf("err = %v; the sweep shrank the history from %d tokens, so the caller must retry", err, sent)
	}
	if res.OrphansRemoved != 1 || len(res.Messages) != 3 || res.TokensAfter >= sent {
		t.Fatalf("OrphansRemoved %d, %d messages, %d -> %d tokens; want the orphan removed",
			res.OrphansRemoved, len(res.Messages), sent, res.TokensAfter)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatal("input modified")
	}
	if fired != 1 || res.Trimmed {
		t.Fatalf("no turn was dropped (trimmed=%v), and the sweep alone must be reported once: %d events", res.Trimmed, fired)
	}
	// The swept history has no orphan left: a further rejection of it has
	// nothing to drop.
	_, err = RecoverOverflow(res.Messages, errors.New("prompt is too long: 5000 tokens > 4000 maximum"), 2)
	if !errors.Is(err, ErrCannotRecover) {
		t.Fatalf("second call: err = %v, want ErrCannotRecover", err)
	}
}

// TestRecoverOverflowZeroCostCounter: a Counter that prices every message
// at 0 (or the whole history at 1) gives no count to cut by. RecoverOverflow
// treats that as unknown and counts with Heuristic, so turns still go.
func TestRecoverOverflowZeroCostCounter(t *testing.T) {
	zero := CounterFunc(func(Message) int { return 0 })
	one := CounterFunc(func(m Message) int {
		if m.Role == RoleSystem {
			return 1
		}
		return 0
	})
	for _, tc := range []struct {
		name    string
		counter Counter
		err     error
	}{
		{"zero, sizes stated", zero, errors.New("prompt is too long: 2000 tokens > 1000 maximum")},
		{"zero, no sizes", zero, errors.New("context_length_exceeded")},
		{"one token in all", one, errors.New("prompt is too long: 2000 tokens > 1000 maximum")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := toolHistory(10)
			var events []Event
			res, err := RecoverOverflow(in, tc.err, 1, WithCounter(tc.counter),
				WithOnTrim(func(e Event) { events = append(events, e) }))
			if err != nil {
				t.Fatalf("err = %v; the history has 10 turns to drop", err)
			}
			if !res.Trimmed || res.DroppedTurns < 1 || len(events) != 1 {
				t.Fatalf("trimmed %v, dropped %d turns, %d events; want at least one turn dropped and one event",
					res.Trimmed, res.DroppedTurns, len(events))
			}
			if want := Estimate(in, Heuristic()); res.TokensBefore != want {
				t.Fatalf("TokensBefore = %d, want the Heuristic count %d", res.TokensBefore, want)
			}
			checkResult(t, in, res, true)
		})
	}
	// With one turn only, nothing can go: still ErrCannotRecover.
	_, err := RecoverOverflow(toolHistory(1), errors.New("context_length_exceeded"), 1, WithCounter(zero))
	if !errors.Is(err, ErrCannotRecover) {
		t.Fatalf("one turn: err = %v, want ErrCannotRecover", err)
	}
}

// TestRecoverOverflowHostileError: RecoverOverflow never panics on account
// of the provider error.
func TestRecoverOverflowHostileError(t *testing.T) {
	in := toolHistory(3)
	var nilSDK *sdkErr
	for _, perr := range []error{
		nilSDK,
		fmt.Errorf("call: %w", nilSDK),
		errors.Join(nilSDK, errors.New("prompt is too long: 5000 tokens > 4000 maximum")),
		&cyclic{},
		endless{},
	} {
		res, err := RecoverOverflow(in, perr, 1)
		if err != nil && !errors.Is(err, ErrNotOverflow) {
			t.Fatalf("%T: err = %v", perr, err)
		}
		if err == nil && !res.Trimmed {
			t.Fatalf("%T: classified as an overflow but nothing was dropped", perr)
		}
	}
}

// TestRecoverOverflowAimsAtTheProvider: a recovery aims at the provider's
// number; the caching options of the trim (low water, trigger), passed to
// it as the README's loop does, do not cut deeper.
func TestRecoverOverflowAimsAtTheProvider(t *testing.T) {
	msgs := longChatForCalibration()
	sent := Estimate(msgs, nil)
	providerErr := errors.New("This model's maximum context length is " + itoa(sent*3/4) + " tokens. However, your messages resulted in " +
		itoa(sent) + " tokens. Please reduce the length of the messages.")
	plain, err := RecoverOverflow(msgs, providerErr, 1)
	require.NoError(t, err)
	for _, opts := range [][]Option{
		{WithLowWater(0.7)},
		{WithTrigger(0.6), WithLowWater(0.36)},
		{WithTrigger(0.6), WithLowWater(0.36), WithElision(ElideOptions{}), WithStepTrim()},
	} {
		res, err := RecoverOverflow(msgs, providerErr, 1, opts...)
		require.NoError(t, err)
		assert.Equal(t, plain.Budget, res.Budget)
		assert.Equal(t, plain.TokensAfter, res.TokensAfter, "the same cut as without caching options")
		assert.LessOrEqual(t, res.TokensAfter, res.Budget)
	}
}

// TestRecoverOverflowNeverResends: a recovery that could only swap an
// ordinary message for the breadcrumb must not return the request it was
// given (issue 33): a message that reads as the breadcrumb but is not
// marked as one (a notice the caller's conversion did not recognise), or a
// turn smaller than the breadcrumb, in front of a latest turn over the
// window. Dropping either and inserting the breadcrumb gives the same
// request or a larger one: ErrCannotRecover, whose Result is what is left.
func TestRecoverOverflowNeverResends(t *testing.T) {
	latest := Message{Role: RoleUser, Content: strings.Repeat("the user's long paste ", 400)}
	sys := Message{Role: RoleSystem, Content: "be brief"}
	compaction := Message{Role: RoleAssistant, Kind: KindCompaction, Parts: []Part{{Type: PartText, Text: "the server's summary"}}}
	for _, tc := range []struct {
		name   string
		in     []Message
		reason string
	}{
		{"unmarked notice", []Message{sys, {Role: RoleUser, Content: BreadcrumbText}, latest},
			"dropping a turn that reads as the breadcrumb and inserting the breadcrumb resends the request"},
		{"unmarked notice after a compaction", []Message{compaction, {Role: RoleUser, Content: BreadcrumbText}, latest},
			"the same, behind a provider's compaction (anthropicv2's 2,369 → 2,369 tokens)"},
		{"turn smaller than the breadcrumb", []Message{sys, {Role: RoleUser, Content: "ok"}, {Role: RoleAssistant, Content: "ok"}, latest},
			"dropping a turn of a few tokens for a breadcrumb of more sends a larger request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for attempt := 1; attempt <= 3; attempt++ {
				sent := Estimate(tc.in, nil)
				res, err := RecoverOverflow(tc.in, errors.New("prompt is too long: 9000 tokens > 4000 maximum"), attempt)
				if !errors.Is(err, ErrCannotRecover) {
					t.Fatalf("attempt %d: %d -> %d tokens, %d messages dropped, err %v; want ErrCannotRecover (%s)",
						attempt, sent, res.TokensAfter, res.DroppedMessages, err, tc.reason)
				}
			}
		})
	}
}
