package wire

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// checkScan reads the array at the start of b through memo and without,
// fails t unless both give the same elements, end and ok, and returns
// how many elements the memo gave.
func checkScan(t testing.TB, memo *scanMemo, b []byte) int64 {
	t.Helper()
	var from taken
	got, gotEnd, gotOK := elementsAt(b, 0, memo, &from)
	want, wantEnd, wantOK := elementsAt(b, 0, nil, nil)
	if !slices.Equal(got, want) || gotEnd != wantEnd || gotOK != wantOK {
		t.Fatalf("through the memo: %v %d %v; scanned: %v %d %v\nbody: %q", got, gotEnd, gotOK, want, wantEnd, wantOK, b)
	}
	return int64(from.n)
}

// TestScanMemo: an array read through a memo that kept an earlier one
// gives what a scan of it gives, elements and failures alike, taking from
// the memo only the elements whose bytes came again as they were (a
// number's or literal's with the byte after it). Each case: the arrays read in turn, and how many
// elements the memo gives for the last.
func TestScanMemo(t *testing.T) {
	el := func(k int) string { return fmt.Sprintf(`{"role":"user","content":"message %d, \"quoted\" ]}"}`, k) }
	arr := func(n int, sep string) string {
		var parts []string
		for k := range n {
			parts = append(parts, el(k))
		}
		return "[" + strings.Join(parts, ","+sep) + "]"
	}
	cases := []struct {
		name   string
		arrays []string
		want   int64
	}{
		{"the same array again: every element", []string{arr(6, ""), arr(6, "")}, 6},
		{"two elements appended: the six kept", []string{arr(6, ""), arr(8, "")}, 6},
		{"an array of two: no memo", []string{arr(2, ""), arr(2, "")}, 0},
		{"the third element changed: nothing past the opening", []string{arr(6, ""), strings.Replace(arr(6, ""), "message 2", "message X", 1)}, 0},
		{"the fourth element changed: the three before it", []string{arr(6, ""), strings.Replace(arr(6, ""), "message 3", "message X", 1)}, 3},
		{"whitespace after the fourth element: the four before it", []string{arr(6, ""), strings.Replace(arr(6, ""), el(3)+",", el(3)+" ,", 1)}, 4},
		{"a number that goes on in the array resent", []string{`[1,2,3,4]`, `[1,2,3,45]`}, 3},
		{"a literal cut short", []string{`[1,2,true,false]`, `[1,2,true,fals`}, 3},
		{"the array unclosed", []string{arr(6, ""), arr(6, "")[:len(arr(6, ""))-1]}, 6},
		{"a trailing comma after the elements kept", []string{arr(6, ""), arr(6, "")[:len(arr(6, ""))-1] + ",]"}, 6},
		{"an element cut inside a string", []string{arr(6, ""), arr(5, "") + `,{"role":"user","content":"mess`}, 5},
		{"a second conversation with the same opening", []string{arr(6, ""), arr(3, "")[:len(arr(3, ""))-1] + `,{"other":1},{"other":2}]`}, 3},
		{"nested past the depth the scanner follows, after the kept elements", []string{arr(4, ""), arr(4, "")[:len(arr(4, ""))-1] + "," + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "]"}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			memo := &scanMemo{floor: 1}
			var got int64
			for _, a := range c.arrays {
				got = checkScan(t, memo, []byte(a))
			}
			if got != c.want {
				t.Fatalf("the memo gave %d elements of the last array, want %d", got, c.want)
			}
		})
	}
}

// TestScanMemoKeeps: a conversation that grows by a few elements a
// request takes all but those from the memo; the memo copies the array
// anew only once the part scanned anew is over its floor, replacing the
// copy it gave (one copy per conversation); past its bound it starts
// afresh; it never holds the caller's bytes (they are overwritten after
// each read, as a reused request body is).
func TestScanMemoKeeps(t *testing.T) {
	el := func(k int) string { return fmt.Sprintf(`{"role":"tool","content":"%s"}`, strings.Repeat("x", 100+k%7)) }
	memo := &scanMemo{floor: 2_000}
	var b []byte
	var n int
	for k := range 200 {
		n = k + 3
		parts := make([]string, n)
		for j := range parts {
			parts[j] = el(j)
		}
		b = append(b[:0], "["+strings.Join(parts, ",")+"]"...)
		got := checkScan(t, memo, b)
		if n > 20 && got == 0 { // past the floor: kept
			t.Fatalf("request %d: nothing taken from the memo", k)
		}
		for i := range b {
			b[i] = '#' // the next read must not see these bytes in the memo
		}
	}
	memo.mu.Lock()
	ways, size := 0, memo.size
	for _, w := range memo.entries {
		ways += len(w)
	}
	memo.mu.Unlock()
	if ways != 1 {
		t.Fatalf("the memo holds %d arrays of one conversation, want 1", ways)
	}
	if size > 2*(n*130+2_000) {
		t.Fatalf("the memo holds %d bytes for an array of about %d", size, n*130)
	}

	small := &scanMemo{floor: 1, limit: 3_000}
	for k := range 50 {
		a := fmt.Sprintf(`[{"c":%d},{"d":1},{"e":"%s"}]`, k, strings.Repeat("y", 900))
		checkScan(t, small, []byte(a))
		if small.size > small.limit {
			t.Fatalf("after %d arrays the memo holds %d bytes, over its bound %d", k+1, small.size, small.limit)
		}
	}
}

