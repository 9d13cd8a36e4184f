// This file owns the byte format of a Trimmer's state: a varint encoder
// and a decoder that fails on the first bad field, for messages, ints and
// plans.

package history

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
)

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
// against what is left, so that no input can make it allocate more than
// its own size or read out of bounds; the first problem is kept in err.
type stateDecoder struct {
	b   []byte
	err error
}

func (d *stateDecoder) fail(reason string) {
	if d.err == nil {
		d.err = errors.New(reason)
	}
	d.b = nil
}

func (d *stateDecoder) uint() uint64 { return varint(d, binary.Uvarint) }

func (d *stateDecoder) int() int64 { return varint(d, binary.Varint) }

// varint reads a varint with read (binary.Uvarint or binary.Varint).
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

func (d *stateDecoder) str() string {
	n := d.len(1)
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *stateDecoder) ints() []int {
	n := d.len(1)
	out := make([]int, 0, n)
	for range n {
		out = append(out, int(d.int()))
	}
	return out
}

func (d *stateDecoder) msg() Message {
	var m Message
	m.Role, m.Content, m.ToolCallID, m.Name, m.Kind = Role(d.str()), d.str(), d.str(), d.str(), Kind(d.str())
	for range d.len(8) {
		p := Part{Type: PartType(d.str()), Text: d.str(), Detail: d.str(), MIMEType: d.str()}
		p.Tokens, p.Width, p.Height, p.Size = int(d.int()), int(d.int()), int(d.int()), d.int()
		m.Parts = append(m.Parts, p)
	}
	for range d.len(3) {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: d.str(), Name: d.str(), Arguments: d.str()})
	}
	if reason := checkMessage(&m); d.err == nil && reason != "" {
		d.fail("a message: " + reason)
	}
	return m
}

// plan reads a remembered plan and checks that it describes a transcript
// of st.n messages.
func (d *stateDecoder) plan() trimState {
	var st trimState
	st.n, st.tail = d.count(), d.count()
	st.plan = d.ints()
	for range d.len(5) {
		st.notices = append(st.notices, d.msg())
	}
	for range d.len(2) {
		if st.elided == nil {
			st.elided = make(map[int]string)
		}
		k := d.count()
		st.elided[k] = d.str()
	}
	for range d.len(2) {
		if st.cleared == nil {
			st.cleared = make(map[int][]ToolCall)
		}
		k := d.count()
		var calls []ToolCall
		for range d.len(2) {
			calls = append(calls, ToolCall{ID: d.str(), Arguments: d.str()})
		}
		st.cleared[k] = calls
	}
	for range d.len(9) {
		st.anchors = append(st.anchors, anchor{i: d.count(), sum: d.u64()})
	}
	st.replaced = d.ints()
	st.saved = int(d.int())
	st.droppedMessages, st.droppedTurns, st.droppedSteps = d.count(), d.count(), d.count()
	if d.err == nil {
		if reason := st.check(); reason != "" {
			d.fail(reason)
		}
	}
	return st
}
