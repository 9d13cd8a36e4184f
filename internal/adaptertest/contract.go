package adaptertest

// The contract every adapter keeps (docs/adapters.md, "The contract"),
// checked by one test for all of them from a small description of each.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
)

// Trimmer is an adapter's stateful trimmer, for native messages of type N.
type Trimmer[N any] interface {
	Trim(transcript []N, budget int) ([]N, history.Result, error)
	RecoverOverflow(transcript []N, providerErr error, attempt int) ([]N, history.Result, error)
	MarshalBinary() ([]byte, error)
	UnmarshalBinary(data []byte) error
}

// Contract describes an adapter to Run, for native messages of type N (a
// system prompt the adapter takes separately is bound in the functions).
type Contract[N any] struct {
	// The adapter's entry points.
	Trim            func(msgs []N, budget int, opts ...history.Option) ([]N, history.Result, error)
	RecoverOverflow func(msgs []N, providerErr error, attempt int, opts ...history.Option) ([]N, history.Result, error)
	Positions       func(msgs []N, res history.Result, i ...int) []int
	NewTrimmer      func(opts ...history.Option) Trimmer[N]
	// NewConversations returns the adapter's Conversations (a separate
	// system prompt bound as in NewTrimmer, see BindSystem).
	NewConversations func(store history.StateStore, opts ...history.Option) Conversations[N]
	Validate         func(msgs []N) error
	// ToHistory converts msgs alone (no separate system prompt): what a
	// Result's Kept indexes.
	ToHistory func(msgs []N) ([]history.Message, error)
	// ErrUnpaired is the adapter's sentinel of pairing violations.
	ErrUnpaired error

	// Conversation returns ten turns or more: a task, an assistant message
	// calling a tool, its result, an answer; Pinnable is the index of a
	// task in the middle, Calls of a message with tool calls, Results of
	// one with tool results.
	Conversation             func() []N
	Pinnable, Calls, Results int
	// Invalid is a conversation whose message Bad does not convert.
	Invalid []N
	Bad     int
	// Unpaired is a conversation Validate rejects: a call at index
	// UnpairedAt, with id UnpairedID, has no result.
	Unpaired   []N
	UnpairedAt int
	UnpairedID string
	// Overflows are errors the adapter's SDK returns for a request that
	// does not fit the window; NotOverflows errors it returns for other
	// refusals (a rate limit).
	Overflows, NotOverflows []error
	// Task returns a user message holding text, as its user wrote it.
	Task func(text string) N
	// Compaction, where the provider compacts a conversation on its side,
	// returns a message holding one compaction (an Anthropic compaction
	// block, a Responses compaction item) whose summary is text; nil where
	// it does not.
	Compaction func(text string) N
}

// OverflowText is an overflow as OpenAI-style providers state it, with
// both sizes.
func OverflowText(limit, used int) error {
	return errors.New("This model's maximum context length is " + strconv.Itoa(limit) + " tokens. However, your messages resulted in " +
		strconv.Itoa(used) + " tokens. Please reduce the length of the messages.")
}

// Run checks the adapter against the contract: errors, Kept, pins and
// positions, recovery, the stateful trimmer, its saved state, and
// Conversations on two replicas.
func (c *Contract[N]) Run(t *testing.T) {
	t.Run("errors", c.errors)
	t.Run("kept", c.kept)
	t.Run("pins", c.pins)
	t.Run("recovery", c.recovery)
	t.Run("trimmer", c.trimmer)
	t.Run("state", c.state)
	t.Run("conversations", c.conversations)
	t.Run("retry", c.retry)
}

// size returns what the conversion of msgs counts.
func (c *Contract[N]) size(t *testing.T, msgs []N) int {
	t.Helper()
	hist, err := c.ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return history.Estimate(hist, nil)
}

