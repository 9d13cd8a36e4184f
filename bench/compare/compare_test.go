package compare

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	history "github.com/histrim/history"
	"github.com/histrim/history/bench/corpus"
	"trpc.group/trpc-go/trpc-agent-go/model"
)

// corpusConvs loads the shared corpus, or skips: benchmarks on real
// transcripts need it, and CI does not have it. HISTRIM_CORPUS overrides
// the directory.
func corpusConvs(b *testing.B) []corpus.Conversation {
	dir := corpus.DefaultDir
	if d := os.Getenv("HISTRIM_CORPUS"); d != "" {
		dir = d
	}
	convs, err := corpus.Load(dir)
	if err != nil {
		b.Skipf("corpus not available: %v", err)
	}
	return convs
}

// BenchmarkTrim times ours and the peer on the same corpus histories of
// 1k to 100k messages, budget half their tokens, with both counter pairs.
// Run with
//
//	go test -run '^$' -bench Trim -benchtime 2s ./compare
func BenchmarkTrim(b *testing.B) {
	convs := corpusConvs(b)
	for _, c := range []Counting{Runes, Bytes} {
		for _, n := range []int{1000, 10_000, 40_000, 100_000} {
			in := NewInput(strconv.Itoa(n), corpus.History(convs, n), 0.5, c)
			name := strings.ReplaceAll(c.String(), "/", "per") + "/n=" + in.Name
			b.Run(name+"/ours", BenchOurs(in))
			b.Run(name+"/peer", BenchPeer(in))
		}
	}
}

// synthetic is a small well-paired history: a system prompt, then turns of
// a user message, an assistant call, an empty tool result (as real shells
// return) and an answer.
func synthetic(turns int) []history.Message {
	msgs := []history.Message{{Role: history.RoleSystem, Content: "You are an agent."}}
	for i := range turns {
		id := "call_" + strconv.Itoa(i)
		msgs = append(msgs,
			history.Message{Role: history.RoleUser, Content: strings.Repeat("question ", 20)},
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "sh", Arguments: `{"cmd":"true"}`}}},
			history.Message{Role: history.RoleTool, ToolCallID: id, Content: ""},
			history.Message{Role: history.RoleAssistant, Content: strings.Repeat("answer ", 20)},
		)
	}
	return msgs
}

func TestCountersAgree(t *testing.T) {
	msgs := synthetic(5)
	msgs = append(msgs, history.Message{Role: history.RoleUser, Content: "héllo wörld 漢字"})
	peer := ToPeer(msgs)
	for _, c := range []Counting{Runes, Bytes} {
		for i, m := range msgs {
			ours := c.Counter().CountMessage(m)
			theirs := peerCount(t, c, peer[i])
			if ours != theirs {
				t.Errorf("%v: message %d: ours %d, peer %d", c, i, ours, theirs)
			}
		}
	}
}

func TestSideBySide(t *testing.T) {
	msgs := synthetic(40)
	for _, c := range []Counting{Runes, Bytes} {
		in := NewInput("synthetic", msgs, 0.5, c)
		o, p, oe, pe := Outputs(in)
		if oe != nil || pe != nil {
			t.Fatalf("%v: errors: ours %v, peer %v", c, oe, pe)
		}
		if !o.Paired || !o.Fits || !o.KeepsLast {
			t.Errorf("%v: ours = %+v, want paired, fitting, keeping the last message", c, o)
		}
		// The peer drops tool results with empty content, which leaves
		// their calls unanswered: the check must see that.
		if p.Paired {
			t.Errorf("%v: peer = %+v, want broken pairs (empty tool results dropped)", c, p)
		}
	}
}

func TestPeerDropsTrailingAssistantWhenNothingToTrim(t *testing.T) {
	msgs := synthetic(3) // ends with an assistant answer
	in := NewInput("fits", msgs, 1, Runes)
	r, err := Ours(in.Ours, in.Budget, in.Count)
	if err != nil || len(r.Messages) != len(msgs) {
		t.Fatalf("ours changed a history that fits: %d of %d messages, err %v", len(r.Messages), len(msgs), err)
	}
	p, err := PeerTrim(Peer(Runes), in.Peer, in.Budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) >= len(msgs) || p[len(p)-1].Role == "assistant" {
		t.Errorf("peer kept %d of %d messages ending with %q; this test documents that it drops the trailing assistant message", len(p), len(msgs), p[len(p)-1].Role)
	}
}

func peerCount(t *testing.T, c Counting, m model.Message) int {
	t.Helper()
	var (
		n   int
		err error
	)
	if c == Bytes {
		n, err = PeerBytesPer4{}.CountTokens(context.Background(), m)
	} else {
		n, err = model.NewSimpleTokenCounter().CountTokens(context.Background(), m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}
