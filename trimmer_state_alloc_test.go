package history

import (
	"encoding/binary"
	"runtime"
	"testing"
)

// craftedStates are states of about size bytes, sealed and under the
// fingerprint of opts, that claim as many elements of one kind as their
// bytes can name: the inputs that made the decoder allocate most per
// byte.
func craftedStates(opts []Option, size int) map[string][]byte {
	o := newOptions(opts)
	fp := o.fingerprint()
	o.release()
	header := func() *stateEncoder {
		e := &stateEncoder{}
		e.b = append(e.b, stateMagic...)
		e.uint(stateVersion)
		e.b = binary.LittleEndian.AppendUint64(e.b, fp)
		e.int(0)                                       // last
		e.int(0)                                       // sent
		e.int(0)                                       // asked
		e.b = binary.LittleEndian.AppendUint64(e.b, 0) // accept
		return e
	}
	// plan writes a plan for a transcript of n messages with the given
	// notices, elided and cleared entries, anchors and plan.
	type plan struct {
		n                                 int
		plan                              func(e *stateEncoder)
		notices, elided, cleared, anchors func(e *stateEncoder)
	}
	none := func(e *stateEncoder) { e.uint(0) }
	writePlan := func(e *stateEncoder, p plan) {
		e.int(int64(p.n))
		e.int(int64(p.n)) // tail
		for _, f := range []func(*stateEncoder){p.plan, p.notices, p.elided, p.cleared, p.anchors} {
			if f == nil {
				f = none
			}
			f(e)
		}
		e.uint(0) // replaced
		for range 4 {
			e.int(0)
		}
	}
	finish := func(e *stateEncoder, summary func(*stateEncoder), prev func(*stateEncoder)) []byte {
		if summary == nil {
			e.bool(false)
		} else {
			e.bool(true)
			summary(e)
		}
		if prev == nil {
			prev = none
		}
		prev(e)
		return sealState(e.b)
	}
	emptyMsg := func(e *stateEncoder, parts, calls int) {
		e.str("user")
		e.str("")
		e.str("")
		e.str("")
		e.str("")
		e.uint(uint64(parts))
		for range parts {
			for range 4 {
				e.str("")
			}
			for range 4 {
				e.int(0)
			}
		}
		e.uint(uint64(calls))
		for range calls {
			e.str("")
			e.str("")
			e.str("")
		}
	}
	out := map[string][]byte{}
	n := 1 << 20
	out["parts"] = finish(func() *stateEncoder {
		e := header()
		writePlan(e, plan{n: n, plan: func(e *stateEncoder) { e.ints([]int{-1}) }, notices: func(e *stateEncoder) {
			e.uint(1)
			emptyMsg(e, size/8, 0)
		}})
		return e
	}(), nil, nil)
	// Elements that are valid and as small as the budget lets a state
	// claim: what a crafted state can make the decoder allocate.
	out["valid parts"] = finish(func() *stateEncoder {
		e := header()
		writePlan(e, plan{n: n, plan: func(e *stateEncoder) { e.ints([]int{-1}) }, notices: func(e *stateEncoder) {
			e.uint(1)
			e.str("user")
			for range 4 {
				e.str("")
			}
			k := size / 13
			e.uint(uint64(k))
			for range k {
				e.str("text")
				e.str("a")
				e.str("")
				e.str("")
				for range 4 {
					e.int(0)
				}
			}
			e.uint(0)
		}})
		return e
	}(), nil, nil)
	out["elided entries, at the budget"] = finish(func() *stateEncoder {
		e := header()
		k := size / 14
		writePlan(e, plan{n: n, elided: func(e *stateEncoder) {
			e.uint(uint64(k))
			for i := range k {
				e.int(int64(i))
				e.str("0123456789")
			}
		}})
		return e
	}(), nil, nil)
	out["tool calls"] = finish(func() *stateEncoder {
		e := header()
		writePlan(e, plan{n: n, plan: func(e *stateEncoder) { e.ints([]int{-1}) }, notices: func(e *stateEncoder) {
			e.uint(1)
			emptyMsg(e, 0, size/3)
		}})
		return e
	}(), nil, nil)
	out["notices"] = finish(func() *stateEncoder {
		e := header()
		k := size / 7
		writePlan(e, plan{n: n, plan: func(e *stateEncoder) {
			e.uint(uint64(k))
			for range k {
				e.int(-1)
			}
		}, notices: func(e *stateEncoder) {
			e.uint(uint64(k))
			for range k {
				emptyMsg(e, 0, 0)
			}
		}})
		return e
	}(), nil, nil)
	out["elided entries"] = finish(func() *stateEncoder {
		e := header()
		k := size / 4
		writePlan(e, plan{n: n, elided: func(e *stateEncoder) {
			e.uint(uint64(k))
			for i := range k {
				e.int(int64(i))
				e.str("")
			}
		}})
		return e
	}(), nil, nil)
	out["cleared entries"] = finish(func() *stateEncoder {
		e := header()
		k := size / 4
		writePlan(e, plan{n: n, cleared: func(e *stateEncoder) {
			e.uint(uint64(k))
			for i := range k {
				e.int(int64(i))
				e.uint(0)
			}
		}})
		return e
	}(), nil, nil)
	out["cleared calls"] = finish(func() *stateEncoder {
		e := header()
		k := size / 2
		writePlan(e, plan{n: n, cleared: func(e *stateEncoder) {
			e.uint(1)
			e.int(0)
			e.uint(uint64(k))
			for range k {
				e.str("")
				e.str("")
			}
		}})
		return e
	}(), nil, nil)
	out["anchors"] = finish(func() *stateEncoder {
		e := header()
		k := size / 9
		writePlan(e, plan{n: n, anchors: func(e *stateEncoder) {
			e.uint(uint64(k))
			for range k {
				e.int(0)
				e.b = binary.LittleEndian.AppendUint64(e.b, 0)
			}
		}})
		return e
	}(), nil, nil)
	out["plan"] = finish(func() *stateEncoder {
		e := header()
		k := size
		writePlan(e, plan{n: n, plan: func(e *stateEncoder) {
			e.uint(uint64(k))
			for range k {
				e.int(0)
			}
		}})
		return e
	}(), nil, nil)
	out["prompt keys"] = finish(func() *stateEncoder {
		e := header()
		writePlan(e, plan{n: n})
		return e
	}(), nil, func(e *stateEncoder) {
		k := size / 8
		e.uint(uint64(k))
		for range k {
			e.b = binary.LittleEndian.AppendUint64(e.b, 0)
		}
	})
	out["summary parts"] = finish(func() *stateEncoder {
		e := header()
		writePlan(e, plan{})
		return e
	}(), func(e *stateEncoder) {
		emptyMsg(e, size/8, 0)
		for range 5 {
			e.int(0)
		}
		e.b = binary.LittleEndian.AppendUint64(e.b, 0)
	}, nil)
	return out
}

