package history

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Errors of the overflow-recovery path. Test with errors.Is.
var (
	// ErrNotOverflow is returned by RecoverOverflow when the provider error is
	// not a context overflow (a rate limit, an auth failure, an output-token
	// error, a nil error...). The history is returned untouched and no event
	// fires: the caller handles the error some other way.
	ErrNotOverflow = errors.New("history: provider error is not a context overflow")
	// ErrCannotRecover is wrapped by *RecoverError when the provider rejected
	// the request for length but nothing more can be dropped: only the prefix
	// and the latest turn are left. The caller must surface the error instead
	// of retrying.
	ErrCannotRecover = errors.New("history: cannot recover from context overflow")
)

// Overflow is what a provider said about a request it rejected for length,
// in its own tokens. A zero field means the provider did not state it.
//
// Both numbers describe the input side, because that is what trimming can
// change. When the message also names the output tokens reserved for the
// reply ("you requested 4203 tokens (3703 in the messages, 500 in the
// completion)", "input length and max_tokens exceed context limit: 197000 +
// 16384 > 200000"), Used is the input alone and Limit is the window minus that
// reservation: what the input had to fit in.
type Overflow struct {
	// Used is the number of input tokens the provider counted (for some
	// servers a lower bound: "at least N"). Zero when not stated.
	Used int
	// Limit is the number of input tokens the provider would have accepted.
	// Zero when not stated.
	Limit int
}

// IsContextOverflow reports whether err is a provider's refusal of a request
// because its input does not fit the model's context window: the error that
// trimming the history can fix.
//
// It walks the whole error tree (errors.Unwrap, including Unwrap() []error)
// and reads the text of every error in it, so it works on wrapped errors
// (fmt.Errorf with %w) and on the errors of provider SDKs, whose Error()
// strings carry the provider's message or JSON body. The messages it knows
// are listed, with their sources, in docs/overflow.md: OpenAI and Azure
// OpenAI, Anthropic, Google Gemini, AWS Bedrock, Mistral, Groq, DeepSeek,
// OpenRouter, xAI, Cerebras, Ollama, LM Studio, vLLM, llama.cpp server and
// Hugging Face TGI.
//
// Typed fields are consulted where an error exposes them through methods:
// ErrorCode() string and ErrorMessage() string (AWS smithy errors) add to the
// text, and an HTTP status from StatusCode() int or HTTPStatusCode() int of
// 401, 402, 403 or 429 rules an overflow out.
//
// It returns false for a nil error, for rate limits and per-minute token
// limits ("Request too large ... on tokens per min (TPM)"), quota and billing
// errors, authentication errors, errors about the requested output size
// ("max_tokens is too large"), and for overflow messages whose numbers show
// that the requested output alone fills the window, since no trimming can fix
// those. It never panics and is safe for concurrent use.
func IsContextOverflow(err error) bool {
	_, ok := ParseOverflow(err)
	return ok
}

// ParseOverflow reports whether err is a context overflow (see
// IsContextOverflow) and, if so, what the provider said about the sizes.
// Fields the provider did not state are zero; both are never negative. When
// ok is false the Overflow is the zero value.
func ParseOverflow(err error) (ov Overflow, ok bool) {
	if err == nil {
		return Overflow{}, false
	}
	var texts []string
	positive := false
	vetoed := false
	walkErrors(err, func(e error) {
		if s, isCoder := e.(interface{ HTTPStatusCode() int }); isCoder && vetoStatus(s.HTTPStatusCode()) {
			vetoed = true
		}
		if s, isCoder := e.(interface{ StatusCode() int }); isCoder && vetoStatus(s.StatusCode()) {
			vetoed = true
		}
		if c, isCoder := e.(interface{ ErrorCode() string }); isCoder {
			texts = addText(texts, c.ErrorCode())
		}
		if m, isMsg := e.(interface{ ErrorMessage() string }); isMsg {
			texts = addText(texts, m.ErrorMessage())
		}
		texts = addText(texts, e.Error())
	})
	if vetoed {
		return Overflow{}, false
	}
	for i, t := range texts {
		t = normalizeErrorText(t)
		texts[i] = t
		if containsAny(t, overflowVetoes) {
			return Overflow{}, false
		}
		if containsAny(t, overflowSignals) {
			positive = true
		}
	}
	if !positive {
		return Overflow{}, false
	}
	for _, t := range texts {
		n, found := parseSizes(t)
		if !found {
			continue
		}
		if n.output > 0 && n.limit > 0 && n.output >= n.limit {
			// The reply reservation alone fills the window: an output-size
			// error in overflow words. Trimming cannot fix it.
			return Overflow{}, false
		}
		ov.Used = n.used
		ov.Limit = n.limit
		if n.limit > 0 {
			ov.Limit = n.limit - n.output
		}
		return ov, true
	}
	return Overflow{}, true
}

