package main

import (
	"testing"

	"github.com/histrim/history"
)

// TestAgentLoop200Turns drives the loop through 200 tool-heavy turns against
// the fake provider and checks the promises of the overflow path.
func TestAgentLoop200Turns(t *testing.T) {
	var events []history.Event
	as, ps, err := Run(200, nil, func(_ int, ev history.Event) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("agent %+v", as)
	t.Logf("provider %+v", ps)

	if as.Turns != 200 {
		t.Fatalf("ran %d turns, want 200", as.Turns)
	}
	if ps.PairingRejections != 0 {
		t.Fatalf("%d requests rejected for broken tool pairing", ps.PairingRejections)
	}
	// Recovery was actually exercised, and every rejection was recovered
	// within two attempts.
	if ps.LengthRejections == 0 || as.Recoveries == 0 {
		t.Fatalf("no length rejection provoked (rejections %d, recoveries %d): the test proves nothing", ps.LengthRejections, as.Recoveries)
	}
	if as.Unrecovered != 0 || as.OtherErrors != 0 {
		t.Fatalf("%d requests unrecovered, %d other errors", as.Unrecovered, as.OtherErrors)
	}
	if as.MaxAttempts > 2 {
		t.Fatalf("a request needed %d recoveries, want at most 2", as.MaxAttempts)
	}
	if as.LengthRejections != ps.LengthRejections || as.Recoveries != as.LengthRejections {
		t.Fatalf("rejections: provider %d, agent %d, recoveries %d", ps.LengthRejections, as.LengthRejections, as.Recoveries)
	}
	if ps.Accepted != as.Requests-as.LengthRejections {
		t.Fatalf("accepted %d of %d requests with %d rejections", ps.Accepted, as.Requests, as.LengthRejections)
	}
	// Both shapes of the error (with and without sizes) were met.
	if ps.LengthRejections < 2 {
		t.Fatalf("only %d length rejections: the size-less shape was not exercised", ps.LengthRejections)
	}
	// Every trim is visible as an event, with the right reason and attempt.
	if as.Events != as.TrimmedResults || len(events) != as.Events {
		t.Fatalf("%d trimmed results but %d events (%d delivered)", as.TrimmedResults, as.Events, len(events))
	}
	if as.BudgetEvents == 0 {
		t.Fatal("no budget trim happened")
	}
	if as.OverflowEvents != as.Recoveries {
		t.Fatalf("%d overflow events for %d recoveries", as.OverflowEvents, as.Recoveries)
	}
	for _, ev := range events {
		switch ev.Reason {
		case history.ReasonBudget:
			if ev.Attempt != 0 {
				t.Fatalf("budget event with attempt %d", ev.Attempt)
			}
		case history.ReasonOverflow:
			if ev.Attempt < 1 || ev.Attempt > 2 || ev.TokensAfter >= ev.TokensBefore {
				t.Fatalf("bad overflow event %+v", ev)
			}
		default:
			t.Fatalf("unknown reason %q", ev.Reason)
		}
		if ev.Labels["agent"] != "agentloop" || ev.Labels["turn_id"] == "" {
			t.Fatalf("labels not carried: %+v", ev.Labels)
		}
	}
}

// TestFakeProviderPairing checks that the fake provider really enforces
// OpenAI's pairing rules, so that the zero above means something.
func TestFakeProviderPairing(t *testing.T) {
	call := []history.ToolCall{{ID: "c1", Name: "read_file", Arguments: "{}"}}
	tests := []struct {
		name string
		msgs []history.Message
		ok   bool
	}{
		{"paired", []history.Message{{Role: "user", Content: "u"}, {Role: "assistant", ToolCalls: call}, {Role: "tool", ToolCallID: "c1", Content: "r"}}, true},
		{"orphan result", []history.Message{{Role: "user", Content: "u"}, {Role: "tool", ToolCallID: "c1", Content: "r"}}, false},
		{"unanswered call", []history.Message{{Role: "assistant", ToolCalls: call}, {Role: "user", Content: "u"}}, false},
		{"mismatched id", []history.Message{{Role: "assistant", ToolCalls: call}, {Role: "tool", ToolCallID: "c2", Content: "r"}}, false},
	}
	for _, tc := range tests {
		if got := checkPairing(toWire(tc.msgs)) == ""; got != tc.ok {
			t.Errorf("%s: accepted=%v, want %v", tc.name, got, tc.ok)
		}
	}
}

// TestOverflowBodyIsRecognised checks that the error the agent builds from
// the provider's body is classified as an overflow in both shapes, and that
// a rate limit with the same status type is not.
func TestOverflowBodyIsRecognised(t *testing.T) {
	withSizes := &APIError{Status: 400, Type: "invalid_request_error", Param: "messages", Code: "context_length_exceeded",
		Message: "This model's maximum context length is 6000 tokens. However, your messages resulted in 6400 tokens. Please reduce the length of the messages."}
	if ov, ok := history.ParseOverflow(withSizes); !ok || ov != (history.Overflow{Used: 6400, Limit: 6000}) {
		t.Fatalf("ParseOverflow = %+v, %v", ov, ok)
	}
	quiet := &APIError{Status: 400, Code: "context_length_exceeded", Message: "Your input exceeds the context window of this model. Please adjust your input and try again."}
	if !history.IsContextOverflow(quiet) {
		t.Fatal("size-less overflow not recognised")
	}
	rate := &APIError{Status: 429, Code: "rate_limit_exceeded", Message: "Rate limit reached for fake-gpt on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000."}
	if history.IsContextOverflow(rate) {
		t.Fatal("rate limit classified as overflow")
	}
}

// TestAgentLoopCalibrated runs the same 200 turns with a Calibration: after
// the first accepted request the runtime trims to the provider's count, so at
// most one request is rejected for length (without it, dozens are), and the
// learnt model is the provider's (1.25x plus 150 tokens of schemas).
func TestAgentLoopCalibrated(t *testing.T) {
	plain, plainProvider, err := Run(200, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cal history.Calibration
	as, ps, err := Run(200, &cal, nil)
	if err != nil {
		t.Fatal(err)
	}
	scale, overhead, margin, ok := cal.Model()
	t.Logf("without calibration: %d length rejections; with: %d; learnt scale %.3f overhead %.0f margin %.0f",
		plainProvider.LengthRejections, ps.LengthRejections, scale, overhead, margin)
	if !ok {
		t.Fatal("nothing was observed")
	}
	if ps.PairingRejections != 0 || as.Unrecovered != 0 || as.OtherErrors != 0 {
		t.Fatalf("pairing rejections %d, unrecovered %d, other errors %d", ps.PairingRejections, as.Unrecovered, as.OtherErrors)
	}
	if ps.LengthRejections > 1 {
		t.Fatalf("%d length rejections with calibration, want at most 1 (without: %d)", ps.LengthRejections, plainProvider.LengthRejections)
	}
	if plainProvider.LengthRejections <= ps.LengthRejections {
		t.Fatalf("calibration did not reduce rejections: %d without, %d with", plainProvider.LengthRejections, ps.LengthRejections)
	}
	if as.TrimmedAccepted == 0 {
		t.Fatal("no trimmed request was accepted: calibration was never put to use")
	}
	if scale < 1.2 || scale > 1.3 || overhead < 100 || overhead > 200 {
		t.Fatalf("learnt %.3f x + %.0f, the provider counts %.2f x + %d", scale, overhead, Factor, Overhead)
	}
	t.Logf("mean provider count of trimmed requests: %d without calibration (limit %d), %d with (budget %d); whole turns set the granularity",
		plain.ProviderPrompt/max(plain.TrimmedAccepted, 1), Limit, as.ProviderPrompt/as.TrimmedAccepted, Budget)
}
