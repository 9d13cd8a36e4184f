package adaptertest

// The hostile-input suite every framework module runs (issue 33): inputs
// no runtime should send, and that a runtime will send anyway, through
// every entry point of the module: a typed error or a valid output, never
// a panic.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adapt"
	"github.com/histrim/history/internal/errtree"
	"github.com/histrim/history/internal/race"
)

// Hostile describes a module to the hostile-input suite (Hostile.Run and
// Hostile.Fuzz), for conversations of native messages of type N.
//
// Trim, ToHistory, Text, Call and Results are required; the rest is
// optional.
type Hostile[N any] struct {
	// Trim is the module's trim: its Trim, or its framework hook's trim
	// with the options given (trpc-agent-go's Strategy). The Result may
	// be the zero Result when the hook gives none.
	Trim func(msgs []N, budget int, opts ...history.Option) ([]N, history.Result, error)
	// RecoverOverflow is the module's RecoverOverflow.
	RecoverOverflow func(msgs []N, providerErr error, attempt int, opts ...history.Option) ([]N, history.Result, error)
	// ToHistory is the module's ToHistory.
	ToHistory func(msgs []N) ([]history.Message, error)
	// Validate is the provider's rules (the module's Validate, or its
	// adapter's); nil checks the output's pairing with
	// history.SweepOrphans instead.
	Validate func(msgs []N) error
	// Hooks are the framework's own entry points, by name: each is given
	// msgs and a budget, runs them through the framework as the
	// documentation installs it (a middleware, callbacks, a wrapped
	// model, a strategy), and returns what reached the model (nil when
	// nothing did) and the error the hook returned or reported (OnError).
	Hooks map[string]func(msgs []N, budget int) (sent []N, err error)
	// NonEmpty says that the provider refuses a request without messages
	// (Gemini: "contents is not specified"): a hook given messages must
	// never pass on none.
	NonEmpty bool

	// Text returns a message of role (user, assistant or system) holding
	// text as its only content.
	Text func(role history.Role, text string) N
	// Call returns an assistant message calling the tool "grep" once per
	// id, in order, ids repeated as given.
	Call func(ids ...string) N
	// Results returns what answers ids, in order: the tool message or
	// messages, or the user content of function responses, the SDK's
	// shape.
	Results func(ids ...string) []N

	// Cases are the module's own hostile conversations: nil and typed-nil
	// messages and parts, payloads and outputs, whatever its SDK's types
	// let a caller build.
	Cases []HostileCase[N]
	// Errors are the module's own sentinels (its ErrUnpaired, ...), which
	// the suite accepts beside the core's.
	Errors []error
	// ProviderErrors are more errors RecoverOverflow is given beside
	// HostileErrors: the SDK's own error types, typed nil.
	ProviderErrors []error
}

// HostileCase is one hostile conversation.
type HostileCase[N any] struct {
	// Name says what makes it hostile.
	Name string
	// Msgs is the conversation.
	Msgs []N
}

// HostileBudgets are the budgets every hostile conversation is trimmed
// to: the extremes of int, zero, and the small and ordinary.
var HostileBudgets = []int{math.MinInt, -1, 0, 1, 7, 300, 100_000, math.MaxInt}

// HostileAttempts are the attempts RecoverOverflow is called with.
var HostileAttempts = []int{math.MinInt, 0, 1, 2, math.MaxInt}

// HostileOptions returns the option sets of the suite: none; elision of
// every result, arguments cleared, with step trimming; a counter that
// counts every message at math.MaxInt, and one at math.MinInt; an
// overhead of math.MaxInt.
func HostileOptions() [][]history.Option {
	return [][]history.Option{
		nil,
		{history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1, ClearArguments: 1}), history.WithStepTrim()},
		{history.WithCounter(history.CounterFunc(func(history.Message) int { return math.MaxInt })), history.WithStepTrim()},
		{history.WithCounter(history.CounterFunc(func(history.Message) int { return math.MinInt }))},
		{history.WithOverhead(math.MaxInt)},
	}
}

// panicky is an error whose methods panic: a typed nil whose methods
// dereference their receiver.
type panicky struct{ msg *string }

func (p *panicky) Error() string { return *p.msg }

// HostileErrors are the provider errors RecoverOverflow is given: an
// overflow with both sizes, with sizes at math.MaxInt and beyond what an
// int holds, a typed nil whose Error panics (alone and beside an
// overflow), and nil.
func HostileErrors() []error {
	var typedNil *panicky
	return []error{
		OverflowText(100, 200),
		OverflowText(math.MaxInt, math.MaxInt),
		providerError("This model's maximum context length is 99999999999999999999999999 tokens. However, your messages resulted in 999999999999999999999999999999 tokens."),
		providerError("The input token count (-5) exceeds the maximum number of tokens allowed (0)."),
		typedNil,
		errors.Join(typedNil, OverflowText(10, 20)),
		nil,
	}
}