// errors: a message that does not convert is a *MessageError wrapping
// history.ErrInvalidMessage, with no messages, from every entry point; a
// pairing violation a *PairingError wrapping ErrUnpaired, with the call
// id.
func (c *Contract[N]) errors(t *testing.T) {
	calls := map[string]func() ([]N, error){
		"Trim": func() ([]N, error) { out, _, err := c.Trim(c.Invalid, 1000); return out, err },
		"RecoverOverflow": func() ([]N, error) {
			out, _, err := c.RecoverOverflow(c.Invalid, OverflowText(100, 200), 1)
			return out, err
		},
		"Trimmer": func() ([]N, error) { out, _, err := c.NewTrimmer().Trim(c.Invalid, 1000); return out, err },
		"ToHistory": func() ([]N, error) {
			_, err := c.ToHistory(c.Invalid)
			return nil, err
		},
	}
	for name, call := range calls {
		out, err := call()
		var me *adapt.MessageError
		if !errors.As(err, &me) || !errors.Is(err, history.ErrInvalidMessage) || me.Index != c.Bad || out != nil {
			t.Errorf("%s: %d messages, %v; want none and a *MessageError at %d wrapping history.ErrInvalidMessage", name, len(out), err, c.Bad)
		}
	}
	err := c.Validate(c.Unpaired)
	var pe *adapt.PairingError
	if !errors.As(err, &pe) || !errors.Is(err, c.ErrUnpaired) || pe.Index != c.UnpairedAt || pe.ID != c.UnpairedID {
		t.Errorf("Validate = %v; want a *PairingError at %d for %q wrapping %v", err, c.UnpairedAt, c.UnpairedID, c.ErrUnpaired)
	}
}

// kept: Result.Kept indexes the conversion of the native messages given
// (a separate system prompt is not in it), and Messages follows the
// output.
func (c *Contract[N]) kept(t *testing.T) {
	msgs := c.Conversation()
	hist, err := c.ToHistory(msgs)
	if err != nil {
		t.Fatal(err)
	}
	out, res, err := c.Trim(msgs, c.size(t, msgs)/2)
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.ToHistory(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kept) != len(res.Messages) || len(back) != len(res.Messages) || !res.Trimmed {
		t.Fatalf("%d Kept, %d Messages, %d converted output messages, Trimmed %v; want a trim whose Messages follow the output", len(res.Kept), len(res.Messages), len(back), res.Trimmed)
	}
	for j, k := range res.Kept {
		if k >= len(hist) || (k >= 0 && (hist[k].Role != res.Messages[j].Role || hist[k].Content != res.Messages[j].Content)) {
			t.Fatalf("Kept[%d] = %d: not the conversion's message %+v", j, k, res.Messages[j])
		}
	}
}

// pins: WithPin takes native indices; a pinned message outlives a trim
// that drops its turn, Positions finds it in the output, and pinning it
// there holds on the next trim of the output; a pin on tool calls,
// results or beyond the slice is the core's *history.OptionError.
func (c *Contract[N]) pins(t *testing.T) {
	msgs := c.Conversation()
	want := JSON(t, msgs[c.Pinnable])
	budget := c.size(t, msgs) / 3
	out, res, err := c.Trim(msgs, budget, history.WithPin(c.Pinnable))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Positions(msgs, res, c.Pinnable)
	if len(p) != 1 || p[0] < 0 || JSON(t, out[p[0]]) != want || res.DroppedTurns == 0 {
		t.Fatalf("Positions = %v in %d messages (%d turns dropped); want the pinned message, the caller's", p, len(out), res.DroppedTurns)
	}
	again, res2, err := c.Trim(out, budget*2/3, history.WithPin(p[0]))
	if err != nil {
		t.Fatalf("trimming the output pinned at Positions: %v", err)
	}
	if q := c.Positions(out, res2, p[0]); q[0] < 0 || JSON(t, again[q[0]]) != want {
		t.Fatalf("the second trim lost the pinned message (Positions %v)", q)
	}
	rec, res3, err := c.RecoverOverflow(out, OverflowText(budget/2, budget), 1, history.WithPin(p[0]))
	if err != nil && !errors.Is(err, history.ErrCannotRecover) {
		t.Fatalf("RecoverOverflow pinned at Positions: %v", err)
	}
	if q := c.Positions(out, res3, p[0]); q[0] < 0 || JSON(t, rec[q[0]]) != want {
		t.Fatalf("the recovery lost the pinned message (Positions %v)", q)
	}
	for _, i := range []int{c.Calls, c.Results, len(msgs)} {
		_, _, err := c.Trim(msgs, budget, history.WithPin(i))
		var oe *history.OptionError
		if !errors.As(err, &oe) || oe.Option != "WithPin" {
			t.Errorf("pin %d: %v; want the *history.OptionError of WithPin", i, err)
		}
	}
}

