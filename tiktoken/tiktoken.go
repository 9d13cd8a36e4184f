// Package tiktoken counts tokens exactly for OpenAI-family models, offline.
//
// A *Counter implements history.Counter with the byte-pair encodings OpenAI
// publishes (cl100k_base, o200k_base, p50k_base, r50k_base). Its counts are
// token-identical to the reference tiktoken implementation for all ordinary
// text: the package tests check every message of the shared corpus of real
// agent transcripts against reference counts, with zero mismatches allowed.
// The one exception is deliberate and bounded: see Hostile input.
//
// # Offline
//
// The vocabularies are embedded in the binary (through
// github.com/pkoukk/tiktoken-go-loader, about 7 MB of data). Nothing is ever
// downloaded, no file is read or written, and no process-global state of
// github.com/pkoukk/tiktoken-go is touched: this package never calls its
// SetBpeLoader or GetEncoding, which download vocabularies over HTTP and
// replace other packages' loaders. Each encoding is built from the embedded
// ranks the first time New or ForModel asks for it, once per process, and
// shared by every caller afterwards (see docs/tokens.md for the measured
// first-use cost: tens to a few hundred milliseconds and several MB per
// encoding). Programs that only need estimates should use history.Heuristic()
// and not import this package at all.
//
// # Counting
//
// CountText counts a string as ordinary text: strings that look like special
// tokens (such as "<|endoftext|>") inside transcripts count as the text they
// are, never as one special token, which is how chat APIs treat message text.
// CountMessage adds OpenAI's documented chat framing, and CountRequest the
// reply priming, so that for plain text messages CountRequest equals the
// prompt_tokens an OpenAI chat completion reports. docs/tokens.md states the
// formula, including the rules for tool calls and non-text parts. Sums
// saturate at math.MaxInt instead of wrapping.
//
// # Hostile input
//
// Counting takes time linear in the input for every input, including
// binary data read as text, megabytes of one repeated character and other
// text no tokenizer was trained on. The reference tokenizer first splits
// text into pieces with a regular expression (words, runs of spaces, runs
// of punctuation) and then byte-pair-merges each piece, in time quadratic
// in the piece's length: a 100 KB run of spaces or of invalid UTF-8 is one
// piece and took seconds to a minute. This package bounds every repetition
// in the splitting expression to 256 characters, so that a longer run is
// split into pieces of at most 256 characters (516 where the expression
// chains two runs) before merging, and the work per byte is bounded. Text
// in which no piece of the reference split exceeds 256 characters, which
// is all ordinary prose, code and JSON, counts exactly as the reference;
// a longer run may count slightly differently from the reference, by at
// most one token per 256 characters in the tests (docs/tokens.md gives the
// measured deviations and throughput).
package tiktoken

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/histrim/history"
	tk "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Sentinel errors, wrapped with the offending name: test with errors.Is.
var (
	// ErrUnknownEncoding is returned by New for an encoding name this package
	// does not know.
	ErrUnknownEncoding = errors.New("history/tiktoken: unknown encoding")
	// ErrUnknownModel is returned by ForModel for a model name it cannot map
	// to an encoding.
	ErrUnknownModel = errors.New("history/tiktoken: unknown model")
)

// The encodings New accepts.
const (
	// O200kBase is the encoding of gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and the
	// o-series reasoning models.
	O200kBase = "o200k_base"
	// Cl100kBase is the encoding of gpt-4, gpt-3.5-turbo and the
	// text-embedding-3 models.
	Cl100kBase = "cl100k_base"
	// P50kBase is the encoding of text-davinci-002/003 and the Codex models.
	P50kBase = "p50k_base"
	// R50kBase is the encoding of GPT-3 (davinci, curie, babbage, ada).
	R50kBase = "r50k_base"
)

// Framing of OpenAI's chat format, as documented in the OpenAI Cookbook
// ("How to count tokens with tiktoken"): every message costs 3 tokens of
// framing plus its encoded role, an author name 1 more, and every request 3
// for the primed reply (<|start|>assistant<|message|>).
const (
	tokensPerMessage  = 3
	tokensPerName     = 1
	tokensPerToolCall = 3
	tokensPerReply    = 3
)

// Counter counts tokens exactly with one encoding. It implements
// history.Counter.
//
// A Counter is immutable and safe for concurrent use; New and ForModel return
// the same *Counter for the same encoding every time. The zero Counter (and a
// nil *Counter) counts with o200k_base.
type Counter struct {
	name  string
	enc   *tk.Tiktoken
	roles [4]int // token counts of system, user, assistant, tool
}

var _ history.Counter = (*Counter)(nil)