// providerError is an error reading text, a provider's own words.
func providerError(text string) error { return errors.New(text) }

// HugePNG returns the header of a PNG image that claims to be
// math.MaxInt32 pixels square: an image part's hostile size.
func HugePNG() []byte {
	b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	b = binary.BigEndian.AppendUint32(b, math.MaxInt32)
	b = binary.BigEndian.AppendUint32(b, math.MaxInt32)
	b = append(b, 8, 0, 0, 0, 0)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[12:]))
}

// Binary is every byte value once, from 0 to 255: text that is not text.
var Binary = func() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}()

// InvalidUTF8 is text that is not UTF-8: a lone continuation byte, a
// truncated sequence, an overlong encoding, a surrogate, bytes no UTF-8
// holds.
const InvalidUTF8 = "a\x80b\xe2\x82c\xc0\xafd\xed\xa0\x80e\xff\xfe"

// shared returns the hostile conversations the suite builds with h's
// builders: empty ones, text that is not text, huge and many messages,
// duplicate tool ids, orphans of every kind, and messages of one role
// only.
func (h *Hostile[N]) shared() []HostileCase[N] {
	u := func(s string) N { return h.Text(history.RoleUser, s) }
	a := func(s string) N { return h.Text(history.RoleAssistant, s) }
	sys := h.Text(history.RoleSystem, "sys")
	steps := func(pre []N, ids ...string) []N {
		out := append([]N(nil), pre...)
		out = append(out, h.Call(ids...))
		return append(out, h.Results(ids...)...)
	}
	cat := func(parts ...[]N) []N {
		var out []N
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	turns, parallel := 10_000, 2000
	if race.Enabled { // the plain run has the large ones; see Budgets
		turns, parallel = 1000, 200
	}
	many := make([]N, 0, 2*turns+1)
	many = append(many, sys)
	for i := range turns {
		many = append(many, u("q"+strconv.Itoa(i)), a("a"))
	}
	calls := make([]string, parallel)
	for i := range calls {
		calls[i] = "c" + strconv.Itoa(i)
	}
	huge := strings.Repeat("word ", 200_000)
	return []HostileCase[N]{
		{"nil conversation", nil},
		{"empty conversation", []N{}},
		{"empty texts", []N{sys, u(""), a(""), u("")}},
		{"binary text", []N{sys, u(Binary), a(Binary), u(Binary)}},
		{"invalid UTF-8", []N{u(InvalidUTF8), a(InvalidUTF8), u(InvalidUTF8)}},
		{"NUL bytes only", []N{u("\x00\x00\x00")}},
		{"a megabyte of text in the latest turn", []N{sys, u("old"), a("old"), u(huge)}},
		{"a megabyte of text in an old turn", []N{sys, u(huge), a(huge), u("latest")}},
		{"many messages", many},
		{"many parallel calls", steps([]N{u("go")}, calls...)},
		{"only a system message", []N{sys}},
		{"only an assistant message", []N{a("hello")}},
		{"only assistant messages", []N{a("one"), a("two")}},
		{"only results", h.Results("x")},
		{"only a call", []N{h.Call("x")}},
		{"a call before any user message", steps(nil, "x")},
		{"duplicate ids in one call message", steps([]N{u("go")}, "d", "d")},
		{"duplicate ids across steps", cat(steps([]N{u("go")}, "d"), steps(nil, "d"), []N{a("done")})},
		{"duplicate ids across turns", cat(steps([]N{u("one")}, "d"), steps([]N{u("two")}, "d"))},
		{"empty ids", steps([]N{u("go")}, "", "")},
		{"binary ids", steps([]N{u("go")}, Binary, InvalidUTF8)},
		{"a result answering nothing", cat([]N{u("go")}, h.Results("stray"), []N{a("done")})},
		{"a call answered by nothing, mid-conversation", []N{u("go"), h.Call("lost"), u("next"), a("done")}},
		{"a call answered by nothing, at the end", []N{u("go"), h.Call("lost")}},
		{"results answered twice", cat([]N{u("go"), h.Call("t")}, h.Results("t"), h.Results("t"))},
		{"results before their call", cat([]N{u("go")}, h.Results("r"), []N{h.Call("r")})},
		{"results in the wrong order", cat([]N{u("go"), h.Call("p", "q")}, h.Results("q", "p"))},
	}
}

// Run runs every hostile conversation (the shared ones and h.Cases)
// through every entry point of the module: ToHistory and Validate; Trim
// at HostileBudgets with each of HostileOptions; RecoverOverflow with
// each option set, each of HostileErrors and attempts from math.MinInt
// to math.MaxInt; each hook at a few budgets. Large conversations go
// through fewer of them.
func (h *Hostile[N]) Run(t *testing.T) {
	t.Helper()
	for _, c := range append(h.shared(), h.Cases...) {
		t.Run(c.Name, func(t *testing.T) {
			budgets, sets, perrs := HostileBudgets, HostileOptions(), append(HostileErrors(), h.ProviderErrors...)
			hooks, attempts := []int{math.MinInt, 0, 1, 300, math.MaxInt}, HostileAttempts
			if len(c.Msgs) > 1000 || h.size(c.Msgs) > 100_000 {
				// A few trims show what a large conversation does.
				budgets, sets, perrs, hooks, attempts = []int{1, 300, math.MaxInt}, sets[:2], perrs[:2], hooks[3:4], attempts[2:3]
			}
			h.convert(t, "", c.Msgs)
			for o, opts := range sets {
				for _, budget := range budgets {
					h.trim(t, fmt.Sprintf("options %d, budget %d", o, budget), c.Msgs, budget, opts)
				}
				h.recover(t, fmt.Sprintf("options %d", o), c.Msgs, perrs, attempts, opts)
			}
			for _, budget := range hooks {
				h.hooks(t, c.Msgs, budget)
			}
		})
	}
}

// size returns what msgs hold, roughly: the length of their conversion's
// texts, or 0 when they do not convert (or ToHistory panics, which
// convert reports).
func (h *Hostile[N]) size(msgs []N) (n int) {
	defer func() { _ = recover() }() // convert reports a panic
	hist, err := h.ToHistory(msgs)
	if err != nil {
		return 0
	}
	for _, m := range hist {
		n += len(m.Content)
		for _, p := range m.Parts {
			n += len(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	}
	return n
}

// Fuzz is the suite's fuzz target: a conversation built from the
// fuzzer's bytes out of the shared shapes and h.Cases (each byte picks a
// user or assistant text, a text of the next bytes as they are, a call or
// results with ids of one letter, so that they repeat and go astray, or
// the messages of a case), trimmed at budget with the option set o
// selects, through every entry point.
func (h *Hostile[N]) Fuzz(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4}, int64(300), uint8(0))
	f.Add([]byte{3, 'a', 4, 'b', 7, 0, 1}, int64(math.MaxInt64), uint8(1))
	f.Add([]byte{6, 0xff, 0xfe, 0x80, 5, 0, 0}, int64(math.MinInt64), uint8(2))
	f.Add([]byte{4, 'a', 3, 'a', 3, 'a', 4, 'a', 1, 0}, int64(1), uint8(3))
	sets := HostileOptions()
	f.Fuzz(func(t *testing.T, data []byte, budget int64, o uint8) {
		msgs := h.build(data)
		opts := sets[int(o)%len(sets)]
		h.convert(t, "", msgs)
		h.trim(t, "", msgs, int(budget), opts)
		h.recover(t, "", msgs, append(HostileErrors(), h.ProviderErrors...), HostileAttempts, opts)
		h.hooks(t, msgs, int(budget))
	})
}

// build returns the conversation data describes (see Fuzz).
func (h *Hostile[N]) build(data []byte) []N {
	var msgs []N
	next := func(i *int) byte {
		if *i+1 >= len(data) {
			return 0
		}
		*i++
		return data[*i]
	}
	for i := 0; i < len(data); i++ {
		switch data[i] % 8 {
		case 0:
			msgs = append(msgs, h.Text(history.RoleUser, "task "+strconv.Itoa(i)))
		case 1:
			msgs = append(msgs, h.Text(history.RoleAssistant, "answer"))
		case 2:
			msgs = append(msgs, h.Text(history.RoleSystem, "sys"))
		case 3:
			msgs = append(msgs, h.Call(string(rune('a'+next(&i)%4))))
		case 4:
			msgs = append(msgs, h.Results(string(rune('a'+next(&i)%4)))...)
		case 5:
			if len(h.Cases) > 0 {
				msgs = append(msgs, h.Cases[int(next(&i))%len(h.Cases)].Msgs...)
			}
		case 6:
			n := int(next(&i)) % 16
			end := min(i+1+n, len(data))
			msgs = append(msgs, h.Text(history.RoleUser, string(data[i+1:end])))
			i = end - 1
		default:
			msgs = append(msgs, h.Call(string(rune('a'+next(&i)%4)), string(rune('a'+next(&i)%4))))
		}
	}
	return msgs
}

// convert runs msgs through ToHistory and Validate: neither may panic,
// each error is typed (Typed).
func (h *Hostile[N]) convert(t *testing.T, where string, msgs []N) {
	t.Helper()
	call(t, where+"ToHistory", func() {
		_, err := h.ToHistory(msgs)
		h.typed(t, where+"ToHistory", err)
	})
	if h.Validate != nil {
		call(t, where+"Validate", func() { h.typed(t, where+"Validate", h.Validate(msgs)) })
	}
}

// trim runs msgs through Trim at budget with opts: it may not panic, its
// error is typed, and an output that comes without an error, or with a
// *history.BudgetError, converts and keeps the provider's rules (usable).
func (h *Hostile[N]) trim(t *testing.T, where string, msgs []N, budget int, opts []history.Option) {
	t.Helper()
	call(t, where+": Trim", func() {
		out, _, err := h.Trim(msgs, budget, opts...)
		h.typed(t, where+": Trim", err)
		h.usable(t, where+": Trim", out, err)
	})
}

// recover runs msgs through RecoverOverflow with opts, each of perrs and
// each of attempts, as trim runs them through Trim.
func (h *Hostile[N]) recover(t *testing.T, where string, msgs []N, perrs []error, attempts []int, opts []history.Option) {
	t.Helper()
	if h.RecoverOverflow == nil {
		return
	}
	for e, perr := range perrs {
		for _, attempt := range attempts {
			name := fmt.Sprintf("%s: RecoverOverflow (error %d, attempt %d)", where, e, attempt)
			call(t, name, func() {
				out, _, err := h.RecoverOverflow(msgs, perr, attempt, opts...)
				h.typed(t, name, err)
				if err == nil {
					h.usable(t, name, out, err)
				}
			})
		}
	}
}

// hooks runs msgs through every hook at budget: none may panic; an error
// is typed; what reached the model with no error converts and keeps the
// provider's rules; with NonEmpty, a hook given messages passes some on.
func (h *Hostile[N]) hooks(t *testing.T, msgs []N, budget int) {
	t.Helper()
	for name, hook := range h.Hooks {
		where := fmt.Sprintf("%s (budget %d)", name, budget)
		call(t, where, func() {
			sent, err := hook(msgs, budget)
			h.typed(t, where, err)
			if h.NonEmpty && len(msgs) > 0 && sent != nil && len(sent) == 0 {
				t.Errorf("%s: %d messages given, none passed on to the model", where, len(msgs))
			}
			if err == nil && len(sent) > 0 {
				h.usable(t, where, sent, nil)
			}
		})
	}
}

// usable checks out, an output given with err: when err is nil or a
// *history.BudgetError, out converts and keeps the provider's rules
// (unless it is empty).
func (h *Hostile[N]) usable(t *testing.T, where string, out []N, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, history.ErrLatestTurnTooLarge) || len(out) == 0 {
		return
	}
	hist, cerr := h.ToHistory(out)
	if cerr != nil {
		t.Errorf("%s: the output does not convert: %v", where, cerr)
		return
	}
	if h.Validate != nil {
		if verr := h.Validate(out); verr != nil {
			t.Errorf("%s: the output breaks the provider's rules: %v", where, verr)
		}
	} else if _, rep := history.SweepOrphans(hist); rep.Total() > 0 {
		t.Errorf("%s: the output holds %d orphans", where, rep.Total())
	}
}