// stateDecodeBound is what decoding a state of size bytes may allocate:
// a small multiple of its size, plus a constant (the decoder's budget,
// stateDecodeBudget, is 8 bytes a byte and 64 KiB; the rest is margin for
// what it does not charge: the Trimmer, an error).
func stateDecodeBound(size int) uint64 { return 10*uint64(size) + 256<<10 }

// TestTrimmerStateDecodeBounded: whatever a state claims, decoding it
// allocates at most a small multiple of its size (states crafted to claim
// as many parts, calls, notices, map entries, anchors, plan entries and
// keys as their bytes can name, and states of valid elements as small as
// the budget allows). Before the budget, such states allocated 27 to 131
// bytes a byte.
func TestTrimmerStateDecodeBounded(t *testing.T) {
	opts := []Option{WithLowWater(0.7)}
	for name, data := range craftedStates(opts, 1<<20) {
		tr := NewTrimmer(opts...)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := tr.UnmarshalBinary(data)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d bytes, %d allocated (%.1f per byte), %v", name, len(data), alloc, float64(alloc)/float64(len(data)), err)
		if alloc > stateDecodeBound(len(data)) {
			t.Errorf("%s: a state of %d bytes allocated %d bytes (%.1f per byte)", name, len(data), alloc, float64(alloc)/float64(len(data)))
		}
	}
}

// BenchmarkTrimmerStateDecode decodes the crafted states of
// TestTrimmerStateDecodeBounded (1 MiB each) and reports the bytes
// allocated per byte of input.
func BenchmarkTrimmerStateDecode(b *testing.B) {
	opts := []Option{WithLowWater(0.7)}
	for name, data := range craftedStates(opts, 1<<20) {
		b.Run(name, func(b *testing.B) {
			tr := NewTrimmer(opts...)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				_ = tr.UnmarshalBinary(data)
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(data)), "B-alloc/input-byte")
		})
	}
}
