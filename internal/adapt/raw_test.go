package adapt

import "testing"

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