// maxErrorNodes bounds the walk of an error tree, so a cyclic or enormous
// Unwrap chain cannot hang the caller.
const maxErrorNodes = 64

// walkErrors calls visit for err and for every error reachable through
// Unwrap() error and Unwrap() []error, depth first, at most maxErrorNodes
// times.
func walkErrors(err error, visit func(error)) {
	var stack [16]error
	todo := append(stack[:0], err)
	for n := 0; len(todo) > 0 && n < maxErrorNodes; n++ {
		e := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if e == nil {
			continue
		}
		visit(e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			todo = append(todo, u.Unwrap())
		case interface{ Unwrap() []error }:
			list := u.Unwrap()
			for i := len(list) - 1; i >= 0; i-- {
				todo = append(todo, list[i])
			}
		}
	}
}

// addText appends s unless it is empty or already contained in a text seen
// before (a wrapper's Error() usually repeats the wrapped error's text).
func addText(texts []string, s string) []string {
	if s == "" {
		return texts
	}
	for _, t := range texts {
		if strings.Contains(t, s) {
			return texts
		}
	}
	return append(texts, s)
}

func vetoStatus(code int) bool {
	switch code {
	case 401, 402, 403, 429:
		return true
	}
	return false
}

// normalizeErrorText lowercases s, drops backticks (Anthropic and TGI quote
// parameter names with them) and collapses every run of white space into one
// space (SDKs and logs re-wrap long messages).
func normalizeErrorText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range strings.ToLower(s) {
		switch r {
		case '`':
			continue
		case ' ', '\t', '\n', '\r', '\v', '\f':
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// overflowSignals are phrases and codes (lowercase) that mark a refusal for
// input length. Each is taken from real provider errors; docs/overflow.md and
// overflow_test.go name the sources.
var overflowSignals = []string{
	"context_length_exceeded",                 // OpenAI, Azure OpenAI, Groq: error code
	"exceed_context_size_error",               // llama.cpp server: error type
	"contextwindowexceedederror",              // LiteLLM's exception name, seen wrapped around provider errors
	"maximum context length",                  // OpenAI, DeepSeek, vLLM, OpenRouter, Mistral, Bedrock
	"prompt is too long",                      // Anthropic, Bedrock (Claude)
	"input is too long",                       // Bedrock
	"exceeds the context window",              // OpenAI Responses API
	"exceeds the maximum number of tokens",    // Gemini
	"exceeds the available context size",      // llama.cpp server
	"context size has been exceeded",          // llama.cpp server
	"input length exceeds the context length", // Ollama
	"exceeds context length",                  // LM Studio
	"exceed the configured limit",             // OpenAI (GPT-5 family), Azure OpenAI
	"maximum prompt length",                   // xAI, vLLM (Neuron)
	"exceed context limit",                    // Anthropic, Bedrock: input + max_tokens
	"too many input tokens",                   // Bedrock
	"tokens + max_new_tokens must be",         // Hugging Face TGI
	"reduce the length of the messages",       // Groq, Cerebras, OpenAI
	"context length exceeded",                 // generic (Ollama docs, gateways)
	"prompt exceeds max length",               // Zhipu
}

// overflowVetoes are phrases (lowercase) of errors that resemble an overflow
// but are not one: rate and per-minute token limits, quota and billing, and
// output-size errors. Any of them anywhere in the error tree rules an
// overflow out.
var overflowVetoes = []string{
	"rate limit", "rate_limit", "ratelimit", "too many requests",
	"tokens per min", "requests per min", "(tpm)", "(rpm)", "per day",
	"quota", "resource_exhausted", "resource has been exhausted",
	"billing", "more credits",
	"completion tokens, whereas you provided", // OpenAI: max_tokens above the model's output cap
	"maximum allowed number of output tokens", // Anthropic: max_tokens above the output cap
	"maximum tokens you requested exceeds",    // Bedrock: max_tokens above the output cap
	"cannot be greater than max_model_len",    // vLLM: max_completion_tokens above the window
}

// sizes are the numbers read from an overflow message, in the provider's
// tokens: used input, the whole window (or input limit) and, when the message
// names it, the output reservation counted against the same window.
type sizes struct{ used, limit, output int }

// num matches a token count, with or without thousands separators.
const num = `(\d{1,3}(?:,\d{3})+|\d+)`

// The size patterns, tried in order on normalized text. Each comment names
// the provider shape; the tests carry the real messages and their sources.
var (
	// OpenAI, Azure OpenAI, DeepSeek, vLLM, OpenRouter with a breakdown:
	// "maximum context length is 4097 tokens. However, you requested 4203
	// tokens (3703 in the messages, 500 in the completion)"; "(6683 in the
	// messages, 730 in the functions, and 800 in the completion)"; "(3643 in
	// your prompt; 0 for the completion)"; "you requested about 141607 tokens
	// (10535 of text input, 131072 in the output)".
	reBreakdown = regexp.MustCompile(`maximum context length is ` + num + ` tokens[.,]? however,? you requested (?:about )?` + num + ` tokens \(([^)]*)\)`)
	reItem      = regexp.MustCompile(num + ` (?:in|for|of) (?:the |your )?([a-z ]+)`)
	// OpenAI: "maximum context length is 128000 tokens. However, your
	// messages resulted in 130912 tokens."
	reResultedIn = regexp.MustCompile(`maximum context length is ` + num + ` tokens[.,]? however,? your messages resulted in ` + num + ` tokens`)
	// vLLM: "maximum context length is 8192 tokens. However, you requested
	// 4096 output tokens and your prompt contains at least 4097 input tokens"
	reOutputAndPrompt = regexp.MustCompile(`maximum context length is ` + num + ` tokens[.,]? however,? you requested ` + num + ` output tokens and your prompt contains (?:at least )?` + num + ` input tokens`)
	// vLLM: "maximum context length is 8192 tokens. However, your request has
	// 9000 input tokens."
	reRequestHas = regexp.MustCompile(`maximum context length is ` + num + ` tokens[.,]? however,? your request has ` + num + ` input tokens`)
	// vLLM: "'max_tokens' or 'max_completion_tokens' is too large: 2000. This
	// model's maximum context length is 4096 tokens and your request has 2104
	// input tokens"
	reTooLargeHas = regexp.MustCompile(`too large: ` + num + `\.? .{0,40}maximum context length is ` + num + ` tokens and your request has ` + num + ` input tokens`)
	// OpenAI, DeepSeek, OpenRouter, vLLM without a breakdown: "maximum
	// context length is 8192 tokens. However, you requested 9850 tokens".
	reRequested = regexp.MustCompile(`maximum context length is ` + num + ` tokens[.,]? however,? you requested (?:about )?` + num + ` tokens`)
	// Anthropic, Bedrock: "prompt is too long: 208310 tokens > 200000 maximum"
	reAnthropic = regexp.MustCompile(`prompt is too long: ` + num + ` tokens > ` + num + ` maximum`)
	// Anthropic: "input length and max_tokens exceed context limit: 197000 +
	// 16384 > 200000"
	reAnthropicCombined = regexp.MustCompile(`input length and max_tokens exceed context limit: ` + num + ` \+ ` + num + ` > ` + num)
	// Gemini: "The input token count (1200293) exceeds the maximum number of
	// tokens allowed (1048576)."
	reGemini      = regexp.MustCompile(`input token count \(` + num + `\) exceeds the maximum number of tokens allowed \(` + num + `\)`)
	reGeminiLimit = regexp.MustCompile(`exceeds the maximum number of tokens allowed \(` + num + `\)`)
	// llama.cpp server: "request (4390 tokens) exceeds the available context
	// size (4096 tokens)", and its JSON fields n_prompt_tokens and n_ctx.
	reLlamaCpp     = regexp.MustCompile(`request \(` + num + ` tokens\) exceeds the available context size \(` + num + ` tokens\)`)
	reLlamaPrompt  = regexp.MustCompile(`n_prompt_tokens\W{1,6}` + num)
	reLlamaContext = regexp.MustCompile(`n_ctx\W{1,6}` + num)
	// Mistral: "Prompt contains 40687 tokens and 0 draft tokens, too large for
	// model with 32768 maximum context length"
	reMistral = regexp.MustCompile(`prompt contains ` + num + ` tokens and ` + num + ` draft tokens, too large for model with ` + num + ` maximum context length`)
	// xAI: "This model's maximum prompt length is 131072 but the request
	// contains 136973 tokens."
	reXAI = regexp.MustCompile(`maximum prompt length is ` + num + `(?: tokens)?[.,]? but the request contains ` + num + ` tokens`)
	// OpenAI (GPT-5 family), Azure OpenAI: "Input tokens exceed the configured
	// limit of 272000 tokens. Your messages resulted in 289650 tokens."
	reConfigured = regexp.MustCompile(`exceed the configured limit of ` + num + ` tokens\.? your messages resulted in ` + num + ` tokens`)
	// Bedrock: "Too many input tokens. Max input tokens: 8192, request input
	// token count: 9279"
	reBedrockMax = regexp.MustCompile(`max input tokens: ` + num + `, request input token count: ` + num)
	// Hugging Face TGI: "inputs tokens + max_new_tokens must be <= 32768.
	// Given: 32000 inputs tokens and 1024 max_new_tokens"
	reTGI = regexp.MustCompile(`tokens \+ max_new_tokens must be <= ` + num + `\.? given: ` + num + ` inputs tokens and ` + num + ` max_new_tokens`)
	// LM Studio: "Input length 6491 exceeds context length 1500"
	reLMStudio = regexp.MustCompile(`input length ` + num + ` exceeds context length ` + num)
	// Cerebras: "Please reduce the length of the messages or completion.
	// Current length is 42328 while limit is 40000"
	reCerebras = regexp.MustCompile(`current length is ` + num + ` while limit is ` + num)
	// Limit only: Bedrock "This model's maximum context length is 8192
	// tokens. Please reduce the length of the prompt".
	reLimitOnly = regexp.MustCompile(`maximum context length is ` + num + ` tokens`)
)

// parseSizes reads the sizes from one normalized error text. found is false
// when no known shape with numbers is present.
func parseSizes(t string) (s sizes, found bool) {
	if m := reBreakdown.FindStringSubmatch(t); m != nil {
		s.limit = atoi(m[1])
		for _, it := range reItem.FindAllStringSubmatch(m[3], -1) {
			n := atoi(it[1])
			if strings.Contains(it[2], "completion") || strings.Contains(it[2], "output") {
				s.output += n
			} else {
				s.used += n
			}
		}
		if s.used == 0 && s.output == 0 {
			s.used = atoi(m[2])
		}
		return s, true
	}
	if m := reResultedIn.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), used: atoi(m[2])}, true
	}
	if m := reOutputAndPrompt.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), output: atoi(m[2]), used: atoi(m[3])}, true
	}
	if m := reRequestHas.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), used: atoi(m[2])}, true
	}
	if m := reTooLargeHas.FindStringSubmatch(t); m != nil {
		return sizes{output: atoi(m[1]), limit: atoi(m[2]), used: atoi(m[3])}, true
	}
	if m := reRequested.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), used: atoi(m[2])}, true
	}
	if m := reAnthropic.FindStringSubmatch(t); m != nil {
		return sizes{used: atoi(m[1]), limit: atoi(m[2])}, true
	}
	if m := reAnthropicCombined.FindStringSubmatch(t); m != nil {
		return sizes{used: atoi(m[1]), output: atoi(m[2]), limit: atoi(m[3])}, true
	}
	if m := reGemini.FindStringSubmatch(t); m != nil {
		return sizes{used: atoi(m[1]), limit: atoi(m[2])}, true
	}
	if m := reLlamaCpp.FindStringSubmatch(t); m != nil {
		return sizes{used: atoi(m[1]), limit: atoi(m[2])}, true
	}
	if m := reMistral.FindStringSubmatch(t); m != nil {
		return sizes{used: atoi(m[1]) + atoi(m[2]), limit: atoi(m[3])}, true
	}
	if m := reXAI.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), used: atoi(m[2])}, true
	}
	if m := reConfigured.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), used: atoi(m[2])}, true
	}
	if m := reBedrockMax.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), used: atoi(m[2])}, true
	}
	if m := reTGI.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1]), used: atoi(m[2]), output: atoi(m[3])}, true
	}
	if m := reLMStudio.FindStringSubmatch(t); m != nil {
		return sizes{used: atoi(m[1]), limit: atoi(m[2])}, true
	}
	if m := reCerebras.FindStringSubmatch(t); m != nil {
		return sizes{used: atoi(m[1]), limit: atoi(m[2])}, true
	}
	if p, c := reLlamaPrompt.FindStringSubmatch(t), reLlamaContext.FindStringSubmatch(t); p != nil || c != nil {
		if p != nil {
			s.used = atoi(p[1])
		}
		if c != nil {
			s.limit = atoi(c[1])
		}
		return s, true
	}
	if m := reGeminiLimit.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1])}, true
	}
	if m := reLimitOnly.FindStringSubmatch(t); m != nil {
		return sizes{limit: atoi(m[1])}, true
	}
	return sizes{}, false
}

