package history

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompaction: the provider reads nothing before its latest compaction,
// so a trim drops everything between the prefix and it first, without a
// breadcrumb, and keeps the compaction itself, untouched, in the prefix.
func TestCompaction(t *testing.T) {
	compaction := Message{Role: RoleAssistant, Kind: KindCompaction, Content: "opaque compaction of turns 1-2"}
	tests := []struct {
		name           string
		in             []Message
		want           []string
		dropped, turns int
		orphans        int
		reason         string
	}{
		{
			name:    "between turns",
			in:      append(append(parse(t, "S:sys", "U:q1", "A:a1", "U:q2", "A:a2"), compaction), parse(t, "U:q3", "A:a3")...),
			want:    []string{"S:sys", "C:opaque compaction of turns 1-2", "U:q3", "A:a3"},
			dropped: 4, turns: 2,
			reason: "the turns before the compaction go, whole",
		},
		{
			name:    "inside a turn, a call before it",
			in:      append(append(parse(t, "S:sys", "U:q1", "A:>c1", "T:c1", "A:>c2"), compaction), parse(t, "T:c2", "A:a1", "U:q2", "A:a2")...),
			want:    []string{"S:sys", "C:opaque compaction of turns 1-2", "A:a1", "U:q2", "A:a2"},
			dropped: 4, turns: 0, orphans: 1,
			reason: "the call before the compaction goes with what it covers; its result after it answers nothing the provider reads: swept",
		},
		{
			name:    "two compactions",
			in:      append(append(append(parse(t, "S:sys", "U:q1"), Message{Role: RoleAssistant, Kind: KindCompaction, Content: "old"}), parse(t, "U:q2", "A:a2")...), append([]Message{compaction}, parse(t, "U:q3", "A:a3")...)...),
			want:    []string{"S:sys", "C:opaque compaction of turns 1-2", "U:q3", "A:a3"},
			dropped: 4, turns: 2,
			reason: "only the latest one counts",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var events []Event
			for _, opts := range [][]Option{nil, {WithElision(ElideOptions{}), WithStepTrim()}, {WithFullCount()}} {
				events = events[:0]
				res, err := TrimToRecentTurns(tc.in, 10_000, append(opts, WithOnTrim(func(e Event) { events = append(events, e) }))...)
				require.NoError(t, err)
				assert.Equal(t, tc.want, renderKinds(res.Messages), tc.reason)
				assert.Equal(t, tc.dropped, res.DroppedMessages, "DroppedMessages")
				assert.Equal(t, tc.turns, res.DroppedTurns, "DroppedTurns")
				assert.Equal(t, tc.orphans, res.OrphansRemoved, "OrphansRemoved")
				assert.True(t, res.Trimmed)
				require.Len(t, events, 1, "never silent")
				for j, k := range res.Kept {
					if res.Messages[j].Kind == KindCompaction {
						assert.Equal(t, tc.in[k], res.Messages[j], "the compaction is sent as it is")
					}
				}
				checkResult(t, tc.in, res, true)
				again, err := TrimToRecentTurns(res.Messages, 10_000, opts...)
				require.NoError(t, err)
				assert.Equal(t, renderKinds(res.Messages), renderKinds(again.Messages), "trimming the output again changes nothing")
			}
		})
	}
}

// renderKinds is render, with compactions as "C:".
func renderKinds(msgs []Message) []string {
	out := render(msgs)
	for i, m := range msgs {
		if m.Kind == KindCompaction {
			out[i] = "C:" + m.Content
		}
	}
	return out
}

// FuzzCompaction: a compaction anywhere in a generated history: nothing
// the provider would not read (before the latest compaction, outside the
// prefix) is sent, the compaction is, and every invariant of a trim holds,
// with the ladder too.
func FuzzCompaction(f *testing.F) {
	f.Add([]byte{0, 9, 1, 3, 4, 2, 11, 0, 3, 5, 1, 7, 3, 1}, uint8(4), uint16(60))
	f.Add([]byte{1, 2, 4, 10, 11, 200, 4, 20, 11, 100, 4, 30, 11, 9}, uint8(3), uint16(300))
	f.Fuzz(func(t *testing.T, data []byte, at uint8, budget16 uint16) {
		msgs := genHistory(data)
		pos := int(at) % (len(msgs) + 1)
		msgs = append(msgs[:pos:pos], append([]Message{{Role: RoleAssistant, Kind: KindCompaction, Content: "compacted"}}, msgs[pos:]...)...)
		budget := int(budget16%500) + 1
		for _, opts := range [][]Option{nil, {WithStepTrim(), WithElision(ElideOptions{KeepRecent: 1, MinTokens: -1})}, {WithFullCount()}} {
			res, err := TrimToRecentTurns(msgs, budget, opts...)
			if err != nil && !isTooLarge(err) {
				t.Fatalf("unexpected error %v", err)
			}
			checkResult(t, msgs, res, true)
			lead := leadEnd(msgs)
			if pos > lead {
				for _, k := range res.Kept {
					if k >= lead && k < pos {
						t.Fatalf("message %d, before the compaction at %d, is sent", k, pos)
					}
				}
				if !slicesContainsInt(res.Kept, pos) {
					t.Fatalf("the compaction at %d is not sent: %v", pos, res.Kept)
				}
			}
			if err == nil && res.TokensAfter > budget {
				t.Fatalf("over budget without an error")
			}
			again, _ := TrimToRecentTurns(res.Messages, budget, opts...)
			if !reflect.DeepEqual(renderKinds(again.Messages), renderKinds(res.Messages)) {
				t.Fatalf("trimming a result again changed it:\n%v\n%v", renderKinds(res.Messages), renderKinds(again.Messages))
			}
		}
	})
}
