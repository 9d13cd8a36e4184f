package history

// This file owns the overflow classifier's API (Overflow, IsContextOverflow,
// ParseOverflow) and its decision: an error tree is an overflow when some
// error in it carries a provider's overflow phrase and none carries a
// not-overflow phrase or status; the sizes come from the first shape that
// states them. The provider table is in overflow_providers.go, the text
// matching in overflow_match.go, the reading of the error tree in
// overflow_errtree.go. Recovery (RecoverOverflow) is in recover.go.

import "sync"

// Overflow is what a provider said about a request it rejected for length,
// in its own tokens. A zero field means the provider did not state it.
//
// Both numbers describe the input side, because that is what trimming can
// change. When the message also names the output tokens reserved for the
// reply ("you requested 4203 tokens (3703 in the messages, 500 in the
// completion)", "input length and max_tokens exceed context limit: 197000 +
// 16384 > 200000"), Used is the input alone and Limit is the window minus that
// reservation: what the input had to fit in. When a provider states only the
// total it was asked for ("answering your request will take 39732 tokens"),
// Used is that total.
type Overflow struct {
	// Used is the number of input tokens the provider counted (for some
	// servers a lower bound: "at least N"). Zero when not stated. Never
	// negative, never above 1<<30.
	Used int
	// Limit is the number of input tokens the provider would have accepted.
	// Zero when not stated. Never negative, never above 1<<30.
	Limit int
}

// IsContextOverflow reports whether err is a provider's refusal of a request
// because its input does not fit the model's context window: the error that
// trimming the history can fix ([RecoverOverflow] does). [ParseOverflow] also
// returns the sizes the provider stated.
//
// # What is read
//
// IsContextOverflow walks the whole error tree: err and every error
// reachable through Unwrap() error and Unwrap() []error (fmt.Errorf with one
// or several %w, errors.Join), parents before children. From each error it
// reads:
//
//   - its Error() text;
//   - ErrorCode() string and ErrorMessage() string (AWS smithy errors, such
//     as Bedrock's ValidationException), as more text;
//   - RawJSON() string, the response body as openai-go and anthropic-sdk-go
//     keep it. A body that decodes as JSON is read by its error members only
//     (error, errors, message, msg, detail, details, code, type, status,
//     status_code, reason, title, param, error_code, error_type,
//     error_message, metadata, raw, n_prompt_tokens, n_ctx, at any depth,
//     including JSON documents quoted inside strings), so an echoed prompt
//     is never mistaken for the error; a body that does not decode (an HTML
//     page, a truncated body) is read as plain text;
//   - HTTPStatusCode() int and StatusCode() int, and a numeric code or
//     status member of the body: 401, 402, 403 and 429 rule an overflow out.
//
// Texts are compared case-insensitively, with JSON and Python escapes
// decoded (\", \n, \u003e...), backticks dropped and runs of white space
// taken as one space. Phrases match whole words: "quota" rules an overflow
// out in "insufficient_quota" or "your current quota", but not inside a
// request id such as "req_01Quota9". The phrases and the providers they come
// from are listed, with their sources, in docs/overflow.md.
//
// # What is not an overflow
//
// It returns false for a nil error, for rate limits and per-minute token
// limits ("Request too large ... on tokens per min (TPM)"), quota, billing
// and throttling errors, authentication errors, errors about the requested
// output size ("max_tokens is too large"), and overflow messages whose
// numbers show that the requested output alone fills the window, since no
// trimming can fix those. Any of these anywhere in the tree rules an
// overflow out.
//
// # Hostile input
//
// IsContextOverflow never panics: an error whose Error, Unwrap or interface
// methods panic (a typed nil pointer whose methods dereference it, for
// instance) is read as having no text and no children. Its cost is linear
// in the total length of the texts it reads: a wrapper's text that repeats
// its child's (fmt.Errorf, errors.Join) is recognised without rescanning
// it. A tree that points back at itself is walked once. The work is bounded
// for pathological trees: at most 65,536 errors are visited and at most 32
// MiB of text is examined; what lies beyond is not read. It is safe for
// concurrent use.
func IsContextOverflow(err error) bool {
	_, ok := ParseOverflow(err)
	return ok
}

// ParseOverflow reports whether err is a context overflow (see
// [IsContextOverflow]) and, if so, what the provider said about the sizes.
// Fields the provider did not state are zero; both are never negative. When
// ok is false the Overflow is the zero value. When several errors of the
// tree state sizes, the first (in walk order) that states both Used and
// Limit wins over any that states only one. ParseOverflow never panics, is
// deterministic and is safe for concurrent use.
func ParseOverflow(err error) (ov Overflow, ok bool) {
	if err == nil {
		return Overflow{}, false
	}
	c := classifierPool.Get().(*classifier)
	c.reset()
	defer c.release()
	c.walk(err)
	return c.result()
}

