package compare

import (
	"testing"

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
	NsPerOp     float64
	AllocsPerOp int64
	BytesPerOp  int64
}

func side(r testing.BenchmarkResult) Side {
	return Side{
		NsPerOp:     float64(r.T.Nanoseconds()) / float64(max(r.N, 1)),
		AllocsPerOp: r.AllocsPerOp(),
		BytesPerOp:  r.AllocedBytesPerOp(),
	}
}

// Measure times both sides on in, alternating rounds times (ours, peer,
// ours, peer, ...) so that machine noise hits both, and returns for each
// side the round with the median time.
func Measure(in Input, rounds int) (ours, peer Side) {
	rounds = max(rounds, 1)
	var os, ps []Side
	for range rounds {
		os = append(os, side(testing.Benchmark(BenchOurs(in))))
		ps = append(ps, side(testing.Benchmark(BenchPeer(in))))
	}
	return median(os), median(ps)
}

func median(s []Side) Side {
	for i := 1; i < len(s); i++ { // insertion sort by time; a handful of rounds
		for j := i; j > 0 && s[j].NsPerOp < s[j-1].NsPerOp; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// Outputs runs both sides once on in and inspects their outputs.
func Outputs(in Input) (ours, peer Check, oursErr, peerErr error) {
	r, oursErr := Ours(in.Ours, in.Budget, in.Count)
	p, peerErr := PeerTrim(Peer(in.Count), in.Peer, in.Budget)
	c := in.Count.Counter()
	return Inspect(in.Ours, r.Messages, in.Budget, c), Inspect(in.Ours, FromPeer(p), in.Budget, c), oursErr, peerErr
}