// maxTokenCount caps parsed numbers: no model window is near it, and it keeps
// later arithmetic far from integer overflow on every platform.
const maxTokenCount = 1 << 30

// atoi parses a token count written with or without thousands separators.
// Anything unparsable or absurdly large reads as 0 (not stated).
func atoi(s string) int {
	s = strings.ReplaceAll(s, ",", "")
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxTokenCount {
		return 0
	}
	return n
}

// RecoverError reports that a provider rejected a request for length and
// RecoverOverflow had nothing left to drop. It wraps both ErrCannotRecover
// and the provider's error, so errors.Is works with either.
type RecoverError struct {
	// Overflow is what the provider said; zero fields were not stated.
	Overflow
	// Tokens is the library's count of what is left: the prefix and the
	// latest turn (and a breadcrumb, if one was already there).
	Tokens int
	// Budget is the target RecoverOverflow aimed for.
	Budget int
	// Attempt is the attempt number RecoverOverflow was called with, after
	// normalization (values below 1 read as 1).
	Attempt int
	// Err is the provider's error.
	Err error
}

func (e *RecoverError) Error() string {
	var b strings.Builder
	b.WriteString("history: cannot recover from context overflow: only the prefix and the latest turn are left (")
	b.WriteString(strconv.Itoa(e.Tokens))
	b.WriteString(" tokens, target ")
	b.WriteString(strconv.Itoa(e.Budget))
	b.WriteString(", attempt ")
	b.WriteString(strconv.Itoa(e.Attempt))
	if e.Used > 0 || e.Limit > 0 {
		b.WriteString("; provider counted ")
		b.WriteString(sizeOrUnknown(e.Used))
		b.WriteString(" of ")
		b.WriteString(sizeOrUnknown(e.Limit))
	}
	b.WriteString(")")
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func sizeOrUnknown(n int) string {
	if n <= 0 {
		return "?"
	}
	return strconv.Itoa(n)
}

// Unwrap returns ErrCannotRecover and the provider's error.
func (e *RecoverError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCannotRecover}
	}
	return []error{ErrCannotRecover, e.Err}
}