// overflowIndex holds every phrase of the provider table.
var overflowIndex = func() phraseIndex {
	var signals, vetoes []string
	for _, r := range overflowRows {
		signals = append(signals, r.phrases...)
	}
	for _, r := range notOverflowRows {
		vetoes = append(vetoes, r.phrases...)
	}
	return newPhraseIndex(signals, vetoes)
}()

const (
	// windowContext is how much normalized text around an overflow phrase
	// (on each side) is searched for numbers.
	windowContext = 768
	// maxWindowSpan bounds one window: overlapping windows merge up to it.
	maxWindowSpan = 8 << 10
	// maxWindowsPerText bounds the windows of one text.
	maxWindowsPerText = 16
	// maxWindowBytes bounds the text searched for numbers in one tree.
	maxWindowBytes = 1 << 20
)

// classifier is the state of one classification. It is pooled: a
// classification of an ordinary error allocates nothing for its scratch.
type classifier struct {
	budget      int // bytes of text that may still be examined
	windowBytes int // bytes of windows that may still be searched for numbers
	nodes       int // errors visited

	vetoed   bool // a not-overflow phrase or status was found
	positive bool // an overflow phrase was found

	best, partial         sizes // first sizes with both numbers; first with one
	haveBest, havePartial bool

	buf     []byte     // normalized text of the text being examined
	windows []span     // windows of buf around overflow phrases
	texts   []nodeText // Error() texts of visited errors, for their children
	stack   []frame
}

var classifierPool = sync.Pool{New: func() any { return new(classifier) }}

func (c *classifier) reset() {
	*c = classifier{
		budget:      maxErrorText,
		windowBytes: maxWindowBytes,
		buf:         c.buf[:0],
		windows:     c.windows[:0],
		texts:       c.texts[:0],
		stack:       c.stack[:0],
	}
}

// maxPooledBuf is the largest scratch kept in the pool, so that one hostile
// error does not pin megabytes.
const maxPooledBuf = 64 << 10

// release returns c to the pool, dropping every reference to the caller's
// errors and texts.
func (c *classifier) release() {
	clear(c.texts[:cap(c.texts)])
	clear(c.stack[:cap(c.stack)])
	if cap(c.buf) > maxPooledBuf {
		c.buf = nil
	}
	if cap(c.texts) > maxPooledBuf/8 {
		c.texts = nil
	}
	if cap(c.stack) > maxPooledBuf/8 {
		c.stack = nil
	}
	classifierPool.Put(c)
}

// examine normalizes and scans s (as much of it as the text budget allows)
// and returns how many bytes of s it examined.
func (c *classifier) examine(s string) int {
	n := min(len(s), c.budget)
	if n <= 0 || c.vetoed {
		return 0
	}
	c.budget -= n
	c.buf = normalizeText(c.buf[:0], s[:n])
	c.windows = c.windows[:0]
	b := c.buf
	overflowIndex.scan(b, func(p *phrase, at span) bool {
		if p.veto {
			c.vetoed = true
			return false
		}
		c.positive = true
		c.addWindow(at, len(b))
		return true
	})
	if c.vetoed {
		return n
	}
	for _, w := range c.windows {
		if c.haveBest || c.windowBytes <= 0 {
			break
		}
		end := min(w.end, w.start+c.windowBytes)
		c.windowBytes -= end - w.start
		s, found := readSizes(b[w.start:end])
		switch {
		case !found:
		case s.used > 0 && s.limit > 0:
			c.best, c.haveBest = s, true
		case !c.havePartial:
			c.partial, c.havePartial = s, true
		}
	}
	return n
}

// addWindow records the text around an overflow phrase found at at, in a
// normalized text of length n, merging it with the previous window when they
// overlap.
func (c *classifier) addWindow(at span, n int) {
	w := span{max(at.start-windowContext, 0), min(at.end+windowContext, n)}
	if k := len(c.windows); k > 0 {
		last := &c.windows[k-1]
		if w.start <= last.end && w.end-last.start <= maxWindowSpan {
			last.end = max(last.end, w.end)
			return
		}
	}
	if len(c.windows) < maxWindowsPerText {
		c.windows = append(c.windows, w)
	}
}

// result turns what the walk found into ParseOverflow's answer.
func (c *classifier) result() (Overflow, bool) {
	if c.vetoed || !c.positive {
		return Overflow{}, false
	}
	s, found := c.best, c.haveBest
	if !found {
		s, found = c.partial, c.havePartial
	}
	if !found {
		return Overflow{}, true
	}
	if s.output > 0 && s.limit > 0 && s.output >= s.limit {
		// The reply reservation alone fills the window: an output-size
		// error in overflow words. Trimming cannot fix it.
		return Overflow{}, false
	}
	ov := Overflow{Used: min(s.used, maxTokenCount), Limit: s.limit}
	if s.limit > 0 {
		ov.Limit = s.limit - s.output
	}
	return ov, true
}