// typed fails t unless err is nil or Typed.
func (h *Hostile[N]) typed(t *testing.T, where string, err error) {
	t.Helper()
	if !Typed(err, h.Errors...) {
		t.Errorf("%s: untyped error %T: %v", where, err, err)
	}
}

// Typed reports whether err is nil or an error a caller can act on: its
// message starts with "history", and its tree holds one of the core's
// sentinels or of own, or one of the core's or the adapters' error types.
// The tree is read without trusting it (errtree): a provider's error that
// the library wraps may be a typed nil whose methods panic, which
// errors.Is and errors.As would call.
func Typed(err error, own ...error) bool {
	if err == nil {
		return true
	}
	if msg, ok := errtree.Error(err); !ok || !strings.HasPrefix(msg, "history") {
		return false
	}
	sentinels := append([]error{history.ErrInvalidBudget, history.ErrInvalidMessage, history.ErrInvalidOption,
		history.ErrLatestTurnTooLarge, history.ErrNotOverflow, history.ErrCannotRecover}, own...)
	found := false
	errtree.Walk(err, 1<<10, func(e error) bool {
		switch e.(type) {
		case *history.OptionError, *history.MessageError, *history.BudgetError, *history.RecoverError,
			*adapt.MessageError, *adapt.PairingError:
			found = true
		}
		found = found || reflect.TypeOf(e).Comparable() && slices.Contains(sentinels, e)
		return found
	})
	return found
}

// call runs f, failing t with the stack if it panics.
func call(t *testing.T, where string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panics: %v\n%s", where, r, debug.Stack())
		}
	}()
	f()
}
