// This file owns the price model of a Trimmer's events: what a maintenance
// point rewrites in the provider's prompt cache, and what the request is
// expected to bill.

package history

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
// counts as a rewrite from that message on. The hash is stable across
// processes (a Trimmer's saved state holds keys).
type promptKey uint64

// promptKeys returns the keys of res's messages.
func promptKeys(res *Result) []promptKey {
	keys := make([]promptKey, len(res.Messages))
	for j := range res.Messages {
		keys[j] = promptKey(messageSum(&res.Messages[j]))
	}
	return keys
}

// carriedKeys returns the keys of res, the prompt of a reused plan, taking
// from prev (the keys of the previous prompt, made with the same plan, whose
// Result.Kept was prevKept) the key of each message before stable that sits
// where it sat then and comes from the same input message; the rest are
// hashed. A reused plan sends the messages it sent before as they were
// (its anchors checked that), so only the messages new since, the notices
// and the previous prompt's last step (whose calls the sweep may have
// stripped while their results were missing) are read again. An edit to an
// older message that the anchors do not see is seen by the next new plan,
// which hashes its whole prompt.
func carriedKeys(res *Result, prev []promptKey, prevKept []int, stable int) []promptKey {
	keys := make([]promptKey, len(res.Messages))
	for j := range res.Messages {
		if j < stable && j < len(prev) && j < len(prevKept) && j < len(res.Kept) &&
			res.Kept[j] >= 0 && prevKept[j] == res.Kept[j] {
			keys[j] = prev[j]
			continue
		}
		keys[j] = promptKey(messageSum(&res.Messages[j]))
	}
	return keys
}

// keptFor returns kept when keys were made (an event needs them), else nil.
func keptFor(keys []promptKey, kept []int) []int {
	if keys == nil {
		return nil
	}
	return kept
}

// stableEnd returns the position of the last assistant message of msgs
// (0 when there is none): the keys of the messages before it can be
// carried over to the next prompt of the same plan.
func stableEnd(msgs []Message) int {
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].Role == RoleAssistant {
			return j
		}
	}
	return 0
}

// messageSum returns a stable 64-bit hash of every field of m, each ended
// so that no two messages share a stream.
func messageSum(m *Message) uint64 {
	var h sum64
	h.str(string(m.Role))
	h.str(m.Content)
	h.str(m.ToolCallID)
	h.str(m.Name)
	h.str(string(m.Kind))
	h.num(int64(len(m.Parts)))
	for i := range m.Parts {
		p := &m.Parts[i]
		h.str(string(p.Type))
		h.str(p.Text)
		h.str(p.Detail)
		h.str(p.MIMEType)
		h.num(int64(p.Tokens))
		h.num(int64(p.Width))
		h.num(int64(p.Height))
		h.num(p.Size)
	}
	h.num(int64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		h.str(c.ID)
		h.str(c.Name)
		h.str(c.Arguments)
	}
	return h.sum()
}

// sum64 is a small, stable hash: eight bytes at a time, each word mixed in
// with a multiply and a shift, so that it costs a fraction of a
// nanosecond a byte and gives the same value in every process.
type sum64 struct{ h uint64 }

const (
	sumSeed  = 0x9e3779b97f4a7c15
	sumPrime = 0xff51afd7ed558ccd
)

func (s *sum64) mix(w uint64) {
	s.h = (s.h ^ w ^ sumSeed) * sumPrime
	s.h ^= s.h >> 32
}

// str mixes in len(x) and x, eight bytes at a time.
func (s *sum64) str(x string) {
	s.mix(uint64(len(x)))
	for len(x) >= 8 {
		s.mix(uint64(x[0]) | uint64(x[1])<<8 | uint64(x[2])<<16 | uint64(x[3])<<24 |
			uint64(x[4])<<32 | uint64(x[5])<<40 | uint64(x[6])<<48 | uint64(x[7])<<56)
		x = x[8:]
	}
	var w uint64
	for i := len(x) - 1; i >= 0; i-- {
		w = w<<8 | uint64(x[i])
	}
	s.mix(w)
}

func (s *sum64) num(n int64) { s.mix(uint64(n)) }

// sum returns the hash, finalised.
func (s *sum64) sum() uint64 {
	h := s.h
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
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
