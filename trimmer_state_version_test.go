package history

import (
	"encoding/binary"
	"hash/crc64"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// asVersion2 returns state, saved by MarshalBinary, as version 2 wrote
// it: the same fields, version 2, sealed with the CRC-64 (ECMA) of what
// precedes the checksum.
func asVersion2(t *testing.T, state []byte) []byte {
	t.Helper()
	v, n := binary.Uvarint(state[len(stateMagic):])
	require.Equal(t, uint64(stateVersion), v)
	b := slices.Clone(state[:len(state)-stateSumSize])
	b = append(append([]byte(stateMagic), binary.AppendUvarint(nil, 2)...), b[len(stateMagic)+n:]...)
	return binary.LittleEndian.AppendUint64(b, crc64.Checksum(b, crc64.MakeTable(crc64.ECMA)))
}

// TestTrimmerStateVersion2: a state saved in version 2 (the CRC-64
// checksum) restores as the same state saved now does, so that replicas
// upgraded one by one keep their conversations' plans; each version's
// fields sealed with the other's checksum are refused as corrupt.
func TestTrimmerStateVersion2(t *testing.T) {
	for name, opts := range stateOptions(nil) {
		t.Run(name, func(t *testing.T) {
			full := trSession(40, 11)
			orig := NewTrimmer(opts...)
			budget := Estimate(full, nil) / 3
			for n := 2; n <= 60; n++ {
				_, err := orig.Trim(full[:n], budget)
				require.NoError(t, err)
			}
			now, err := orig.MarshalBinary()
			require.NoError(t, err)
			old := asVersion2(t, now)

			fromNow, fromOld := NewTrimmer(opts...), NewTrimmer(opts...)
			require.NoError(t, fromNow.UnmarshalBinary(now))
			require.NoError(t, fromOld.UnmarshalBinary(old), "a version 2 state is read")
			again, _ := fromOld.MarshalBinary()
			assert.Equal(t, now, again, "restored from version 2, it saves what the original saves")
			for n := 61; n <= len(full); n += 7 {
				a, errA := fromNow.Trim(full[:n], budget)
				b, errB := fromOld.Trim(full[:n], budget)
				require.Equal(t, errA, errB)
				require.Equal(t, a.Kept, b.Kept, "at %d messages", n)
				require.Equal(t, a.Messages, b.Messages, "at %d messages", n)
			}

			// Each version's bytes under the other's checksum.
			swapped := slices.Clone(old)
			copy(swapped[len(swapped)-stateSumSize:], now[len(now)-stateSumSize:])
			var se *StateError
			require.ErrorAs(t, NewTrimmer(opts...).UnmarshalBinary(swapped), &se)
			assert.Contains(t, se.Reason, "checksum")
			swapped = slices.Clone(now)
			copy(swapped[len(swapped)-stateSumSize:], old[len(old)-stateSumSize:])
			require.ErrorAs(t, NewTrimmer(opts...).UnmarshalBinary(swapped), &se)
			assert.Contains(t, se.Reason, "checksum")
		})
	}
}