// recovery: RecoverOverflow reads every overflow the SDK returns, as the
// adapter's classifier does, and trims below what failed; any other error
// is history.ErrNotOverflow with the messages themselves.
func (c *Contract[N]) recovery(t *testing.T) {
	msgs := c.Conversation()
	for _, perr := range c.Overflows {
		out, res, err := c.RecoverOverflow(msgs, perr, 1)
		if err != nil || !res.Trimmed || len(out) >= len(msgs) {
			t.Errorf("RecoverOverflow(%v): %d of %d messages, %v; want fewer and no error", perr, len(out), len(msgs), err)
		}
	}
	for _, perr := range append(c.NotOverflows, nil) {
		out, _, err := c.RecoverOverflow(msgs, perr, 1)
		if !errors.Is(err, history.ErrNotOverflow) || !SameArray(out, msgs) {
			t.Errorf("RecoverOverflow(%v): %v; want history.ErrNotOverflow and the messages themselves", perr, err)
		}
	}
}

// trimmer: the stateful trimmer trims the transcript as Trim does, and its
// RecoverOverflow trims what it sent further, or says it is no overflow.
func (c *Contract[N]) trimmer(t *testing.T) {
	msgs := c.Conversation()
	budget := c.size(t, msgs) / 2
	tr := c.NewTrimmer(history.WithStepTrim())
	out, res, err := tr.Trim(msgs, budget)
	want, _, _ := c.Trim(msgs, budget, history.WithStepTrim())
	if err != nil || JSON(t, out) != JSON(t, want) {
		t.Fatalf("Trimmer.Trim: %v; want what Trim returns", err)
	}
	rec, res2, err := tr.RecoverOverflow(msgs, c.Overflows[0], 1)
	if err != nil || res2.TokensAfter >= res.TokensAfter || len(rec) >= len(out) {
		t.Fatalf("Trimmer.RecoverOverflow: %d of %d messages, %d of %d tokens, %v; want fewer", len(rec), len(out), res2.TokensAfter, res.TokensAfter, err)
	}
	if _, _, err := tr.RecoverOverflow(msgs, c.NotOverflows[0], 1); !errors.Is(err, history.ErrNotOverflow) {
		t.Fatalf("Trimmer.RecoverOverflow of no overflow: %v; want history.ErrNotOverflow", err)
	}
	next, res3, err := tr.Trim(msgs, budget)
	if err != nil || res3.TokensAfter > res.TokensAfter || len(next) == 0 {
		t.Fatalf("Trimmer.Trim after a recovery: %d tokens (%v); want no more than before it, %d", res3.TokensAfter, err, res.TokensAfter)
	}
}

