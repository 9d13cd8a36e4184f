package cachesim

import history "github.com/histrim/history"

// Meter bills the requests of one conversation, in order, under the price
// model (see the package doc): each prompt against the one before it.
// Replay, ReplaySummaries and bench/quality bill through it. The zero
// value bills at DefaultPrices with Counter.
type Meter struct {
	// Prices are the multipliers (zero: DefaultPrices); Counter counts the
	// prompts (nil: Counter).
	Prices  Prices
	Counter history.Counter

	prev      []history.Message
	prevCache bool
}

// Bill is what one request bills.
type Bill struct {
	// Prefix is the number of leading messages the prompt shares with the
	// previous one; Cached reports that they were read from the cache (the
	// previous prompt was cached, and has not expired).
	Prefix int
	Cached bool
	// Rewrite reports a prefix rewrite: the prompt does not start with the
	// whole previous prompt.
	Rewrite bool
	// Read, Write and Uncached are the prompt's tokens by price class;
	// Billed their price-weighted sum in uncached-token units.
	Read, Write, Uncached int
	Billed                float64
}

// Add bills prompt, of tokens (its count by the Meter's Counter), sent
// after the previous prompt Add was given; expired reports that the cache
// expired in between (nothing is read).
func (m *Meter) Add(prompt []history.Message, tokens int, expired bool) Bill {
	p := m.Prices
	if p == (Prices{}) {
		p = DefaultPrices
	}
	c := m.Counter
	if c == nil {
		c = Counter
	}
	b := Bill{Prefix: commonPrefix(m.prev, prompt)}
	b.Rewrite = m.prev != nil && b.Prefix < len(m.prev)
	if tokens < MinCacheable {
		b.Uncached = tokens
		m.prevCache = false
		b.Billed = p.Uncached * float64(tokens)
	} else {
		if m.prevCache && !expired {
			b.Cached = true
			// Counts add up: what is not after the prefix is in it.
			b.Read = min(max(tokens-history.Estimate(prompt[b.Prefix:], c), 0), tokens)
		}
		b.Write = tokens - b.Read
		m.prevCache = true
		b.Billed = p.Read*float64(b.Read) + p.Write*float64(b.Write)
	}
	m.prev = prompt
	return b
}

// InCache reports whether the last prompt Add was given is in the cache
// (it was cacheable).
func (m *Meter) InCache() bool { return m.prevCache }