type spec struct {
	file    string // file name of the embedded vocabulary
	pattern string // pre-tokenization regular expression
	special map[string]int
	nVocab  int
}

// The pre-tokenization patterns and special tokens are those of the
// reference implementation (tiktoken_ext/openai_public.py). build bounds
// the patterns' repetitions with boundRepetitions before compiling them.
var specs = map[string]spec{
	O200kBase: {
		file: "o200k_base.tiktoken",
		pattern: strings.Join([]string{
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
			`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`,
			`\p{N}{1,3}`,
			` ?[^\s\p{L}\p{N}]+[\r\n/]*`,
			`\s*[\r\n]+`,
			`\s+(?!\S)`,
			`\s+`,
		}, "|"),
		special: map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
	},
	Cl100kBase: {
		file:    "cl100k_base.tiktoken",
		pattern: `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		special: map[string]int{
			"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
			"<|fim_suffix|>": 100260, "<|endofprompt|>": 100276,
		},
	},
	P50kBase: {
		file:    "p50k_base.tiktoken",
		pattern: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
		special: map[string]int{"<|endoftext|>": 50256},
		nVocab:  50281,
	},
	R50kBase: {
		file:    "r50k_base.tiktoken",
		pattern: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
		special: map[string]int{"<|endoftext|>": 50256},
		nVocab:  50257,
	},
}

// maxRepeat is the most characters one repetition (x* or x+) of a
// pre-tokenization pattern may match; boundRepetitions rewrites the
// reference patterns with it.
//
// Why: tiktoken-go byte-pair-merges each piece of the pre-tokenization in
// time quadratic in the piece's length (each of up to n merges scans the
// whole piece), and the reference patterns put a run of spaces, letters,
// punctuation, invalid UTF-8 (U+FFFD) or, in p50k and r50k, digits into one
// piece however long it is: 100 KB of "\xff\xfe" took 46 s. With every
// repetition bounded, no piece exceeds 2*maxRepeat+4 characters (the longest
// alternative chains two repetitions, an optional character and a
// contraction), so both the merging and the regular expression's
// backtracking do bounded work per character.
//
// Why 256: the longest piece in the shared corpus of real transcripts is
// 174 characters (a run of dots in test output; then markdown table rules of
// 164), so 256 keeps every corpus count exact with room to spare, and runs
// of spaces split into 256-character pieces still count exactly, since the
// longest space token in cl100k and o200k is 128 spaces. A larger bound costs
// throughput on hostile input in proportion; docs/tokens.md has the
// measurements.
const maxRepeat = 256

// boundRepetitions returns pattern with every unbounded repetition bounded
// by n: x* becomes x{0,n} and x+ becomes x{1,n}; bounded repetitions (x?,
// x{1,3}) are kept. It reads the syntax the pre-tokenization patterns use:
// escapes (\s, \p{L}) and character classes, inside which * and + are
// literal. On text in which no repetition of the reference pattern matches
// more than n characters, the bounded pattern splits exactly as the
// reference does: a backtracking matcher tries the same alternatives and
// repetition counts in the same order, minus the counts above n.
func boundRepetitions(pattern string, n int) string {
	limit := strconv.Itoa(n) + "}"
	var b strings.Builder
	inClass, escaped := false, false
	for _, r := range pattern {
		switch {
		case escaped:
			escaped = false
		case r == '\\':
			escaped = true
		case inClass:
			inClass = r != ']'
		case r == '[':
			inClass = true
		case r == '*':
			b.WriteString("{0," + limit)
			continue
		case r == '+':
			b.WriteString("{1," + limit)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// boundedPattern returns the encoding's pre-tokenization pattern with every
// repetition bounded by maxRepeat: the pattern a Counter splits text with.
func (s spec) boundedPattern() string { return boundRepetitions(s.pattern, maxRepeat) }

// counters builds each encoding at most once per process, on first use.
// The map itself is never written after package initialisation.
var counters = func() map[string]func() (*Counter, error) {
	m := make(map[string]func() (*Counter, error), len(specs))
	for name := range specs {
		m[name] = sync.OnceValues(func() (*Counter, error) { return build(name) })
	}
	return m
}()

// build constructs the counter for one encoding from the embedded
// vocabulary. It touches no global state of tiktoken-go.
func build(name string) (*Counter, error) {
	s := specs[name]
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(s.file)
	if err != nil {
		return nil, fmt.Errorf("history/tiktoken: loading %s: %w", name, err)
	}
	pattern := s.boundedPattern()
	bpe, err := tk.NewCoreBPE(ranks, s.special, pattern)
	if err != nil {
		return nil, fmt.Errorf("history/tiktoken: building %s: %w", name, err)
	}
	set := make(map[string]any, len(s.special))
	for k := range s.special {
		set[k] = true
	}
	enc := &tk.Encoding{Name: name, PatStr: pattern, MergeableRanks: ranks, SpecialTokens: s.special, ExplicitNVocab: s.nVocab}
	c := &Counter{name: name, enc: tk.NewTiktoken(bpe, enc, set)}
	for i, r := range [...]history.Role{history.RoleSystem, history.RoleUser, history.RoleAssistant, history.RoleTool} {
		c.roles[i] = len(c.enc.EncodeOrdinary(string(r)))
	}
	return c, nil
}

// New returns the exact counter for an encoding: "o200k_base",
// "cl100k_base", "p50k_base" or "r50k_base". The first call for an encoding
// builds it from the embedded vocabulary (see the package documentation for
// the cost); later calls return the same *Counter at once. It is safe for
// concurrent use: concurrent first calls build the encoding once.
//
// An unknown name returns an error wrapping ErrUnknownEncoding.
func New(encoding string) (*Counter, error) {
	f, ok := counters[encoding]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownEncoding, encoding)
	}
	return f()
}

// modelEncodings maps exact model names to encodings; modelPrefixes maps
// name prefixes (dated snapshots, size variants, fine-tunes), longest first.
// Both follow the reference implementation's tiktoken/model.py, plus Azure
// deployment names and the gpt-5.x family.
var (
	modelEncodings = map[string]string{
		// reasoning
		"o1": O200kBase, "o3": O200kBase, "o4-mini": O200kBase,
		// chat
		"gpt-5": O200kBase, "gpt-4.5": O200kBase, "gpt-4.1": O200kBase, "gpt-4o": O200kBase,
		"gpt-4": Cl100kBase, "gpt-3.5-turbo": Cl100kBase, "gpt-3.5": Cl100kBase, "gpt-35-turbo": Cl100kBase,
		// base
		"davinci-002": Cl100kBase, "babbage-002": Cl100kBase,
		// embeddings
		"text-embedding-ada-002": Cl100kBase, "text-embedding-3-small": Cl100kBase, "text-embedding-3-large": Cl100kBase,
		// legacy completions and code
		"text-davinci-003": P50kBase, "text-davinci-002": P50kBase, "code-davinci-002": P50kBase,
		"code-davinci-001": P50kBase, "code-cushman-002": P50kBase, "code-cushman-001": P50kBase,
		"davinci-codex": P50kBase, "cushman-codex": P50kBase,
		"text-davinci-001": R50kBase, "text-curie-001": R50kBase, "text-babbage-001": R50kBase,
		"text-ada-001": R50kBase, "davinci": R50kBase, "curie": R50kBase, "babbage": R50kBase, "ada": R50kBase,
	}
	modelPrefixes = sortedPrefixes(map[string]string{
		"o1-": O200kBase, "o3-": O200kBase, "o4-mini-": O200kBase,
		"gpt-5-": O200kBase, "gpt-5.": O200kBase, "gpt-4.5-": O200kBase, "gpt-4.1-": O200kBase,
		"chatgpt-4o-": O200kBase, "gpt-4o-": O200kBase,
		// gpt-oss uses o200k_harmony: o200k_base plus special tokens, so
		// identical for ordinary text.
		"gpt-oss-": O200kBase,
		"gpt-4-":   Cl100kBase, "gpt-3.5-turbo-": Cl100kBase, "gpt-35-turbo-": Cl100kBase,
		// fine-tuned models
		"ft:gpt-4o": O200kBase, "ft:gpt-4.1": O200kBase, "ft:gpt-4": Cl100kBase,
		"ft:gpt-3.5-turbo": Cl100kBase, "ft:davinci-002": Cl100kBase, "ft:babbage-002": Cl100kBase,
	})
)

type prefix struct{ prefix, encoding string }

func sortedPrefixes(m map[string]string) []prefix {
	ps := make([]prefix, 0, len(m))
	for p, e := range m {
		ps = append(ps, prefix{p, e})
	}
	sort.Slice(ps, func(i, j int) bool {
		if len(ps[i].prefix) != len(ps[j].prefix) {
			return len(ps[i].prefix) > len(ps[j].prefix)
		}
		return ps[i].prefix < ps[j].prefix
	})
	return ps
}

// EncodingForModel returns the name of the encoding a model uses, and
// whether the model is known. Matching ignores case and a leading "openai/"
// provider prefix; an exact name wins over a prefix, and a longer prefix
// over a shorter one ("gpt-4o-mini" is o200k_base, "gpt-4-turbo" cl100k_base).
func EncodingForModel(model string) (string, bool) {
	m := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(model)), "openai/")
	if e, ok := modelEncodings[m]; ok {
		return e, true
	}
	for _, p := range modelPrefixes {
		if strings.HasPrefix(m, p.prefix) {
			return p.encoding, true
		}
	}
	return "", false
}

// ForModel returns the exact counter for a model name: "gpt-4o",
// "gpt-4o-2024-08-06", "gpt-4.1-mini", "gpt-5", "o3", "o4-mini",
// "gpt-4", "gpt-3.5-turbo-0125", fine-tunes ("ft:gpt-4o-mini:org::id") and
// so on (see EncodingForModel for the matching rules). It is New of the
// model's encoding, with the same once-per-process cost.
//
// A model it cannot map returns an error wrapping ErrUnknownModel.
func ForModel(model string) (*Counter, error) {
	e, ok := EncodingForModel(model)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownModel, model)
	}
	return New(e)
}

// self returns the usable counter behind c: c itself, or the o200k_base
// counter for a zero or nil Counter.
func (c *Counter) self() *Counter {
	if c != nil && c.enc != nil {
		return c
	}
	d, err := New(O200kBase)
	if err != nil {
		// The vocabulary is embedded in the binary: failing to parse it
		// is a build defect, not a condition callers can handle.
		panic(err)
	}
	return d
}

// Encoding returns the name of the counter's encoding, such as "o200k_base".
func (c *Counter) Encoding() string { return c.self().name }

// CountText returns the number of tokens s encodes to, as ordinary text:
// special-token strings inside s count as the text they are. Invalid UTF-8
// is counted as if each bad byte were U+FFFD, which is what a JSON request
// would carry. The empty string is 0 tokens. It takes time linear in
// len(s); a run of one kind of character longer than 256 is counted in
// pieces of at most 256 (see Hostile input in the package documentation).
func (c *Counter) CountText(s string) int {
	if s == "" {
		return 0
	}
	return len(c.self().enc.EncodeOrdinary(s))
}

// CountMessage returns the tokens m costs in a chat request, framing
// included, by OpenAI's documented chat formula:
//
//	3 + tokens(role) + tokens(content)
//	+ 1 + tokens(name)                          if Name is set
//	+ Σ over tool calls: 3 + tokens(name) + tokens(arguments)
//	+ Σ over parts: history.PartTokens(part, c.CountText)
//
// Tool-call IDs, ToolCallID and Kind are not counted (chat templates render
// a tool call by its function name, not its ID). Parts follow the same rules
// as history.Heuristic(): a known Tokens value is used as given, text and
// reasoning parts count their text, images by their dimensions and files by
// their size.
//
// The sum saturates at math.MaxInt (a Part's Tokens comes from the caller
// and may be anything); a negative part cost counts as zero.
func (c *Counter) CountMessage(m history.Message) int {
	c = c.self()
	n := tokensPerMessage + c.roleTokens(m.Role) + c.CountText(m.Content)
	if m.Name != "" {
		n += tokensPerName + c.CountText(m.Name)
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		n = satAdd(n, tokensPerToolCall+c.CountText(tc.Name)+c.CountText(tc.Arguments))
	}
	for i := range m.Parts {
		n = satAdd(n, history.PartTokens(m.Parts[i], c.CountText))
	}
	return n
}

// CountRequest returns the prompt tokens of a chat request made of msgs:
// the sum of CountMessage plus the 3 tokens every reply is primed with. For
// plain text messages (no tool calls or parts) this equals the
// usage.prompt_tokens OpenAI's chat completions API reports for models of
// the counter's encoding; tool definitions (the tools parameter) are not
// included. An empty msgs is 3 tokens. The sum saturates at math.MaxInt.
func (c *Counter) CountRequest(msgs []history.Message) int {
	c = c.self()
	n := tokensPerReply
	for i := range msgs {
		n = satAdd(n, c.CountMessage(msgs[i]))
	}
	return n
}

// satAdd returns n+k for a non-negative n, saturated at math.MaxInt; a
// negative k counts as zero. Text counts cannot overflow (a token is at
// least one byte of a string in memory), but part costs come from callers.
func satAdd(n, k int) int {
	if k <= 0 {
		return n
	}
	if n > math.MaxInt-k {
		return math.MaxInt
	}
	return n + k
}

func (c *Counter) roleTokens(r history.Role) int {
	switch r {
	case history.RoleSystem:
		return c.roles[0]
	case history.RoleUser:
		return c.roles[1]
	case history.RoleAssistant:
		return c.roles[2]
	case history.RoleTool:
		return c.roles[3]
	}
	return c.CountText(string(r))
}
