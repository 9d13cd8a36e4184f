package compare

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	history "github.com/histrim/history"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// Input is one benchmark input, in both message types.
type Input struct {
	Name   string
	Ours   []history.Message
	Peer   []model.Message
	Budget int
	Total  int // tokens of the whole input under the counter
	Count  Counting
}

// NewInput converts msgs for the peer and sets the budget to
// fraction*total under c, a budget that forces a real trim for
// fraction < 1.
func NewInput(name string, msgs []history.Message, fraction float64, c Counting) Input {
	total := history.Estimate(msgs, c.Counter())
	return Input{
		Count:  c,
		Name:   name,
		Ours:   msgs,
		Peer:   ToPeer(msgs),
		Budget: max(int(float64(total)*fraction), 1),
		Total:  total,
	}
}

// BenchOurs returns the benchmark body of our side on in.
func BenchOurs(in Input) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Ours(in.Ours, in.Budget, in.Count); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchPeer returns the benchmark body of the peer on in.
func BenchPeer(in Input) func(*testing.B) {
	s := Peer(in.Count)
	return func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := PeerTrim(s, in.Peer, in.Budget); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// Side is one trimmer's measurement on one input.
type Side struct {
	// NsPerOp is wall time; CPUNsPerOp is the process's user+system CPU
	// time per operation, which includes garbage-collection work done on
	// other cores and is steadier than wall time on a shared machine.
	NsPerOp     float64
	CPUNsPerOp  float64
	AllocsPerOp int64
	BytesPerOp  int64
}

// Measurement is the result of Measure.
type Measurement struct {
	Ours, Peer Side
	// Speedup and CPUSpeedup are peer time / our time, in wall and CPU
	// time: above 1 means ours is faster.
	Speedup, CPUSpeedup float64
}

// Measure times both sides on in. After a warm-up it alternates the two
// (a batch of ours, then a batch of the peer's, each about 100 ms, repeated
// for about total) so that the noise of a shared machine falls evenly on
// both, and sums each side's wall and CPU time. Each batch ends with a
// forced garbage collection that is timed with it: without it, the
// collection of one side's garbage would run, and be billed, during the
// other side's batch. Allocations are measured separately, one call per
// side after a garbage collection.
func Measure(in Input, total time.Duration) Measurement {
	peer := Peer(in.Count)
	ours := func() {
		if _, err := Ours(in.Ours, in.Budget, in.Count); err != nil {
			panic(err)
		}
	}
	theirs := func() {
		if _, err := PeerTrim(peer, in.Peer, in.Budget); err != nil {
			panic(err)
		}
	}
	return measure(ours, theirs, total)
}

// measure times ours and theirs as Measure describes.
func measure(ours, theirs func(), total time.Duration) Measurement {
	var m Measurement
	m.Ours.AllocsPerOp, m.Ours.BytesPerOp = allocs(ours)
	m.Peer.AllocsPerOp, m.Peer.BytesPerOp = allocs(theirs)

	// Batch sizes: about 100 ms of work per timed batch.
	batch := func(f func()) int {
		t0 := time.Now()
		f()
		return max(1, int(100*time.Millisecond/max(time.Since(t0), time.Microsecond)))
	}
	bo, bp := batch(ours), batch(theirs)
	var wallO, wallP, cpuO, cpuP time.Duration
	var nO, nP int
	timed := func(f func(), k int, wall, cpu *time.Duration, n *int) {
		c0, t0 := cpuTime(), time.Now()
		for range k {
			f()
		}
		runtime.GC()
		*wall += time.Since(t0)
		*cpu += cpuTime() - c0
		*n += k
	}
	for t0 := time.Now(); time.Since(t0) < total || nO == 0; {
		timed(ours, bo, &wallO, &cpuO, &nO)
		timed(theirs, bp, &wallP, &cpuP, &nP)
	}
	m.Ours.NsPerOp = float64(wallO.Nanoseconds()) / float64(nO)
	m.Ours.CPUNsPerOp = float64(cpuO.Nanoseconds()) / float64(nO)
	m.Peer.NsPerOp = float64(wallP.Nanoseconds()) / float64(nP)
	m.Peer.CPUNsPerOp = float64(cpuP.Nanoseconds()) / float64(nP)
	m.Speedup = m.Peer.NsPerOp / m.Ours.NsPerOp
	m.CPUSpeedup = m.Peer.CPUNsPerOp / m.Ours.CPUNsPerOp
	return m
}

// allocs returns the allocations and bytes per call of f, averaged over 5
// calls after two warm-up calls (no forced collection in between, which
// would empty the library's sync.Pools and count their refill).
func allocs(f func()) (int64, int64) {
	f()
	f()
	const n = 5
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range n {
		f()
	}
	runtime.ReadMemStats(&m1)
	return int64(m1.Mallocs-m0.Mallocs) / n, int64(m1.TotalAlloc-m0.TotalAlloc) / n
}

// Outputs runs both sides once on in and inspects their outputs.
func Outputs(in Input) (ours, peer Check, oursErr, peerErr error) {
	r, oursErr := Ours(in.Ours, in.Budget, in.Count)
	p, peerErr := PeerTrim(Peer(in.Count), in.Peer, in.Budget)
	c := in.Count.Counter()
	return Inspect(in.Ours, r.Messages, in.Budget, c), Inspect(in.Ours, FromPeer(p), in.Budget, c), oursErr, peerErr
}

// cpuTime returns the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
