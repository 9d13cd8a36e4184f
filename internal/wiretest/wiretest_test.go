package wiretest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/histrim/history/models"
	"github.com/histrim/history/wire"
)

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestEvents(t *testing.T) {
	boom := errors.New("boom")
	var e Events
	for _, ev := range []wire.Event{
		{Kind: wire.EventRequest, Trimmed: true},
		{Kind: wire.EventRequest, Trimmed: true, Overflows: 2, Recovered: 2},
		{Kind: wire.EventRequest, Forwarded: true, Err: boom},
		{Kind: wire.EventTruncation, Trimmed: true, Forwarded: true, Overflows: 5, Recovered: 5, Err: boom}, // not a request: not counted
	} {
		e.On(ev)
	}
	if e.Requests != 3 || e.Trimmed != 2 || e.Forwarded != 1 || e.Overflows != 2 || e.Recovered != 2 || len(e.Errs) != 1 || e.Errs[0] != boom {
		t.Fatalf("counts %+v", &e)
	}
	if got, want := e.String(), "transport: 3 requests, 2 trimmed, 2 refused for length, 2 resent"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestEventsCheck(t *testing.T) {
	cases := []struct {
		reason     string
		e          *Events
		minTrimmed int
		refused    int
		fails      int
	}{
		{"trimmed enough, every refusal resent and seen by the server", &Events{Trimmed: 10, Overflows: 1, Recovered: 1}, 10, 1, 0},
		{"a request forwarded untrimmed", &Events{Trimmed: 10, Forwarded: 1}, 10, 0, 1},
		{"too few trimmed", &Events{Trimmed: 9}, 10, 0, 1},
		{"a refusal not resent", &Events{Trimmed: 10, Overflows: 2, Recovered: 1}, 10, 2, 1},
		{"the server refused more than the Transport saw", &Events{Trimmed: 10, Overflows: 1, Recovered: 1}, 10, 2, 1},
		{"both wrong", &Events{Trimmed: 0, Overflows: 1}, 1, 0, 2},
	}
	for _, c := range cases {
		r := &recorder{}
		c.e.Check(r, c.minTrimmed, c.refused)
		if len(r.errs) != c.fails {
			t.Errorf("%s: %d failures %q, want %d", c.reason, len(r.errs), r.errs, c.fails)
		}
	}
}

func TestTransport(t *testing.T) {
	var e Events
	tr := Transport(&e, "local", "vllm", 16_000)
	m, err := tr.Models(context.Background(), "local")
	if err != nil || m != (models.Model{Name: "local", Provider: "vllm", Window: 16_000}) {
		t.Errorf("Models(local) = %+v, %v", m, err)
	}
	if _, err := tr.Models(context.Background(), "other"); !errors.Is(err, models.ErrUnknownModel) {
		t.Errorf("Models(other): %v, want models.ErrUnknownModel", err)
	}
	tr.OnEvent(wire.Event{Kind: wire.EventRequest, Trimmed: true})
	if e.Requests != 1 || e.Trimmed != 1 || tr.Logger == nil {
		t.Errorf("the Transport's events do not reach Events (%+v), or no logger", &e)
	}
}