// RecoverOverflow trims msgs after a provider rejected them for length, so
// that the caller can retry the request.
//
// msgs is the history exactly as it was sent in the rejected request (usually
// the Messages of the previous Result); providerErr is the provider's error;
// attempt numbers the recoveries of this one request: 1 for the first retry
// after the first rejection, 2 after the retry was rejected again, and so on.
// Values below 1 read as 1. The options are those of TrimToRecentTurns;
// the Counter should be the one the caller trims with.
//
// The target budget is computed from the library's count of msgs (E) and
// what the provider said (see docs/overflow.md):
//
//   - provider states Used and Limit: E × Limit/Used × m(attempt), where
//     m = 0.90, 0.75, then halves per further attempt (0.375, 0.1875, ...);
//     the ratio converts the provider's limit into the library's units, m is
//     the safety margin for the difference between the two counts;
//   - provider states only Limit: min(E × s(attempt), Limit × m(attempt));
//   - otherwise: E × s(attempt), where s = 0.75, 0.5, then halves per
//     further attempt (0.25, 0.125, ...).
//
// The target is always below E and at least 1. Then msgs is trimmed to it as
// TrimToRecentTurns would (orphan sweep, whole turns, one breadcrumb never
// stacked), and the OnTrim callback receives an Event with Reason "overflow"
// and Attempt set.
//
// Results:
//
//   - providerErr is not an overflow (IsContextOverflow is false, including
//     a nil error): the Result holds msgs unchanged (clipped, not copied),
//     nothing else is set, no event fires, and the error is ErrNotOverflow.
//   - At least one turn was dropped (or the orphan sweep shrank the
//     history): the Result and a nil error, even if the Result is still above
//     the target; the caller retries, and a further rejection calls
//     RecoverOverflow again with attempt+1, which goes further.
//   - Nothing can be dropped (only the prefix and the latest turn are left):
//     a *RecoverError wrapping ErrCannotRecover and providerErr, with the
//     sizes. The caller must surface it instead of retrying.
//   - Invalid input or options: the error TrimToRecentTurns would return.
//
// Each successful call drops at least one turn, so calling RecoverOverflow
// repeatedly on its own output ends in ErrCannotRecover after at most as many
// calls as there are turns; the shrinking targets usually end it much sooner.
// RecoverOverflow never modifies msgs and is safe for concurrent use.
func RecoverOverflow(msgs []Message, providerErr error, attempt int, opts ...Option) (Result, error) {
	ov, ok := ParseOverflow(providerErr)
	if !ok {
		return Result{Messages: msgs[:len(msgs):len(msgs)]}, ErrNotOverflow
	}
	attempt = max(attempt, 1)
	o := newOptions(opts)
	defer o.release()
	o.reason = ReasonOverflow
	o.attempt = attempt
	// The target is derived from the trim's own count of the history, so
	// each message is counted once.
	o.budgetFor = func(est int) int {
		if o.calib != nil && ov.Used > 0 {
			// What we sent against what the provider counted: an
			// observation like any accepted request's.
			o.calib.Observe(est, ov.Used)
		}
		return overflowTarget(est, ov, attempt)
	}
	res, err := trimToBudget(msgs, 1, o)
	if err != nil && !errors.Is(err, ErrLatestTurnTooLarge) {
		return res, err
	}
	if res.Trimmed || res.TokensAfter < res.TokensBefore {
		return res, nil
	}
	return res, &RecoverError{Overflow: ov, Tokens: res.TokensAfter, Budget: res.Budget, Attempt: attempt, Err: providerErr}
}

