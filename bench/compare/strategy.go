package compare

import (
	"time"

	htrpc "github.com/histrim/history/frameworks/trpc"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// Strategy returns the model.TailoringStrategy of
// github.com/histrim/history/frameworks/trpc with our side's counter for c
// (the mirror of the peer's, so both count every message alike): what a
// trpc-agent-go user gets by swapping the strategy option. Unlike Ours, it
// works on the peer's messages, so its time includes converting them.
func Strategy(c Counting) model.TailoringStrategy {
	return htrpc.NewStrategy(htrpc.Config{Counter: c.Counter()})
}

// MeasureStrategy is Measure with Strategy(in.Count) on our side: both
// sides are model.TailoringStrategy values trimming in.Peer through
// TailorMessages, interleaved. The Strategy returns a
// *history.BudgetError with its best effort when the latest turn alone
// does not fit; that is not a failure here.
func MeasureStrategy(in Input, total time.Duration) Measurement {
	ours, peer := Strategy(in.Count), Peer(in.Count)
	return measure(func() {
		if out, _ := PeerTrim(ours, in.Peer, in.Budget); len(out) == 0 {
			panic("the strategy returned nothing")
		}
	}, func() {
		if _, err := PeerTrim(peer, in.Peer, in.Budget); err != nil {
			panic(err)
		}
	}, total)
}

// StrategyOutputs runs Strategy(in.Count) and the peer once on in.Peer and
// inspects their outputs.
func StrategyOutputs(in Input) (ours, peer Check, oursErr, peerErr error) {
	o, oursErr := PeerTrim(Strategy(in.Count), in.Peer, in.Budget)
	p, peerErr := PeerTrim(Peer(in.Count), in.Peer, in.Budget)
	c := in.Count.Counter()
	return Inspect(in.Ours, FromPeer(o), in.Budget, c), Inspect(in.Ours, FromPeer(p), in.Budget, c), oursErr, peerErr
}
