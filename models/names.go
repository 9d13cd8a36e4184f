package models

import "strings"

// maxName bounds the names Lookup reads: no model name is this long, and a
// longer one is unknown without further work.
const maxName = 512

// index maps every canonical name and alias of the table, lowercased, to
// its row. It is built once and only read afterwards.
var index = buildIndex(table)

func buildIndex(rows []row) map[string]*row {
	idx := make(map[string]*row, 3*len(rows))
	for i := range rows {
		r := &rows[i]
		for _, n := range append([]string{r.name}, r.aliases...) {
			n = strings.ToLower(n)
			if _, dup := idx[n]; !dup { // the table test forbids duplicates
				idx[n] = r
			}
		}
	}
	return idx
}

// rewrites turn the ways providers, clouds and routers spell a model into
// the table's names. resolve applies them in order, each to the result of
// the one before, and looks the name up after each: the first exact match
// wins. None matches by prefix.
var rewrites = []func(string) string{
	lastSegment,
	fineTuneBase,
	routingSuffix,
	bedrockID,
	vertexVersion,
	claudeDots,
}

// resolve finds the row for name.
func resolve(name string) (*row, bool) {
	s := strings.ToLower(strings.TrimSpace(name))
	if s == "" || len(s) > maxName {
		return nil, false
	}
	if r, ok := index[s]; ok {
		return r, true
	}
	for _, rewrite := range rewrites {
		s = rewrite(s)
		if r, ok := index[s]; ok {
			return r, true
		}
	}
	return nil, false
}

// lastSegment keeps what follows the last "/": the model of a router slug
// ("openai/gpt-4o", "openrouter/anthropic/claude-3.5-sonnet"), of a Vertex
// or Gemini resource path (".../publishers/google/models/gemini-2.5-pro",
// "models/gemini-2.5-pro") and of a Bedrock ARN
// ("arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-...").
func lastSegment(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// fineTuneBase reads the base model of an OpenAI fine-tune,
// "ft:gpt-4o-mini-2024-07-18:org:suffix:id": a fine-tune has its base
// model's window and output limit.
func fineTuneBase(s string) string {
	rest, ok := strings.CutPrefix(s, "ft:")
	if !ok {
		return s
	}
	base, _, _ := strings.Cut(rest, ":")
	return base
}

// routingSuffixes are OpenRouter's model variants that change how a
// request is routed or whether the model thinks, not the model or its
// limits. ":free" and ":extended" are not among them: those variants are
// served by other endpoints with other limits (use Discover).
var routingSuffixes = []string{":nitro", ":floor", ":online", ":exacto", ":beta", ":thinking"}

func routingSuffix(s string) string {
	for _, suf := range routingSuffixes {
		if t, ok := strings.CutSuffix(s, suf); ok {
			return t
		}
	}
	return s
}

// bedrockGeos are the prefixes of Bedrock's cross-region inference
// profiles ("us.anthropic.claude-...", "global.anthropic.claude-...").
var bedrockGeos = []string{"us.", "eu.", "apac.", "jp.", "au.", "ca.", "us-gov.", "global."}

// bedrockVendors are the provider prefixes of Bedrock model ids.
var bedrockVendors = []string{"anthropic.", "meta.", "mistral.", "deepseek.", "openai.", "qwen."}

// bedrockID reads a Bedrock model id: an optional cross-region prefix, the
// vendor prefix, the model, and an optional version suffix ("-v1:0",
// "-v2:0", "-v1"), which it drops. Names without a vendor prefix are left
// alone, so a "-v2" in another provider's name is never cut.
func bedrockID(s string) string {
	t := s
	for _, g := range bedrockGeos {
		if u, ok := strings.CutPrefix(t, g); ok {
			t = u
			break
		}
	}
	vendored := false
	for _, v := range bedrockVendors {
		if u, ok := strings.CutPrefix(t, v); ok {
			t, vendored = u, true
			break
		}
	}
	if !vendored {
		return s
	}
	return cutVersion(t)
}

// cutVersion drops a trailing "-v<digits>" or "-v<digits>:<digits>".
func cutVersion(s string) string {
	i := strings.LastIndex(s, "-v")
	if i < 0 {
		return s
	}
	v := s[i+2:]
	major, minor, hasMinor := strings.Cut(v, ":")
	if !digits(major) || (hasMinor && !digits(minor)) {
		return s
	}
	return s[:i]
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// vertexVersion reads Vertex AI's "model@version" as the provider's dated
// id: "claude-sonnet-4@20250514" is "claude-sonnet-4-20250514".
func vertexVersion(s string) string {
	if strings.Count(s, "@") != 1 {
		return s
	}
	return strings.Replace(s, "@", "-", 1)
}

// claudeDots reads the dotted versions gateways write for Claude models
// ("claude-sonnet-4.5", "claude-3.5-sonnet") as Anthropic's hyphenated
// ids; Anthropic's ids never contain a dot.
func claudeDots(s string) string {
	if !strings.HasPrefix(s, "claude-") {
		return s
	}
	return strings.ReplaceAll(s, ".", "-")
}
