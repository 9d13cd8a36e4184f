package history

// Tests of the overflow classifier's behaviour on error trees, structured
// SDK errors, JSON bodies and hostile input; the fuzz target. The real
// provider messages are in overflow_providers_test.go, the benchmarks in
// overflow_bench_test.go.

import (
	"errors"
	"fmt"
	"testing"
)

func TestParseOverflowNil(t *testing.T) {
	if ov, ok := ParseOverflow(nil); ok || ov != (Overflow{}) {
		t.Fatalf("ParseOverflow(nil) = %+v, %v", ov, ok)
	}
	if IsContextOverflow(nil) {
		t.Fatal("IsContextOverflow(nil) = true")
	}
}

// opaqueWrap hides the wrapped error's text: only Unwrap reaches it.
type opaqueWrap struct{ err error }

func (w opaqueWrap) Error() string { return "request failed" }
func (w opaqueWrap) Unwrap() error { return w.err }

// statusErr mimics SDK errors that expose the HTTP status as a method.
type statusErr struct {
	status int
	msg    string
}

func (e statusErr) Error() string   { return e.msg }
func (e statusErr) StatusCode() int { return e.status }

// smithyErr mimics an AWS smithy API error (Bedrock ValidationException):
// Error() is generic, the message is behind ErrorMessage().
type smithyErr struct{ code, msg string }

func (e smithyErr) Error() string        { return "operation error Bedrock Runtime: Converse, api error" }
func (e smithyErr) ErrorCode() string    { return e.code }
func (e smithyErr) ErrorMessage() string { return e.msg }
func (e smithyErr) HTTPStatusCode() int  { return 400 }

func TestParseOverflowErrorTree(t *testing.T) {
	anthropic := errors.New(`prompt is too long: 208310 tokens > 200000 maximum`)
	tests := []struct {
		name   string
		err    error
		want   bool
		ov     Overflow
		reason string
	}{
		{
			name: "text only behind Unwrap", err: opaqueWrap{anthropic},
			want: true, ov: Overflow{Used: 208310, Limit: 200000},
			reason: "a wrapper that does not repeat the inner text must not hide the overflow",
		},
		{
			name: "errors.Join", err: errors.Join(errors.New("retry 1 failed"), anthropic),
			want: true, ov: Overflow{Used: 208310, Limit: 200000},
			reason: "Unwrap() []error branches are walked",
		},
		{
			name: "typed message only", err: smithyErr{"ValidationException", "Input is too long for requested model."},
			want:   true,
			reason: "ErrorMessage() is read when Error() does not carry it",
		},
		{
			name: "typed code only", err: smithyErr{"context_length_exceeded", "bad request"},
			want:   true,
			reason: "an error code of context_length_exceeded is enough",
		},
		{
			name: "429 status vetoes overflow text", err: statusErr{429, "This model's maximum context length is 8192 tokens. However, you requested 9850 tokens"},
			want:   false,
			reason: "a rate-limit status is never an overflow, whatever the text says",
		},
		{
			name: "400 status keeps overflow", err: statusErr{400, "This model's maximum context length is 8192 tokens. However, you requested 9850 tokens"},
			want: true, ov: Overflow{Used: 9850, Limit: 8192},
			reason: "a 400 carries overflows",
		},
		{
			name: "rate limit anywhere in the tree vetoes", err: errors.Join(anthropic, errors.New("429 Rate limit reached for requests")),
			want:   false,
			reason: "a tree that also reports a rate limit is not retried as an overflow",
		},
		{
			name: "thousands separators", err: errors.New("prompt is too long: 1,520,294 tokens > 1,000,000 maximum"),
			want: true, ov: Overflow{Used: 1520294, Limit: 1000000},
			reason: "counts written with separators parse",
		},
		{
			name: "absurd numbers read as not stated", err: errors.New("prompt is too long: 99999999999999999999999 tokens > 200000 maximum"),
			want: true, ov: Overflow{Used: 0, Limit: 200000},
			reason: "an unparsable count is 0, never negative or wrapped",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov, ok := ParseOverflow(tc.err)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (%s)", ov, ok, tc.ov, tc.want, tc.reason)
			}
		})
	}
}

// cyclic unwraps to itself forever.
type cyclic struct{}

func (c *cyclic) Error() string { return "loop" }
func (c *cyclic) Unwrap() error { return c }

func TestParseOverflowCyclicChain(t *testing.T) {
	if IsContextOverflow(&cyclic{}) {
		t.Fatal("cyclic error classified as overflow")
	}
}

func FuzzParseOverflow(f *testing.F) {
	for _, tc := range overflowCases {
		f.Add(tc.msg)
	}
	f.Add("maximum context length is 5 tokens. however, you requested 9 tokens (99999999999999999999 in the messages, 3 in the completion)")
	f.Fuzz(func(t *testing.T, s string) {
		err := errors.New(s)
		ov, ok := ParseOverflow(err)
		if ov.Used < 0 || ov.Limit < 0 {
			t.Fatalf("negative sizes %+v for %q", ov, s)
		}
		if !ok && ov != (Overflow{}) {
			t.Fatalf("not an overflow but sizes %+v for %q", ov, s)
		}
		if IsContextOverflow(err) != ok {
			t.Fatalf("IsContextOverflow disagrees with ParseOverflow for %q", s)
		}
		if ov2, ok2 := ParseOverflow(fmt.Errorf("wrapped: %w", err)); ok2 != ok || ov2 != ov {
			t.Fatalf("wrapping changed the result for %q: %+v,%v vs %+v,%v", s, ov2, ok2, ov, ok)
		}
	})
}
