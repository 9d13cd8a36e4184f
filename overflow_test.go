package history

// Tests of the overflow classifier's behaviour on error trees, structured
// SDK errors, JSON bodies and hostile input; the fuzz target. The real
// provider messages are in overflow_providers_test.go, the benchmarks in
// overflow_bench_test.go.

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/histrim/history/internal/race"
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
	tests := []parseCase{
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
	runParseCases(t, tests)
}

// cyclic unwraps to itself forever.
type cyclic struct{}

func (c *cyclic) Error() string { return "loop" }
func (c *cyclic) Unwrap() error { return c }

// pingPong is a two-error cycle: each unwraps to the other.
type pingPong struct {
	msg   string
	other *pingPong
}

func (p *pingPong) Error() string { return p.msg }
func (p *pingPong) Unwrap() error { return p.other }

// endless unwraps to a new value forever: no identity repeats.
type endless struct{ depth int }

func (e endless) Error() string { return "layer" }
func (e endless) Unwrap() error { return endless{e.depth + 1} }

// layer wraps an error behind a short text of its own.
type layer struct {
	n   int
	err error
}

func (l *layer) Error() string { return "layer" }
func (l *layer) Unwrap() error { return l.err }

// chain wraps err in depth layers.
func chain(err error, depth int) error {
	for i := range depth {
		err = &layer{i, err}
	}
	return err
}

// sdkErr's methods dereference the receiver, as generated SDK errors do, so
// a typed nil *sdkErr panics in each of them.
type sdkErr struct {
	status int
	raw    string
}

func (e *sdkErr) Error() string   { return "sdk error: " + e.raw }
func (e *sdkErr) StatusCode() int { return e.status }
func (e *sdkErr) RawJSON() string { return e.raw }

// panicky panics in Unwrap.
type panicky struct{}

func (panicky) Error() string { return "prompt is too long: 5 tokens > 4 maximum" }
func (panicky) Unwrap() error { panic("boom") }

// openAIv3 mimics a recent openai-go v3 *openai.Error: Error() names only
// the status; the body is behind RawJSON (the body's "error" object).
type openAIv3 struct{ raw string }

func (e *openAIv3) Error() string   { return "OpenAI API error: 400 Bad Request" }
func (e *openAIv3) RawJSON() string { return e.raw }

