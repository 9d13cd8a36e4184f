package adapt

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/notice"
	"github.com/histrim/history/internal/optset"
)

// plain is a codec over history messages themselves, one for one, as an
// adapter's would be: it marks the notices of the options as adapters do.
var plain = &Codec[struct{}, history.Message]{
	Name: "plain", Noun: "message",
	Convert: func(_ struct{}, msgs []history.Message, opts []history.Option) (*View[history.Message], error) {
		hist := slices.Clone(msgs)
		notice.Mark(hist, opts, func(b history.Message) []history.Message { return []history.Message{b} }, nil)
		same := func(_ history.Message, m *history.Message) history.Message { return *m }
		return OneForOne(msgs, hist, func(b history.Message) history.Message { return b }, same, same), nil
	},
}

// counting returns inner, counting each time it is applied in n.
func counting(n *atomic.Int32, inner history.Option) history.Option {
	v := reflect.ValueOf(inner)
	return reflect.MakeFunc(v.Type(), func(args []reflect.Value) []reflect.Value {
		n.Add(1)
		return v.Call(args)
	}).Interface().(history.Option)
}

func turns(n int) []history.Message {
	msgs := []history.Message{{Role: history.RoleSystem, Content: "sys"}}
	for i := range n {
		msgs = append(msgs, history.Message{Role: history.RoleUser, Content: "task " + strings.Repeat("x", 40+i)},
			history.Message{Role: history.RoleAssistant, Content: "answer " + strings.Repeat("y", 40)})
	}
	return msgs
}

// TestOptionsOnce: an adapter call applies the caller's options once, for
// the notices, the pins and the trim together; a Trimmer once in its life.
func TestOptionsOnce(t *testing.T) {
	if optset.Resolve == nil {
		t.Skip("the core does not resolve options yet (optset.Resolve): each read applies them again")
	}
	var n atomic.Int32
	opt := counting(&n, history.WithPin(3))
	msgs := turns(8)
	if _, _, err := plain.Trim(struct{}{}, msgs, 200, []history.Option{opt, history.WithStepTrim()}); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("Trim applied the option %d times, want 1", got)
	}
	n.Store(0)
	tr := plain.NewTrimmer(struct{}{}, []history.Option{opt})
	for range 3 {
		if _, _, err := tr.Trim(msgs, 200); err != nil {
			t.Fatal(err)
		}
	}
	if got := n.Load(); got != 1 {
		t.Errorf("a Trimmer applied the option %d times over its construction and 3 trims, want 1", got)
	}
}

// TestTrimmerRecovers: after a recovery the Trimmer aims at no more than
// what the provider's refusal allows; Reset forgets it.
func TestTrimmerRecovers(t *testing.T) {
	msgs := turns(20)
	tr := plain.NewTrimmer(struct{}{}, nil)
	_, first, err := tr.Trim(msgs, 200)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.RecoverOverflow(msgs, errors.New("rate limited"), 1); !errors.Is(err, history.ErrNotOverflow) {
		t.Fatalf("not an overflow: %v", err)
	}
	overflow := errors.New("This model's maximum context length is 100 tokens. However, your messages resulted in 200 tokens.")
	_, rec, err := tr.RecoverOverflow(msgs, overflow, 1)
	if err != nil || rec.TokensAfter >= first.TokensAfter {
		t.Fatalf("RecoverOverflow: %d tokens after %d (%v)", rec.TokensAfter, first.TokensAfter, err)
	}
	_, next, _ := tr.Trim(msgs, 200)
	if next.Budget >= 200 || next.TokensAfter > next.Budget {
		t.Fatalf("after the recovery Trim aims at %d and sends %d; want below the budget of 200", next.Budget, next.TokensAfter)
	}
	tr.Reset()
	if _, again, _ := tr.Trim(msgs, 200); again.Budget != 200 {
		t.Fatalf("after Reset Trim aims at %d, want 200", again.Budget)
	}
}

