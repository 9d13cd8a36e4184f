package storetest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/histrim/history"
)

// Stall is how a benchmark's store misbehaves.
type Stall struct {
	// Name names the sub-benchmark.
	Name string
	// Set makes the store misbehave, through the proxy in front of it.
	Set func(p *Proxy)
	// Deadline is the context's of each request; 0 for none (the store's
	// Timeout is the bound).
	Deadline time.Duration
}

// Stalls are the misbehaviours BenchmarkStalls measures: none, a server
// that answers after 2 s under a 300 ms deadline, a hung one and a dead
// one (these two bounded by the store's Timeout alone).
func Stalls() []Stall {
	return []Stall{
		{Name: "healthy", Set: func(*Proxy) {}},
		{Name: "slow 2s, deadline 300ms", Set: func(p *Proxy) { p.Delay(2 * time.Second) }, Deadline: 300 * time.Millisecond},
		{Name: "hung", Set: (*Proxy).Hang},
		{Name: "dead", Set: (*Proxy).Kill},
	}
}

// BenchStalls measures, per request, what a Conversations trim (the
// trigger policy, elided results to the store's recall Store) costs when
// the store misbehaves as st says, with stores opened by b.Open (whose
// Timeout is bound, when the request has no deadline). Each iteration is
// one request of a 40-turn session, checked (a valid request, its latest
// message sent); the next iteration sends the next request. It reports
// the requests' p50, p99 and longest time in milliseconds, the p99 of the
// same requests trimmed by a plain Trimmer (what a trim costs without a
// store), and over-ms: the most any request took past its bound (the
// deadline or bound) plus its own trim's time.
func BenchStalls(b *testing.B, bk Backend, st Stall, bound time.Duration) {
	p := NewProxy(b, bk.Addr)
	s := bk.Open(b, p.Addr, Namespace(), 0)
	st.Set(p)
	b.Cleanup(p.Up) // before the store's own clean-up, which needs the server
	if st.Deadline > 0 {
		bound = min(bound, st.Deadline)
	}
	reqs := Requests(Session(40, 9))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	plain := func() *history.Trimmer {
		return history.NewTrimmer(triggerPolicy(history.NewMemoryStore(), clock, nil)...)
	}
	var convs *history.Conversations
	var tr *history.Trimmer
	var took, trims []time.Duration
	over := time.Duration(0)
	i, round := 0, 0
	for b.Loop() {
		if i%len(reqs) == 0 {
			convs = history.NewConversations(s, triggerPolicy(s.Recall(""), clock, nil)...)
			tr = plain()
			round++
		}
		req := reqs[i%len(reqs)]
		now = now.Add(time.Minute)
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if st.Deadline > 0 {
			ctx, cancel = context.WithTimeout(ctx, st.Deadline)
		}
		start := time.Now()
		res, err := convs.Trim(ctx, "bench-"+strconv.Itoa(round), req, budget)
		d := time.Since(start)
		cancel()
		checkRequest(b, i, req, res, err, map[string]string{})
		start = time.Now()
		_, _ = tr.Trim(req, budget)
		t := time.Since(start)
		took, trims = append(took, d), append(trims, t)
		over = max(over, d-bound-t)
		i++
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	slices.Sort(took)
	slices.Sort(trims)
	b.ReportMetric(ms(pct(took, 50)), "p50-ms")
	b.ReportMetric(ms(pct(took, 99)), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
	b.ReportMetric(ms(pct(trims, 99)), "trim-p99-ms")
	b.ReportMetric(ms(max(over, 0)), "over-ms")
	b.ReportMetric(0, "ns/op")
}

// pct returns the p-th percentile of sorted.
func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}
