// Package latency measures, in a benchmark, the time one request takes
// through an http.RoundTripper, for the benchmarks of the wire's Transport
// in package wire and in the adapters that register a codec with it, so
// that each reports the same figures the same way.
package latency

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// Requests runs b's loop over POST requests of body to url through rt,
// timing each from the request's making to the end of its answer, or to
// the answer's first byte when first is true (a stream's time to first
// byte; the rest is read untimed), and reports the p50 and p99 of one
// request's time (p50-µs, p99-µs) besides ns/op, with allocations and
// body's size as bytes per operation. An error of rt fails b.
func Requests(b *testing.B, rt http.RoundTripper, url string, body []byte, first bool) {
	b.Helper()
	Cycle(b, rt, url, [][]byte{body}, first)
}

// Cycle is Requests over bodies in turn, from the first again after the
// last (a conversation that grows by what each body appends, and starts
// over), their mean size as bytes per operation.
func Cycle(b *testing.B, rt http.RoundTripper, url string, bodies [][]byte, first bool) {
	b.Helper()
	if len(bodies) == 0 {
		b.Fatal("latency: no bodies")
	}
	b.ReportAllocs()
	total := 0
	for _, body := range bodies {
		total += len(body)
	}
	b.SetBytes(int64(total / len(bodies)))
	var times []time.Duration
	var one [1]byte
	k := 0
	for b.Loop() {
		body := bodies[k%len(bodies)]
		k++
		start := time.Now()
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		if first {
			if _, err := resp.Body.Read(one[:]); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if !first {
			times = append(times, time.Since(start))
		}
	}
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
}
