package compare

import (
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history/bench/corpus"
)

// TestStrategySideBySide: frameworks/trpc's Strategy, given the peer's
// messages, keeps every pair, fits and keeps the last message, where the
// peer's HeadOut leaves calls unanswered (empty tool results dropped);
// and it keeps what TrimToRecentTurns keeps (the breadcrumb aside).
func TestStrategySideBySide(t *testing.T) {
	for _, fraction := range []float64{0.5, 0.1} {
		for _, c := range []Counting{Runes, Bytes} {
			in := NewInput("synthetic", synthetic(400), fraction, c)
			o, p, oe, pe := StrategyOutputs(in)
			if oe != nil || pe != nil {
				t.Fatalf("%v: errors: ours %v, peer %v", c, oe, pe)
			}
			if !o.Paired || !o.Fits || !o.KeepsLast {
				t.Errorf("%v at %.1f: strategy = %+v, want paired, fitting, keeping the last message", c, fraction, o)
			}
			if p.Paired {
				t.Errorf("%v at %.1f: peer = %+v, want broken pairs", c, fraction, p)
			}
			core, _, _, _ := Outputs(in)
			if o.Messages != core.Messages || o.Tokens != core.Tokens {
				t.Errorf("%v at %.1f: the strategy kept %d messages (%d tokens), TrimToRecentTurns %d (%d)", c, fraction, o.Messages, o.Tokens, core.Messages, core.Tokens)
			}
		}
	}
}

// BenchmarkStrategy times frameworks/trpc's Strategy and the peer on the
// peer's messages, on the 40,001-message corpus history, at a budget of
// 8,000 tokens and at half the input: run with
//
//	go test -run '^$' -bench Strategy -benchtime 2s ./compare
//
// (cmd/compare -strategy interleaves the two, which is steadier).
func BenchmarkStrategy(b *testing.B) {
	convs := corpusConvs(b)
	for _, c := range []Counting{Runes, Bytes} {
		for _, budget := range []int{8000, 0} {
			in := NewInput("40001", corpus.History(convs, 40_001), 0.5, c)
			name := strings.ReplaceAll(c.String(), "/", "per") + "/budget=half"
			if budget > 0 {
				in.Budget = budget
				name = strings.ReplaceAll(c.String(), "/", "per") + "/budget=" + strconv.Itoa(budget)
			}
			ours, peer := Strategy(c), Peer(c)
			b.Run(name+"/strategy", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					PeerTrim(ours, in.Peer, in.Budget)
				}
			})
			b.Run(name+"/peer", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					PeerTrim(peer, in.Peer, in.Budget)
				}
			})
		}
	}
}
