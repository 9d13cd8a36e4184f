// This file owns the byte format of a Trimmer's state: a varint encoder,
// the checksum that seals what it wrote, and a decoder that fails on the
// first bad field, for messages, ints and plans, and never allocates more
// than a small multiple of its input.

package history

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"hash/crc64"
	"math"
	"strconv"
	"unsafe"
)

// stateSumSize is the size of the checksum that ends a saved state:
// since version 3, the CRC-32C (Castagnoli) of every byte before it in the
// low 32 bits and their CRC-32 (IEEE) in the high 32, little-endian; in
// version 2, their CRC-64 (ECMA). Two CRCs of different polynomials detect
// every burst of up to 32 flipped bits and any other corruption but for
// about one in 2^64, and the processor computes both (CRC-32C in 3 µs for
// a 56 KB state where the CRC-64 took 42 µs: most of what saving a state
// cost). It does not authenticate (anyone who can write a state can
// compute it), which is why a restored plan is also checked against the
// transcript.
const stateSumSize = 8

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	stateTable = crc64.MakeTable(crc64.ECMA) // version 2's
)

// stateSum returns the checksum of b in the current version.
func stateSum(b []byte) uint64 {
	return uint64(crc32.Checksum(b, castagnoli)) | uint64(crc32.ChecksumIEEE(b))<<32
}

// sealState appends the checksum of b to b.
func sealState(b []byte) []byte {
	return binary.LittleEndian.AppendUint64(b, stateSum(b))
}

// sealed reports whether data, a state of the given version, ends with
// the checksum of what precedes it.
func sealed(data []byte, version uint64) bool {
	n := len(data) - stateSumSize
	if n < 0 {
		return false
	}
	sum := binary.LittleEndian.Uint64(data[n:])
	if version == 2 {
		return sum == crc64.Checksum(data[:n], stateTable)
	}
	return sum == stateSum(data[:n])
}

// stateEncoder appends a state's fields as varints and length-prefixed
// strings.
type stateEncoder struct{ b []byte }

func (e *stateEncoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *stateEncoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *stateEncoder) bool(v bool)   { e.uint(uint64(boolInt(v))) }

func (e *stateEncoder) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *stateEncoder) ints(v []int) {
	e.uint(uint64(len(v)))
	for _, x := range v {
		e.int(int64(x))
	}
}

// msg appends every field of m.
func (e *stateEncoder) msg(m *Message) {
	for _, s := range [...]string{string(m.Role), m.Content, m.ToolCallID, m.Name, string(m.Kind)} {
		e.str(s)
	}
	e.uint(uint64(len(m.Parts)))
	for i := range m.Parts {
		p := &m.Parts[i]
		for _, s := range [...]string{string(p.Type), p.Text, p.Detail, p.MIMEType} {
			e.str(s)
		}
		for _, n := range [...]int64{int64(p.Tokens), int64(p.Width), int64(p.Height), p.Size} {
			e.int(n)
		}
	}
	e.uint(uint64(len(m.ToolCalls)))
	for _, c := range m.ToolCalls {
		e.str(c.ID)
		e.str(c.Name)
		e.str(c.Arguments)
	}
}

// plan appends a remembered plan, maps in ascending key order.
func (e *stateEncoder) plan(st *trimState) {
	e.int(int64(st.n))
	e.int(int64(st.tail))
	e.ints(st.plan)
	e.uint(uint64(len(st.notices)))
	for i := range st.notices {
		e.msg(&st.notices[i])
	}
	e.uint(uint64(len(st.elided)))
	for _, k := range sortedInts(st.elided) {
		e.int(int64(k))
		e.str(st.elided[k])
	}
	e.uint(uint64(len(st.cleared)))
	for _, k := range sortedInts(st.cleared) {
		e.int(int64(k))
		e.uint(uint64(len(st.cleared[k])))
		for _, c := range st.cleared[k] {
			e.str(c.ID)
			e.str(c.Arguments)
		}
	}
	e.uint(uint64(len(st.anchors)))
	for _, a := range st.anchors {
		e.int(int64(a.i))
		e.b = binary.LittleEndian.AppendUint64(e.b, a.sum)
	}
	e.ints(st.replaced)
	for _, n := range [...]int{st.saved, st.droppedMessages, st.droppedTurns, st.droppedSteps} {
		e.int(int64(n))
	}
}

// stateDecoder reads what stateEncoder wrote, checking every length
// against what is left, so that it never reads out of bounds, and charging
// every allocation to budget, so that no input, whatever it claims, makes
// it allocate more than a small multiple of its size (stateDecodeBudget);
// the first problem is kept in err.
type stateDecoder struct {
	b      []byte
	err    error
	budget int // bytes it may still allocate
}

// stateDecodeBudget is what the decoder may allocate for a state of n
// bytes. A state a Trimmer saves needs less than 8 bytes per byte (a plan
// index takes one to three bytes, and eight in memory; what else it holds
// is mostly text), or 64 KiB for a small one; a crafted one that claims
// more elements than that is refused as soon as it claims them, before
// they are allocated.
func stateDecodeBudget(n int) int { return min(n, math.MaxInt/16)*8 + 64<<10 }

// The sizes an element of each kind costs the decoder, in bytes: what it
// takes in memory (a map entry, with the table's overhead).
const (
	sizeMessage  = int(unsafe.Sizeof(Message{}))
	sizePart     = int(unsafe.Sizeof(Part{}))
	sizeToolCall = int(unsafe.Sizeof(ToolCall{}))
	sizeInt      = int(unsafe.Sizeof(int(0)))
	sizeAnchor   = int(unsafe.Sizeof(anchor{}))
	sizeMapEntry = 96 // a slot of either map, its control byte, and a table up to twice the entries
)