func TestComposeFindFollow(t *testing.T) {
	prev := []int{0, -1, 2, 5, 7}
	next := []int{-1, 0, 2, 4, 9}
	if got := Compose(prev, next); !slices.Equal(got, []int{-1, 0, 2, 7, -1}) {
		t.Errorf("Compose = %v", got)
	}
	from := []int{0, -1, 5, 2}
	if got := Find(from, []int{2, 9, -1, 5}); !slices.Equal(got, []int{3, -1, -1, 2}) {
		t.Errorf("Find = %v", got)
	}
	if got := Follow(from, []int{5, 2, 9}); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("Follow = %v", got)
	}
}

func TestWithoutLead(t *testing.T) {
	res := history.Result{
		Messages: []history.Message{{Role: history.RoleSystem}, {Role: history.RoleUser}, {Role: history.RoleAssistant}, {Role: history.RoleUser}},
		Kept:     []int{0, -1, 3, 4},
		Modified: []int{2},
	}
	got := withoutLead(res, 1)
	if len(got.Messages) != 3 || !slices.Equal(got.Kept, []int{-1, 2, 3}) || !slices.Equal(got.Modified, []int{1}) {
		t.Errorf("withoutLead = %d messages, Kept %v, Modified %v", len(got.Messages), got.Kept, got.Modified)
	}
}

func TestOverhead(t *testing.T) {
	h := history.Heuristic()
	one := h.CountMessage(history.Message{Role: history.RoleSystem, Content: `{"a":1}`})
	if got := Overhead(nil, "", "null", "{}", "[]", `{"a":1}`); got != one {
		t.Errorf("Overhead = %d, want %d: empty texts cost nothing", got, one)
	}
	huge := history.CounterFunc(func(history.Message) int { return int(^uint(0) >> 2) })
	if got := Overhead(huge, "a", "b", "c", "d", "e"); got != int(^uint(0)>>1) {
		t.Errorf("Overhead saturates at %d, got %d", int(^uint(0)>>1), got)
	}
}

func TestErrors(t *testing.T) {
	sentinel := errors.New("own")
	me := Invalid("x", "item", sentinel, 3, "broken")
	if me.Error() != "history/x: invalid item at index 3: broken" || !errors.Is(me, history.ErrInvalidMessage) || !errors.Is(me, sentinel) {
		t.Errorf("MessageError %q", me.Error())
	}
	pe := Unpaired("x", "item", sentinel, 2, "c1", "no result")
	if pe.Error() != `history/x: item 2: no result (call id "c1")` || !errors.Is(pe, sentinel) {
		t.Errorf("PairingError %q", pe.Error())
	}
	if (&MessageError{Index: 1, Reason: "r"}).Error() != "history: invalid message at index 1: r" {
		t.Error("a zero MessageError names no adapter")
	}
}

// TestTrimmerClose: SummaryDone is closed when no background summary is in
// flight; one in flight is cancelled and waited for by Close; after Close
// none starts.
func TestTrimmerClose(t *testing.T) {
	started := make(chan struct{}, 8)
	sum := history.SummarizerFunc(func(ctx context.Context, _ []history.Message, _ *history.Message) (history.Message, error) {
		started <- struct{}{}
		<-ctx.Done()
		return history.Message{}, ctx.Err()
	})
	tr := plain.NewTrimmer(struct{}{}, []history.Option{history.WithSummarizer(sum, history.SummaryOptions{Background: true, MaxTokens: 40})})
	select {
	case <-tr.SummaryDone():
	default:
		t.Fatal("SummaryDone is open before any trim")
	}
	msgs := turns(12)
	if _, _, err := tr.Trim(msgs, 300); err != nil {
		t.Fatal(err)
	}
	<-started
	select {
	case <-tr.SummaryDone():
		t.Fatal("SummaryDone is closed while the summary is written")
	default:
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	<-tr.SummaryDone() // Close cancelled it and waited
	for range 3 {
		msgs = append(msgs, turns(2)[1:]...)
		if _, _, err := tr.Trim(msgs, 300); err != nil {
			t.Fatal(err)
		}
	}
	if len(started) != 0 {
		t.Error("a summary started after Close")
	}
}
