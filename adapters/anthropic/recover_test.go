package anthropic

import (
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
)

// apiError stands for the *anthropic.Error the client returns for an error
// answer: the status in its text and StatusCode, the body in RawJSON (the
// loop test drives the real client).
type apiError struct {
	status int
	body   string
}

func (e *apiError) Error() string {
	return `POST "https://api.anthropic.com/v1/messages": ` + strconv.Itoa(e.status) + " " + http.StatusText(e.status) + " " + e.body
}
func (e *apiError) StatusCode() int { return e.status }
func (e *apiError) RawJSON() string { return e.body }

// overflowErr is the Messages API's answer to a prompt of used tokens over
// a window of limit.
func overflowErr(used, limit int) error {
	return &apiError{http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: ` +
		strconv.Itoa(used) + ` tokens > ` + strconv.Itoa(limit) + ` maximum"},"request_id":"req_011CTest"}`}
}

func TestRecoverOverflow(t *testing.T) {
	system, msgs := pinRequest()
	hist, _ := ToHistory(system, msgs)
	sent := history.Estimate(hist, nil) // what the core counts of the rejected request
	latest := msgs[10:]
	stray := append(append([]anthropic.MessageParam(nil), msgs[:10]...), user(result("stray", "x"), text("go on")), msgs[10], msgs[11], msgs[12])
	elide := history.WithElision(history.ElideOptions{MinTokens: -1, KeepRecent: -1})
	rateLimit := &apiError{http.StatusTooManyRequests, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 30,000 input tokens per minute."}}`}
	tests := []struct {
		name     string
		msgs     []anthropic.MessageParam
		err      error
		attempt  int
		opts     []history.Option
		want     error // nil: recovered
		maxAfter int   // recovered: res.TokensAfter at most this
	}{
		{"prompt is too long", msgs, overflowErr(sent*13/10, sent), 1, nil, nil, sent * 10 / 13},
		{"second attempt", msgs, overflowErr(sent*13/10, sent), 2, nil, nil, sent * 10 / 13 * 3 / 4},
		{"input length and max_tokens", msgs, &apiError{http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 197000 + 16384 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`}, 1, nil, nil, sent},
		{"with elision and step trimming", msgs, overflowErr(sent*2, sent), 1, []history.Option{elide, history.WithStepTrim()}, nil, sent / 2},
		{"orphans only", stray, overflowErr(sent+1, sent), 1, nil, nil, sent},
		{"rate limit", msgs, rateLimit, 1, nil, history.ErrNotOverflow, 0},
		{"nil error", msgs, nil, 1, nil, history.ErrNotOverflow, 0},
		{"only the latest turn left", latest, overflowErr(sent, sent/2), 1, nil, history.ErrCannotRecover, 0},
		{"invalid option", msgs, overflowErr(sent*2, sent), 1, []history.Option{history.WithLowWater(2)}, history.ErrInvalidOption, 0},
		{"invalid message", []anthropic.MessageParam{user(toolUse("c9", "x"))}, overflowErr(sent*2, sent), 1, nil, history.ErrInvalidMessage, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := adaptertest.JSON(t, tc.msgs)
			var events []history.Event
			opts := append([]history.Option{history.WithOnTrim(func(ev history.Event) { events = append(events, ev) })}, tc.opts...)
			out, res, err := RecoverOverflow(system, tc.msgs, tc.err, tc.attempt, opts...)
			if adaptertest.JSON(t, tc.msgs) != before {
				t.Fatal("RecoverOverflow modified its input")
			}
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			switch {
			case tc.want == nil:
				if !res.Trimmed && res.OrphansRemoved == 0 || res.TokensAfter > tc.maxAfter {
					t.Fatalf("recovered to %d tokens (trimmed %v, orphans %d), want at most %d", res.TokensAfter, res.Trimmed, res.OrphansRemoved, tc.maxAfter)
				}
				if len(events) != 1 || events[0].Reason != history.ReasonOverflow || events[0].Attempt != tc.attempt {
					t.Fatalf("events %+v, want one overflow event of attempt %d", events, tc.attempt)
				}
				if err := Validate(out); err != nil {
					t.Fatal(err)
				}
				if !adaptertest.Subsequence(tc.msgs[len(tc.msgs)-3:], out, adaptertest.SameJSON) {
					t.Fatal("the latest turn was not kept")
				}
				checkConvertsBack(t, request{system, tc.msgs}, request{system, out}, res)
			case errors.Is(err, history.ErrNotOverflow):
				if !adaptertest.SameArray(out, tc.msgs) || !adaptertest.Identity(res.Kept, len(hist)-1) || len(events) != 0 {
					t.Fatalf("not an overflow: got %d messages, Kept %v, %d events; want msgs itself, untouched", len(out), res.Kept, len(events))
				}
			case errors.Is(err, history.ErrCannotRecover):
				var re *history.RecoverError
				if !errors.As(err, &re) || !errors.Is(err, tc.err) || re.Used != sent || re.Limit != sent/2 {
					t.Fatalf("got %v, want a *history.RecoverError wrapping the provider error, with its sizes", err)
				}
				if adaptertest.JSON(t, out) != adaptertest.JSON(t, tc.msgs) {
					t.Fatalf("got %s, want what is left: the latest turn", adaptertest.JSON(t, out))
				}
			default:
				if out != nil {
					t.Fatalf("got %d messages with %v, want none", len(out), err)
				}
			}
		})
	}
}

// TestRecoverOverflowLoop: recovering again from the output of a recovery
// goes further each time, keeps the system prompt's pin and the latest
// turn, and ends with ErrCannotRecover, as the core does.
func TestRecoverOverflowLoop(t *testing.T) {
	system, msgs := pinRequest()
	prev := len(msgs) + 1
	for attempt := 1; ; attempt++ {
		hist, _ := ToHistory(system, msgs)
		n := history.Estimate(hist, nil)
		out, res, err := RecoverOverflow(system, msgs, overflowErr(n+100, n), attempt)
		if errors.Is(err, history.ErrCannotRecover) {
			if attempt < 3 {
				t.Fatalf("gave up at attempt %d", attempt)
			}
			return
		}
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		if len(out) >= prev || res.TokensAfter >= n {
			t.Fatalf("attempt %d: %d messages, %d tokens, from %d and %d: no progress", attempt, len(out), res.TokensAfter, prev, n)
		}
		if err := Validate(out); err != nil {
			t.Fatal(err)
		}
		prev, msgs = len(out), out
		if attempt > len(out)+1 {
			t.Fatal("no end")
		}
	}
}