// retry: a retry never resends what the provider refused. A conversation
// with, where the adapter has one, a compaction first, a pinned task, and
// a latest turn over the window is trimmed, by Trim and by the stateful
// trimmer with a summarizer, to requests with the compaction, a summary or
// a notice and the pin in front of the latest turn. The provider refuses
// each, and every recovery that follows, attempt after attempt (the
// stateless RecoverOverflow of what was sent, with the pin at its
// position there; the trimmer's RecoverOverflow of the transcript),
// either returns a request strictly smaller than the one refused (its
// native messages: not the same, fewer bytes of JSON, fewer tokens) or
// history.ErrCannotRecover, which ends the retries.
func (c *Contract[N]) retry(t *testing.T) {
	var msgs []N
	pin := c.Pinnable
	if c.Compaction != nil {
		msgs = append(msgs, c.Compaction("The server's summary of the conversation so far: "+strings.Repeat("the user asked, the agent answered; ", 20)))
		pin++
	}
	msgs = append(msgs, c.Conversation()...)
	latest := c.Task("the latest task: " + strings.Repeat("a long paste of the user's logs to read. ", 120))
	msgs = append(msgs, latest)
	summarizer := history.WithSummarizer(history.SummarizerFunc(func(context.Context, []history.Message, *history.Message) (history.Message, error) {
		return history.Message{Role: history.RoleUser, Content: "[Summary of the earlier turns] " + strings.Repeat("the user asked for a parser; ", 12)}, nil
	}), history.SummaryOptions{MaxTokens: 200})
	// Over the latest turn, the trims keep some turns; under it, only
	// what stands in front of it.
	for _, budget := range []int{c.size(t, msgs) * 3 / 4, c.size(t, []N{latest}) * 2 / 3} {
		name := "budget " + strconv.Itoa(budget)
		trimmed, res, err := c.Trim(msgs, budget, history.WithPin(pin), history.WithStepTrim())
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatal(err)
		}
		t.Run(name+"/Trim", func(t *testing.T) { c.recoverSent(t, msgs, trimmed, res, pin) })
		tr := c.NewTrimmer(history.WithPin(pin), history.WithStepTrim(), summarizer)
		sent, res, err := tr.Trim(msgs, budget)
		if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) {
			t.Fatal(err)
		}
		t.Run(name+"/Trimmer", func(t *testing.T) { c.recoverSent(t, msgs, sent, res, pin) })
		t.Run(name+"/Trimmer.RecoverOverflow", func(t *testing.T) {
			for attempt := 1; ; attempt++ {
				if attempt > len(msgs)+1 {
					t.Fatalf("attempt %d: RecoverOverflow still returns requests", attempt)
				}
				out, _, err := tr.RecoverOverflow(msgs, c.Overflows[0], attempt)
				if !c.smaller(t, attempt, sent, out, err) {
					break
				}
				sent = out
			}
		})
	}
}

// recoverSent recovers with the stateless RecoverOverflow from the refusal
// of sent, a trim of msgs that returned res with msgs[pin] pinned, then
// from the refusal of each request it returns, until it returns
// history.ErrCannotRecover; each must be smaller than the one before.
func (c *Contract[N]) recoverSent(t *testing.T, msgs, sent []N, res history.Result, pin int) {
	p := c.Positions(msgs, res, pin)[0]
	if p < 0 {
		t.Fatalf("the pinned message is not in the trim's output")
	}
	for attempt := 1; ; attempt++ {
		if attempt > len(msgs)+1 {
			t.Fatalf("attempt %d: RecoverOverflow still returns requests", attempt)
		}
		out, res, err := c.RecoverOverflow(sent, c.Overflows[0], attempt, history.WithPin(p), history.WithStepTrim())
		if !c.smaller(t, attempt, sent, out, err) {
			return
		}
		p = c.Positions(sent, res, p)[0]
		sent = out
	}
}

// smaller checks a recovery of the refused request sent: out and err are
// what it returned. It reports whether the caller should retry with out:
// false on history.ErrCannotRecover, true when out is strictly smaller
// than sent; anything else fails t.
func (c *Contract[N]) smaller(t *testing.T, attempt int, sent, out []N, err error) bool {
	t.Helper()
	if errors.Is(err, history.ErrCannotRecover) {
		return false
	}
	if err != nil {
		t.Fatalf("attempt %d: %v", attempt, err)
	}
	before, after := JSON(t, sent), JSON(t, out)
	if after == before || len(after) >= len(before) || c.size(t, out) >= c.size(t, sent) {
		t.Fatalf("attempt %d: RecoverOverflow returned a request no smaller than the one refused (%d tokens, %d bytes -> %d tokens, %d bytes; same: %v); want a smaller one or history.ErrCannotRecover",
			attempt, c.size(t, sent), len(before), c.size(t, out), len(after), after == before)
	}
	return true
}