func TestParseOverflowHostileTrees(t *testing.T) {
	anthropic := errors.New(`prompt is too long: 208310 tokens > 200000 maximum`)
	sized := Overflow{Used: 208310, Limit: 200000}
	var nilSDK *sdkErr
	var big []error
	for i := range 64 {
		big = append(big, errors.New(strings.Repeat(fmt.Sprintf("unrelated failure %d; ", i), 400)))
	}
	big = append(big, anthropic)
	tests := []parseCase{
		{
			name: "typed nil wrapped", err: fmt.Errorf("x: %w", nilSDK),
			reason: "methods of a typed nil panic; the node reads as having no text and the walk goes on",
		},
		{
			name: "typed nil beside an overflow", err: errors.Join(nilSDK, fmt.Errorf("call: %w", anthropic)),
			want: true, ov: sized,
			reason: "a panicking sibling must not hide the overflow",
		},
		{
			name: "typed nil as the root", err: error(nilSDK),
			reason: "the root itself may be a typed nil",
		},
		{
			name: "panicking Unwrap", err: fmt.Errorf("call: %w", panicky{}),
			want: true, ov: Overflow{Used: 5, Limit: 4},
			reason: "the node's own text is read; its children are not",
		},
		{
			name: "overflow at depth 65", err: chain(anthropic, 65),
			want: true, ov: sized,
			reason: "the walk covers the whole tree, not the first 64 errors",
		},
		{
			name: "overflow at depth 10,000", err: chain(anthropic, 10000),
			want: true, ov: sized,
			reason: "deep chains are walked to the end",
		},
		{
			name: "overflow after 64 large unrelated errors", err: errors.Join(big...),
			want: true, ov: sized,
			reason: "every branch of a join is read",
		},
		{
			name: "self cycle", err: &cyclic{},
			reason: "an Unwrap that returns itself ends",
		},
		{
			name: "two-error cycle with an overflow in it", err: func() error {
				a := &pingPong{msg: "retry failed"}
				a.other = &pingPong{msg: "prompt is too long: 208310 tokens > 200000 maximum", other: a}
				return a
			}(),
			want: true, ov: sized,
			reason: "a cycle is walked once",
		},
		{
			name: "endless chain of new values", err: endless{},
			reason: "a chain with no repeating identity ends at the node bound",
		},
		{
			name: "request id containing quota", err: errors.New(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"},"request_id":"req_011CWdepJvQuota2D819tdYYq4h7"}`),
			want: true, ov: Overflow{Used: 200251, Limit: 200000},
			reason: "vetoes match whole words, not letters inside an id (constructed from boldsoftware/exe.dev#62 with the id changed)",
		},
		{
			name: "request id of letters only containing ratelimit", err: errors.New(`prompt is too long: 200251 tokens > 200000 maximum (request xRateLimitQ9)`),
			want: true, ov: Overflow{Used: 200251, Limit: 200000},
			reason: "an id is one word; a veto word inside it does not count",
		},
		{
			name: "quota as a word still vetoes", err: errors.Join(anthropic, errors.New(`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`)),
			reason: "a quota error anywhere in the tree rules an overflow out",
		},
		{
			name: "wrapper glued to its child", err: fmt.Errorf("re%w", errors.New("quota exceeded; prompt is too long: 5 tokens > 4 maximum")),
			reason: "a child whose text is merged with the wrapper's word is still read on its own",
		},
	}
	runParseCases(t, tests)
}

func TestParseOverflowStructured(t *testing.T) {
	// The body of a real OpenAI overflow, as openai-go keeps it (the
	// "error" object): chathub-dev/chathub#126.
	const openAIBody = `{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}`
	tests := []parseCase{
		{
			name: "openai-go v3: body only behind RawJSON", err: fmt.Errorf("chat: %w", &openAIv3{openAIBody}),
			want: true, ov: Overflow{Used: 4294, Limit: 4097},
			reason: "Error() names only the status; RawJSON carries the message",
		},
		{
			name: "code context_length_exceeded alone", err: &openAIv3{`{"message":"","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}`},
			want:   true,
			reason: "the code alone is an overflow",
		},
		{
			name: "full body with an error member", err: &openAIv3{`{"error":` + openAIBody + `}`},
			want: true, ov: Overflow{Used: 4294, Limit: 4097},
			reason: "the error member is read at any depth",
		},
		{
			name: "JSON escapes in the body", err: &openAIv3{`{"error":{"message":"prompt is too long: 210000 tokens \u003e 200000 maximum"}}`},
			want: true, ov: Overflow{Used: 210000, Limit: 200000},
			reason: "\\u003e decodes to >",
		},
		{
			name: "JSON escapes in an Error() text", err: errors.New(`{"error":{"message":"prompt is too long: 210000 tokens \u003e 200000 maximum"}}`),
			want: true, ov: Overflow{Used: 210000, Limit: 200000},
			reason: "escapes decode in plain texts too",
		},
		{
			name: "escaped quotes and newlines", err: errors.New(`{"error":"{\"message\":\"This model's maximum context length is 8192 tokens.\nHowever, you requested 9850 tokens\"}"}`),
			want: true, ov: Overflow{Used: 9850, Limit: 8192},
			reason: `\" and \n decode before matching`,
		},
		{
			name: "HTML page from a proxy", err: &openAIv3{`<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>`},
			reason: "a body that is not JSON is plain text without an overflow phrase",
		},
		{
			name: "empty body", err: &openAIv3{""},
			reason: "nothing to read",
		},
		{
			name: "truncated JSON", err: &openAIv3{`{"error":{"message":"This model's maximum con`},
			reason: "a truncated body counts only if its text still carries a phrase",
		},
		{
			name: "rate limit body that mentions the context", err: &openAIv3{`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 30,000 input tokens per minute. Please reduce the prompt length or the maximum tokens requested, or try again later."}}`},
			reason: "the rate-limit type and text rule it out (message from stagewise-io/stagewise#927)",
		},
		{
			name: "numeric 429 code in the body", err: &openAIv3{`{"error":{"code":429,"message":"The input token count (132478) exceeds the maximum number of tokens allowed (131072).","status":"INVALID_ARGUMENT"}}`},
			reason: "a numeric code of 429 is a veto like an HTTP status (constructed)",
		},
		{
			name: "echoed prompt in the body is not read", err: &openAIv3{`{"error":{"message":"invalid tool name","type":"invalid_request_error"},"input":"user said: maximum context length exceeded"}`},
			reason: "only error members of a decoded body are read",
		},
		{
			name: "typed nil SDK error beside a good one", err: errors.Join((*sdkErr)(nil), &sdkErr{400, openAIBody}),
			want: true, ov: Overflow{Used: 4294, Limit: 4097},
			reason: "a panicking node does not stop the others",
		},
		{
			name: "429 from StatusCode", err: &sdkErr{429, openAIBody},
			reason: "a rate-limit status rules the overflow out",
		},
	}
	runParseCases(t, tests)
}

func TestNormalizeText(t *testing.T) {
	tests := []struct{ in, want, reason string }{
		{"A  B\n\tc", "a b c", "case and white space"},
		{"  lead and trail  ", "lead and trail", "no space at the ends"},
		{"`max_tokens`", "max_tokens", "backticks dropped"},
		{`tokens \u003e 200000`, "tokens > 200000", `\u escapes`},
		{`a\nb\"c\'d\/e`, `a b"c'd/e`, "JSON and Python escapes"},
		{`\\\"x\\\"`, `"x"`, "a doubly escaped quote"},
		{`\u00e9t\u00C9`, "\u00e9t\u00c9", "non-ASCII code points are kept as UTF-8, not lowercased"},
		{`\uZZZZ`, "uzzzz", "an invalid \\u escape keeps its letters"},
		{`end\`, "end", "a trailing backslash is dropped"},
	}
	for _, tc := range tests {
		if got := string(normalizeText(nil, tc.in)); got != tc.want {
			t.Errorf("normalizeText(%q) = %q, want %q (%s)", tc.in, got, tc.want, tc.reason)
		}
	}
}

func TestParseOverflowAllocations(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop items at random, so the pooled scratch allocates; measured without -race")
	}
	err := fmt.Errorf("turn 3: %w", errors.New(`400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"}}`))
	plain := fmt.Errorf("turn 3: %w", errors.New("read tcp 10.0.0.2:443: connection reset by peer"))
	ParseOverflow(err) // warm the pool
	if n := testing.AllocsPerRun(100, func() { ParseOverflow(err) }); n > 1 {
		t.Errorf("ParseOverflow of an overflow allocates %.0f times per call, want at most 1 (the sizes match)", n)
	}
	if n := testing.AllocsPerRun(100, func() { ParseOverflow(plain) }); n > 0 {
		t.Errorf("ParseOverflow of another error allocates %.0f times per call, want 0", n)
	}
}

func FuzzParseOverflow(f *testing.F) {
	for _, tc := range overflowCases {
		f.Add(tc.msg)
	}
	for _, s := range []string{
		"maximum context length is 5 tokens. however, you requested 9 tokens (99999999999999999999 in the messages, 3 in the completion)",
		`prompt is too long: 1 tokens \u003e 0 maximum`,
		`{"error":{"message":"{\"error\":{\"code\":429,\"message\":\"prompt is too long\"}}"}}`,
		strings.Repeat(`\\`, 100) + "u003e",
		"size limit exceeded by 99999999999 tokens. the limit for this model is 1073741824 tokens",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := errors.New(s)
		ov, ok := ParseOverflow(err)
		if ov.Used < 0 || ov.Limit < 0 {
			t.Fatalf("negative sizes %+v for %q", ov, s)
		}
		if !ok && ov != (Overflow{}) {
			t.Fatalf("not an overflow but sizes %+v for %q", ov, s)
		}
		if ov2, ok2 := ParseOverflow(err); ok2 != ok || ov2 != ov {
			t.Fatalf("not deterministic for %q: %+v,%v then %+v,%v", s, ov, ok, ov2, ok2)
		}
		if IsContextOverflow(err) != ok {
			t.Fatalf("IsContextOverflow disagrees with ParseOverflow for %q", s)
		}
		if ov2, ok2 := ParseOverflow(fmt.Errorf("wrapped: %w", err)); ok2 != ok || ov2 != ov {
			t.Fatalf("wrapping changed the result for %q: %+v,%v vs %+v,%v", s, ov2, ok2, ov, ok)
		}
		raw := &openAIv3{s} // the same text as a response body must not panic
		if o, _ := ParseOverflow(raw); o.Used < 0 || o.Limit < 0 {
			t.Fatalf("negative sizes from a body %q", s)
		}
	})
}

// parseCase is one row of the ParseOverflow tables: an error, whether it is
// an overflow and what the provider stated, and why the case matters.
type parseCase struct {
	name   string
	err    error
	want   bool
	ov     Overflow
	reason string
}

// runParseCases checks ParseOverflow on every case, one subtest each.
func runParseCases(t *testing.T, tests []parseCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ov, ok := ParseOverflow(tc.err)
			if ok != tc.want || ov != tc.ov {
				t.Fatalf("ParseOverflow = %+v, %v; want %+v, %v (%s)", ov, ok, tc.ov, tc.want, tc.reason)
			}
		})
	}
}