// charge takes n elements of size bytes from the budget, or fails.
func (d *stateDecoder) charge(n, size int) bool {
	if d.err != nil {
		return false
	}
	if n > d.budget/size {
		d.fail("more than its size can hold")
		return false
	}
	d.budget -= n * size
	return true
}

func (d *stateDecoder) fail(reason string) {
	if d.err == nil {
		d.err = errors.New(reason)
	}
	d.b = nil
}

func (d *stateDecoder) uint() uint64 { return varint(d, binary.Uvarint) }

func (d *stateDecoder) int() int64 { return varint(d, binary.Varint) }

// varint reads the varint at the start of d's bytes with read
// (binary.Uvarint or binary.Varint), failing d when it is truncated.
func varint[T uint64 | int64](d *stateDecoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail("truncated")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *stateDecoder) u64() uint64 {
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *stateDecoder) bool() bool { return d.uint() == 1 }

// count reads a non-negative int.
func (d *stateDecoder) count() int {
	v := d.int()
	if v < 0 || v > math.MaxInt32*int64(1<<16) {
		d.fail("a count of " + strconv.FormatInt(v, 10))
		return 0
	}
	return int(v)
}

// len reads a length of elements of at least min bytes each, no more than
// what is left can hold.
func (d *stateDecoder) len(min int) int {
	v := d.uint()
	if v > uint64(len(d.b)/min) {
		d.fail("a length of " + strconv.FormatUint(v, 10) + " past the end")
		return 0
	}
	return int(v)
}

// items reads a length of elements of at least min bytes each, size
// bytes each in memory, and charges them: 0 after a failure.
func (d *stateDecoder) items(min, size int) int {
	n := d.len(min)
	if !d.charge(n, size) {
		return 0
	}
	return n
}

func (d *stateDecoder) str() string {
	n := d.items(1, 1)
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// ints reads a list of at most max ints.
func (d *stateDecoder) ints(max int) []int {
	n := d.items(1, sizeInt)
	if n > max {
		d.fail("a list longer than its transcript")
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = int(d.int())
	}
	return out
}

// msg reads a message the Trimmer wrote: a notice or a summary, never a
// tool exchange, so a message with tool calls is refused before its calls
// are read.
func (d *stateDecoder) msg() Message {
	var m Message
	m.Role, m.Content, m.ToolCallID, m.Name, m.Kind = Role(d.str()), d.str(), d.str(), d.str(), Kind(d.str())
	if n := d.items(8, sizePart); n > 0 {
		m.Parts = make([]Part, n)
		for i := range m.Parts {
			p := &m.Parts[i]
			p.Type, p.Text, p.Detail, p.MIMEType = PartType(d.str()), d.str(), d.str(), d.str()
			p.Tokens, p.Width, p.Height, p.Size = int(d.int()), int(d.int()), int(d.int()), d.int()
			switch p.Type {
			case PartText, PartImage, PartFile, PartReasoning:
			default:
				d.fail("a part of unknown type") // before the next ones are read
			}
			if d.err != nil {
				break
			}
		}
	}
	if n := d.len(3); n > 0 {
		d.fail("a notice with tool calls")
	}
	if reason := checkMessage(&m); d.err == nil && reason != "" {
		d.fail("a message: " + reason)
	}
	return m
}

// key reads a map key: a count above prev (keys are written ascending).
func (d *stateDecoder) key(prev int) int {
	k := d.count()
	if d.err == nil && k <= prev {
		d.fail("map keys out of order")
	}
	return k
}

// plan reads a remembered plan and checks that it describes a transcript
// of st.n messages.
func (d *stateDecoder) plan() trimState {
	var st trimState
	st.n, st.tail = d.count(), d.count()
	st.plan = d.ints(st.n + 3) // each message once, and at most three notices
	if n := d.items(7, sizeMessage); n > 3 {
		d.fail("more notices than a trim writes")
	} else if n > 0 {
		st.notices = make([]Message, n)
		for i := range st.notices {
			st.notices[i] = d.msg()
		}
	}
	if n := d.items(2, sizeMapEntry); n > 0 {
		st.elided = make(map[int]string, n)
		for k := -1; n > 0 && d.err == nil; n-- {
			k = d.key(k)
			st.elided[k] = d.str()
		}
	}
	if n := d.items(2, sizeMapEntry); n > 0 {
		st.cleared = make(map[int][]ToolCall, n)
		for k := -1; n > 0 && d.err == nil; n-- {
			k = d.key(k)
			var calls []ToolCall
			if c := d.items(2, sizeToolCall); c > 0 {
				calls = make([]ToolCall, c)
				for i := range calls {
					calls[i] = ToolCall{ID: d.str(), Arguments: d.str()}
				}
			}
			st.cleared[k] = calls
		}
	}
	if n := d.items(9, sizeAnchor); n > 0 {
		st.anchors = make([]anchor, n)
		for i := range st.anchors {
			st.anchors[i] = anchor{i: d.count(), sum: d.u64()}
		}
	}
	st.replaced = d.ints(st.n)
	st.saved = int(d.int())
	st.droppedMessages, st.droppedTurns, st.droppedSteps = d.count(), d.count(), d.count()
	if d.err == nil {
		if reason := st.check(); reason != "" {
			d.fail(reason)
		}
	}
	return st
}
