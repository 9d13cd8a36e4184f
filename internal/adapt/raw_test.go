package adapt

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/race"
)

// TestSamePointer: only the same non-nil pointer is the same message; a
// struct type never is, and asking costs no allocation.
func TestSamePointer(t *testing.T) {
	type big struct {
		_ [32]int64
		p *int
	}
	x, y := new(int), new(int)
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"same pointer", samePointer(x, x), true},
		{"equal values, other pointers", samePointer(x, y), false},
		{"nil pointers", samePointer[*int](nil, nil), false},
		{"equal structs", samePointer(big{p: x}, big{p: x}), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	v := big{p: x}
	if n := testing.AllocsPerRun(100, func() { _ = samePointer(v, v) }); n != 0 {
		t.Errorf("samePointer of a struct: %v allocations, want 0", n)
	}
}

// TestRawReusesDecoded: RawSplice's codec decodes a request's messages
// into an array it empties once Back has mapped the decision to bytes, and
// decodes a later request's into it: the bytes sent are the same as from
// a fresh array, and the emptied array keeps no message's memory alive.
func TestRawReusesDecoded(t *testing.T) {
	// One processor: what a request gives back, the next one takes (a
	// Pool keeps an item per processor).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var seen [][]history.Message // the arrays the adapter's Convert was given
	inner := *plain
	inner.Convert = func(r struct{}, msgs []history.Message, opts []history.Option) (*View[history.Message], error) {
		seen = append(seen, msgs)
		return plain.Convert(r, msgs, opts)
	}
	decode := func(m json.RawMessage) history.Message {
		var h history.Message
		_ = json.Unmarshal(m, &h)
		return h
	}
	encode := func(m *history.Message) ([]byte, error) { return json.Marshal(m) }
	rc := RawSplice(&inner, func(json.RawMessage) (struct{}, error) { return struct{}{}, nil }, decode, encode, nil)
	var raws []json.RawMessage
	for _, m := range turns(12) {
		b, _ := json.Marshal(m)
		raws = append(raws, b)
	}
	first, _, err := rc.Trim(nil, raws, 200, nil)
	if err != nil || len(first) == 0 || len(first) == len(raws) {
		t.Fatalf("%d of %d messages sent (%v): the trim shows nothing", len(first), len(raws), err)
	}
	for i, m := range seen[0] {
		if !reflect.ValueOf(m).IsZero() {
			t.Fatalf("message %d of the array given back still set", i)
		}
	}
	again, _, err := rc.Trim(nil, raws, 200, nil)
	if err != nil || len(again) != len(first) {
		t.Fatalf("%d messages, then %d (%v)", len(first), len(again), err)
	}
	for k := range again {
		if !bytes.Equal(again[k], first[k]) {
			t.Fatalf("message %d: %s, from a fresh array %s", k, again[k], first[k])
		}
	}
	if !race.Enabled && &seen[1][0] != &seen[0][0] {
		// (Under the race detector sync.Pool drops what it is given at
		// random.)
		t.Error("the second request's messages were not decoded into the first's array")
	}
}