// TestScanMemoConcurrent: conversations read at once through one memo,
// each seeing what a scan gives (run with -race).
func TestScanMemoConcurrent(t *testing.T) {
	memo := &scanMemo{floor: 1}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var parts []string
			for k := range 60 {
				parts = append(parts, fmt.Sprintf(`{"conversation":%d,"k":%d}`, g%3, k))
				checkScan(t, memo, []byte("["+strings.Join(parts, ",")+"]"))
			}
		}()
	}
	wg.Wait()
}

// FuzzScanMemo: for any two bodies, reading the second through a memo
// that kept the first gives what a scan of the second gives.
func FuzzScanMemo(f *testing.F) {
	f.Add([]byte(`[1,2,3,4]`), []byte(`[1,2,3,45]`))
	f.Add([]byte(`[{"a":1},{"b":"]"},{"c":[1,2]}]`), []byte(`[{"a":1},{"b":"]"},{"c":[1,2]},{"d":null}]`))
	f.Add([]byte(`["a","b","c\"",true]`), []byte(`["a","b","c\"",tru]`))
	f.Add([]byte(responsesArray(4)), []byte(responsesArray(6)))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		memo := &scanMemo{floor: 1}
		checkScan(t, memo, first)
		checkScan(t, memo, second)
		if !bytes.HasPrefix(second, first) {
			checkScan(t, memo, append(slices.Clip(first), second...))
		}
	})
}

// FuzzParseMemo: for any two bodies of one API, the second parsed through
// a memo that read the first is the Request Parse makes of it: the same
// fields, each message the same bytes.
func FuzzParseMemo(f *testing.F) {
	for _, c := range []struct {
		path        string
		first, next string
	}{
		{"/v1/chat/completions", chatBody(3, 5), chatBody(4, 5)},
		{"/v1/messages", anthropicBody(3, 5), anthropicBody(4, 5)},
		{"/v1/responses", responsesBody(3, 5), responsesBody(4, 5)},
		{"/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]},{"role":"user","parts":[{"text":"c"}]}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"a"}]},{"role":"model","parts":[{"text":"b"}]},{"role":"user","parts":[{"text":"c"}]},{"role":"model","parts":[{"text":"d"}]}],"x":1}`},
		{"/v1/chat/completions", `{"messages":[1,2,3,4]}`, `{"messages":[1,2,3,45]}`},
	} {
		f.Add(c.path, []byte(c.first), []byte(c.next))
	}
	f.Fuzz(func(t *testing.T, path string, first, next []byte) {
		memo := &scanMemo{floor: 1}
		_, _ = parse(path, first, memo)
		got, gerr := parse(path, next, memo)
		want, werr := Parse(path, next)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("through the memo: %v; Parse: %v", gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("through the memo:\n%+v\nParse:\n%+v", got, want)
		}
	})
}

// responsesArray returns the input array of responsesBody(n, 3).
func responsesArray(n int) string {
	b := []byte(responsesBody(n, 3))
	_, els, ok, err := objectArray(b, "input", nil, nil)
	if err != nil || !ok || len(els) == 0 {
		panic("responsesBody has no input array")
	}
	ms, _ := objectMembers(b)
	m, _ := find(ms, "input")
	return string(b[m.val.start:m.val.end])
}

// TestScanMemoStable: the messages a request takes from the memo are read
// from the memo's copy of the array (the same bytes as the body's, which
// are reused once the request is done), which bytecache.Stable reports as
// never written to; the messages scanned anew are the body's own, not
// stable; an array the memo no longer holds is no longer listed (the list
// keeps nothing alive).
func TestScanMemoStable(t *testing.T) {
	el := func(k int) string { return fmt.Sprintf(`{"role":"user","content":"message %d"}`, k) }
	body := func(n int) []byte {
		parts := make([]string, n)
		for k := range parts {
			parts[k] = el(k)
		}
		return []byte(`{"model":"m","messages":[` + strings.Join(parts, ",") + `]}`)
	}
	memo := &scanMemo{floor: 1_000, limit: 1 << 20} // keeps the first array, not the second
	if _, err := parse("/v1/chat/completions", body(30), memo); err != nil {
		t.Fatal(err)
	}
	b := body(34)
	r, err := parse("/v1/chat/completions", b, memo)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := Parse("/v1/chat/completions", b)
	var held [][]byte
	for i, m := range r.items {
		if !bytes.Equal(m, plain.items[i]) {
			t.Fatalf("message %d: %s, scanned %s", i, m, plain.items[i])
		}
		inBody := &m[0] == &b[strings.Index(string(b), string(m))]
		// The thirty the memo held are the memo's; the rest the body's.
		if want := i < 30; isStable(m) != want || inBody == want {
			t.Fatalf("message %d: stable %v, in the body %v; want stable %v", i, isStable(m), inBody, want)
		}
		if isStable(m) {
			held = append(held, m)
		}
	}
	memo.limit = 200 // room for the next array alone: the memo starts afresh
	memo.keep(1, nil, []byte(`[1,2]`), []span{{1, 2}, {3, 4}})
	for i, m := range held {
		if isStable(m) {
			t.Fatalf("message %d is still listed once the memo dropped its array", i)
		}
	}
}