// overflowTarget is the budget RecoverOverflow trims to; see its doc and
// docs/overflow.md.
func overflowTarget(est int, ov Overflow, attempt int) int {
	e := float64(est)
	var t float64
	switch {
	case ov.Used > 0 && ov.Limit > 0:
		t = e * float64(ov.Limit) / float64(ov.Used) * overflowMargin(attempt)
	case ov.Limit > 0:
		t = min(e*overflowShrink(attempt), float64(ov.Limit)*overflowMargin(attempt))
	default:
		t = e * overflowShrink(attempt)
	}
	target := est - 1
	if t < float64(target) {
		target = int(t)
	}
	return max(target, 1)
}

// overflowMargin is the share of the provider's stated limit aimed for:
// 0.90 on the first attempt, 0.75 on the second, then half as much again on
// each further attempt.
func overflowMargin(attempt int) float64 {
	switch {
	case attempt <= 1:
		return 0.90
	case attempt == 2:
		return 0.75
	}
	return math.Ldexp(0.75, -min(attempt-2, 64))
}

// overflowShrink is the share of the failed estimate kept when the provider
// stated no usable numbers: 0.75 on the first attempt, then half as much
// again on each further attempt.
func overflowShrink(attempt int) float64 {
	if attempt <= 1 {
		return 0.75
	}
	return math.Ldexp(1, -min(attempt-1, 64))
}
