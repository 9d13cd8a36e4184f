package langchaingo

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/histrim/history"
	"github.com/tmc/langchaingo/llms"
)

const overflowMsg = "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens."

// httpCoder is an error with gax's HTTPCode() int, as *apierror.APIError.
type httpCoder struct {
	code int
	msg  string
}

func (e *httpCoder) Error() string { return e.msg }
func (e *httpCoder) HTTPCode() int { return e.code }

// panicky panics in every method.
type panicky struct{}

func (panicky) Error() string   { panic("Error") }
func (panicky) Unwrap() error   { panic("Unwrap") }
func (panicky) HTTPCode() int   { panic("HTTPCode") }
func (panicky) StatusCode() int { panic("StatusCode") }

// loop unwraps to itself.
type loop struct{ msg string }

func (e *loop) Error() string { return e.msg }
func (e *loop) Unwrap() error { return e }

// wide unwraps to thousands of errors, each of them wide again.
type wide struct{}

var wideChildren = func() []error {
	errs := make([]error, 1<<14)
	for i := range errs {
		errs[i] = wide{}
	}
	return errs
}()

func (wide) Error() string   { return "wide" }
func (wide) Unwrap() []error { return wideChildren }

func TestParseOverflow(t *testing.T) {
	flat := func(status int, msg string) error {
		return fmt.Errorf("anthropic: failed to create message: %w", fmt.Errorf("%s%d: %s", statusPrefix, status, msg))
	}
	want := history.Overflow{Used: 4294, Limit: 4097}
	tests := []struct {
		name string
		err  error
		want bool
		ov   history.Overflow
	}{
		{name: "nil", err: nil},
		{name: "flat 400", err: flat(400, overflowMsg), want: true, ov: want},
		{name: "flat 429", err: flat(429, overflowMsg)},
		{name: "flat 401", err: flat(401, overflowMsg)},
		{name: "flat 403", err: flat(403, overflowMsg)},
		{name: "flat 402", err: flat(402, overflowMsg)},
		{name: "flat 500 is not a veto", err: flat(500, overflowMsg), want: true, ov: want},
		{name: "flattened by %v", err: fmt.Errorf("turn 3: %v", flat(429, overflowMsg))},
		{name: "status of four digits is not a status", err: errors.New(statusPrefix + "4290: " + overflowMsg), want: true, ov: want},
		{name: "status cut short", err: errors.New(statusPrefix + "42"), want: false},
		{name: "no digits after the prefix", err: errors.New(statusPrefix + "abc: " + overflowMsg), want: true, ov: want},
		{name: "HTTPCode 429", err: fmt.Errorf("x: %w", &httpCoder{429, overflowMsg})},
		{name: "HTTPCode 400", err: &httpCoder{400, overflowMsg}, want: true, ov: want},
		{name: "HTTPCode -1 (not HTTP)", err: &httpCoder{-1, overflowMsg}, want: true, ov: want},
		{
			name: "llms.Error label that reads as a rate limit",
			err:  fmt.Errorf("x: %w", llms.NewError(llms.ErrCodeRateLimit, "openai", "Rate limit exceeded").WithCause(flat(400, overflowMsg))),
			want: true, ov: want,
		},
		{
			name: "llms.Error over a real 429",
			err:  llms.NewError(llms.ErrCodeRateLimit, "openai", "Rate limit exceeded").WithCause(flat(429, overflowMsg)),
		},
		{
			name: "llms.Error without a cause is classified as it is",
			err:  llms.NewError(llms.ErrCodeTokenLimit, "openai", overflowMsg),
			want: true, ov: want,
		},
		{
			name: "llms.Error wrapping another",
			err: llms.NewError(llms.ErrCodeUnknown, "a", "rate limit").WithCause(
				llms.NewError(llms.ErrCodeUnknown, "b", "quota").WithCause(errors.New(overflowMsg))),
			want: true, ov: want,
		},
		{name: "typed nil llms.Error", err: fmt.Errorf("x: %w", (*llms.Error)(nil))},
		{name: "panicking error beside an overflow", err: errors.Join(panicky{}, errors.New(overflowMsg)), want: true, ov: want},
		{name: "panicking error beside a 429", err: errors.Join(panicky{}, flat(429, overflowMsg))},
		{name: "cycle", err: &loop{overflowMsg}, want: true, ov: want},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov, ok := ParseOverflow(tc.err)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v", ov, ok, tc.ov, tc.want)
			}
			if IsContextOverflow(tc.err) != tc.want {
				t.Fatal("IsContextOverflow disagrees with ParseOverflow")
			}
		})
	}
}

// TestWalkBounds checks that the adapter's own walks stay bounded on a tree
// where every error unwraps to thousands of errors. (The core's classifier
// is not run on it: it visits up to 65,536 errors of such a tree.)
func TestWalkBounds(t *testing.T) {
	visited := 0
	walk(wide{}, func(e error) bool {
		visited++
		return false
	})
	if visited > maxWalk {
		t.Fatalf("walk visited %d errors, more than %d", visited, maxWalk)
	}
	if got := hiddenStatus(wide{}); got != 0 {
		t.Fatalf("hiddenStatus = %d, want 0", got)
	}
	long := errors.New(strings.Repeat("a", maxText) + statusPrefix + "429")
	if got := hiddenStatus(errors.Join(long, errors.New(statusPrefix+"401"))); got != 0 {
		t.Fatalf("hiddenStatus read %d beyond its text budget", got)
	}
	if got := hiddenStatus(errors.Join(errors.New("x"), errors.New(statusPrefix+"401"))); got != 401 {
		t.Fatalf("hiddenStatus = %d, want 401", got)
	}
	if got := mappedCause(&loop{"x"}); got != nil {
		t.Fatalf("mappedCause = %v, want nil", got)
	}
}
