package adapt

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/histrim/history"
)

// TestConversationsReportRefused: a saved state that passes every check
// of the decoder (the checksum is right) but whose plan fails its check
// against the transcript (here a placeholder forged into invalid UTF-8)
// is refused, and an adapter's Conversations reports it so
// (history.StateRefused), as the core's Conversations does, not
// "restored".
func TestConversationsReportRefused(t *testing.T) {
	msgs := []history.Message{{Role: history.RoleSystem, Content: "sys"}, {Role: history.RoleUser, Content: "the task"}}
	for i := range 6 { // one turn of tool steps: old results are elided
		id := "call_" + string(rune('a'+i))
		msgs = append(msgs,
			history.Message{Role: history.RoleAssistant, ToolCalls: []history.ToolCall{{ID: id, Name: "read", Arguments: "{}"}}},
			history.Message{Role: history.RoleTool, ToolCallID: id, Content: strings.Repeat("result line\n", 150)})
	}
	opts := []history.Option{history.WithElision(history.ElideOptions{})}
	const budget = 1800
	src := plain.NewTrimmer(struct{}{}, opts)
	if _, _, err := src.Trim(msgs, budget); err != nil {
		t.Fatal(err)
	}
	data, err := src.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte("[elided tool result: "))
	if i < 0 {
		t.Fatal("setup: the saved state holds no placeholder")
	}
	forged := bytes.Clone(data)
	forged[i+1] = 0xff // invalid UTF-8 where the result is valid
	// Reseal the core state (it follows the adapter's header and pins and
	// ends with the CRC-32C of what precedes it, and their CRC-32 in the
	// high half): only the check against the transcript can refuse it.
	sum := func(b []byte) uint64 {
		return uint64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))) | uint64(crc32.ChecksumIEEE(b))<<32
	}
	resealed := false
	for start := 0; start < i; start++ {
		body := forged[start : len(forged)-8]
		if binary.LittleEndian.Uint64(data[len(data)-8:]) == sum(data[start:len(data)-8]) {
			binary.LittleEndian.PutUint64(forged[len(forged)-8:], sum(body))
			resealed = true
			break
		}
	}
	if !resealed {
		t.Fatal("setup: no checksum found over the core state")
	}
	for _, tc := range []struct {
		name  string
		state []byte
		want  string
	}{
		{"as saved", data, history.StateRestored},
		{"forged", forged, history.StateRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &history.MemoryStateStore{}
			if _, err := store.Save(context.Background(), "k", tc.state, 0); err != nil {
				t.Fatal(err)
			}
			c := NewConversations(plain, struct{}{}, store, opts)
			var got string
			c.OnState = func(_, s string) { got = s }
			out, _, err := c.Trim(context.Background(), "k", msgs, budget)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("state %q, want %q", got, tc.want)
			}
			for _, m := range out {
				if !strings.HasPrefix(m.Content, "[elided") {
					continue
				}
				if !strings.Contains(m.Content, "elided tool result: ") {
					t.Errorf("a forged placeholder was sent: %q", m.Content)
				}
			}
		})
	}
}