// statusStruct keeps its HTTP status in a field, as genai.APIError does.
type statusStruct struct {
	Code    int
	Message string
}

func (e statusStruct) Error() string { return "Error " + itoa(e.Code) + ", Message: " + e.Message }

type statusPtr struct{ StatusCode int }

// gaxErr keeps its status behind HTTPCode, as gax's *apierror.APIError does.
type gaxErr struct{ code int }

func (e gaxErr) Error() string {
	return "rpc error: The input token count (5) exceeds the maximum number of tokens allowed (4)."
}
func (e gaxErr) HTTPCode() int { return e.code }

func (e *statusPtr) Error() string { return "request failed: context_length_exceeded" }

func TestStatusField(t *testing.T) {
	msg := "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)."
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"400 in a Code field", statusStruct{Code: 400, Message: msg}, true},
		{"429 in a Code field", statusStruct{Code: 429, Message: msg}, false},
		{"a code that is no HTTP status", statusStruct{Code: 4290, Message: msg}, true},
		{"429 in a StatusCode field behind a pointer", &statusPtr{StatusCode: 429}, false},
		{"400 in a StatusCode field behind a pointer", &statusPtr{StatusCode: 400}, true},
		{"typed nil pointer: no field to read, its text is", (*statusPtr)(nil), true},
		{"429 behind HTTPCode", gaxErr{429}, false},
		{"400 behind HTTPCode", gaxErr{400}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsContextOverflow(tc.err); got != tc.want {
				t.Fatalf("IsContextOverflow = %v, want %v", got, tc.want)
			}
		})
	}
}

// wideErr unwraps to 256 new children at every level, down to depth 0,
// where the last leaf is an overflow: a tree of 256^depth errors, built
// lazily, as a hostile or buggy error type might.
type wideErr struct{ depth, idx int }

func (w wideErr) Error() string {
	if w.depth == 0 && w.idx == 255 {
		return "prompt is too long: 208310 tokens > 200000 maximum"
	}
	return "w"
}

func (w wideErr) Unwrap() []error {
	if w.depth == 0 {
		return nil
	}
	out := make([]error, 256)
	for i := range out {
		out[i] = wideErr{w.depth - 1, i}
	}
	return out
}

// TestParseOverflowWideTree: a tree of 256^4 errors is classified with
// work and memory bounded by the node bound, not by the tree (it was 11.6 s
// and 2.25 GB for a smaller one before the errors held were bounded).
func TestParseOverflowWideTree(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ok := IsContextOverflow(wideErr{depth: 4})
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("classifying a wide tree allocated %d MB", alloc>>20)
	}
	// Depth first: the first leaves reached are the 256 children of the
	// first depth-1 error, the last of which is an overflow.
	if !ok {
		t.Fatal("the overflow among the first leaves was not read")
	}
}
