// This file owns the price model of a Trimmer's events: what a maintenance
// point rewrites in the provider's prompt cache, and what the request is
// expected to bill.

package history

import "hash/maphash"

// Prices are a provider's prompt-cache prices, in multiples of its price
// for an uncached input token. Set them with [WithPrices].
type Prices struct {
	// Read is the price of an input token read from the cache.
	Read float64
	// Write is the price of an input token the provider processes and
	// writes to the cache: 1 where writes cost what uncached input does.
	Write float64
}

// Price presets, as the providers publish them (docs/prompt-caching.md has
// the sources). Prices change by model: check yours.
var (
	// AnthropicPrices: reads at 0.1x, writes to the 5-minute cache at 1.25x.
	AnthropicPrices = Prices{Read: 0.1, Write: 1.25}
	// AnthropicPrices1h: writes to the 1-hour cache cost 2x.
	AnthropicPrices1h = Prices{Read: 0.1, Write: 2}
	// OpenAIPrices: cached input at 0.1x (GPT-5 family and later; gpt-4o
	// bills 0.5x), writes at no extra cost.
	OpenAIPrices = Prices{Read: 0.1, Write: 1}
	// GeminiPrices: implicit caching on Gemini 2.5 and 3 bills cached
	// input at 0.1x, writes at no extra cost.
	GeminiPrices = Prices{Read: 0.1, Write: 1}
)

// promptKey identifies a message of a prompt by what the provider sees: a
// hash of everything the message carries (role, content, parts, calls,
// ids, name, kind), as sent (placeholders and cleared arguments
// included). Two prompts share a cached prefix exactly as far as their
// keys agree, so an edit to a message already sent (a new system prompt)
// counts as a rewrite from that message on.
type promptKey uint64

// promptSeed seeds the hashes of promptKey; keys are compared within the
// process only.
var promptSeed = maphash.MakeSeed()

// promptKeys returns the keys of res's messages.
func promptKeys(res *Result) []promptKey {
	keys := make([]promptKey, len(res.Messages))
	var h maphash.Hash
	h.SetSeed(promptSeed)
	for j := range res.Messages {
		keys[j] = keyOf(&h, &res.Messages[j])
	}
	return keys
}

// keyOf hashes m with h: every field, each ended by a separator so that no
// two messages share a stream.
func keyOf(h *maphash.Hash, m *Message) promptKey {
	h.Reset()
	str := func(s string) {
		h.WriteString(s)
		h.WriteByte(0)
	}
	num := func(n int64) {
		var b [8]byte
		for i := range b {
			b[i] = byte(n >> (8 * i))
		}
		h.Write(b[:])
	}
	str(string(m.Role))
	str(m.Content)
	str(m.ToolCallID)
	str(m.Name)
	str(string(m.Kind))
	num(int64(len(m.Parts)))
	for i := range m.Parts {
		p := &m.Parts[i]
		str(string(p.Type))
		str(p.Text)
		str(p.Detail)
		str(p.MIMEType)
		num(int64(p.Tokens))
		num(int64(p.Width))
		num(int64(p.Height))
		num(p.Size)
	}
	num(int64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		str(c.ID)
		str(c.Name)
		str(c.Arguments)
	}
	return promptKey(h.Sum64())
}

// rewritten returns the tokens of the prompt from its first message that
// differs from prev (counts are the prompt's, by position; nil prev means
// no previous prompt, all of it).
func rewritten(prev, keys []promptKey, counts []int) int {
	j := 0
	if prev != nil {
		for j < len(keys) && j < len(prev) && keys[j] == prev[j] {
			j++
		}
	}
	n := 0
	for _, c := range counts[min(j, len(counts)):] {
		n = satAdd(n, c)
	}
	return n
}
