package adaptertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/histrim/history/internal/version"
)

// JSON returns the JSON encoding of v, failing t if v does not encode.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// PNG returns a real w x h PNG image, so that adapters read image
// dimensions from actual headers.
func PNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// JSONDiff returns, sorted, the keys of the JSON objects a and b encode to
// whose values differ, a key present on one side only included. Values are
// compared decoded, so key order inside them does not matter. It fails t
// if a or b does not encode to a JSON object.
func JSONDiff(t testing.TB, a, b any) []string {
	t.Helper()
	var oa, ob map[string]any
	if err := json.Unmarshal([]byte(JSON(t, a)), &oa); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(JSON(t, b)), &ob); err != nil {
		t.Fatal(err)
	}
	var diff []string
	for k, va := range oa {
		if vb, ok := ob[k]; !ok || !reflect.DeepEqual(va, vb) {
			diff = append(diff, k)
		}
	}
	for k := range ob {
		if _, ok := oa[k]; !ok {
			diff = append(diff, k)
		}
	}
	slices.Sort(diff)
	return diff
}

// Identity reports whether kept, a Result.Kept, keeps all n input
// messages in order: nil (nothing changed) or 0, 1, ..., n-1.
func Identity(kept []int, n int) bool {
	if kept == nil {
		return true
	}
	if len(kept) != n {
		return false
	}
	for i, k := range kept {
		if k != i {
			return false
		}
	}
	return true
}

// CoreRequirement checks that the go.mod of the module under test (in the
// working directory, as go test runs it) requires version.Core of the
// core: the adapter and the core it runs against were released together.
func CoreRequirement(t *testing.T) {
	t.Helper()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := Required(mod, "github.com/histrim/history")
	if !ok || got != version.Core {
		t.Errorf("go.mod requires github.com/histrim/history %q, want %s, the core these tests run against: "+
			"release and upgrade the adapter and the core together (docs/adapters.md, \"Versioning\")", got, version.Core)
	}
}

// Required returns the version of module path that the go.mod text mod
// requires, in a require line or block; ok is false when it requires none.
func Required(mod []byte, path string) (v string, ok bool) {
	block := false
	for _, line := range strings.Split(string(mod), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case f[0] == "require" && len(f) == 2 && f[1] == "(":
			block = true
			continue
		case block && f[0] == ")":
			block = false
			continue
		case f[0] == "require":
			f = f[1:]
		case !block:
			continue
		}
		if len(f) >= 2 && f[0] == path {
			return f[1], true
		}
	}
	return "", false
}

// Bytes hands out seed bytes one at a time to a conversation generator;
// len tells how many are left.
type Bytes []byte

// Next returns the next byte, or -1 when none is left.
func (b *Bytes) Next() int {
	if len(*b) == 0 {
		return -1
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return int(v)
}

// Byte returns the next byte, or 0 when none is left.
func (b *Bytes) Byte() int {
	return max(b.Next(), 0)
}

// Violation checks err, what an adapter's Validate returned for a table
// case: nil when at is negative; otherwise an error wrapping sentinel whose
// P (found with errors.As) is, as where reports it, at message at and
// about the tool call id. It reports through t and returns whether err is
// as wanted.
func Violation[P error](t testing.TB, err, sentinel error, where func(P) (at int, id string), at int, id, reason string) bool {
	t.Helper()
	if at < 0 {
		if err != nil {
			t.Errorf("Validate = %v, want nil (%s)", err, reason)
		}
		return err == nil
	}
	var p P
	if !errors.As(err, &p) || !errors.Is(err, sentinel) {
		t.Errorf("Validate = %v, want a %T wrapping %v at %d (%s)", err, p, sentinel, at, reason)
		return false
	}
	if gotAt, gotID := where(p); gotAt != at || gotID != id {
		t.Errorf("Validate = %v, at %d for %q; want %d for %q (%s)", err, gotAt, gotID, at, id, reason)
		return false
	}
	return true
}

// Subsequence reports whether sub is not empty and its elements appear in
// full, in order, by eq.
func Subsequence[T any](sub, full []T, eq func(a, b T) bool) bool {
	i := 0
	for _, x := range full {
		if i < len(sub) && eq(sub[i], x) {
			i++
		}
	}
	return i == len(sub) && len(sub) > 0
}

// Same reports whether a and b are the same value: for pointers, the
// caller's very object. It is Subsequence's eq for values an adapter must
// hand back untouched.
func Same[T comparable](a, b T) bool { return a == b }

// DeepEqual is reflect.DeepEqual for two values of one type.
func DeepEqual[T any](a, b T) bool { return reflect.DeepEqual(a, b) }

// SameJSON reports whether a and b encode to the same JSON; values that do
// not encode are never the same.
func SameJSON[T any](a, b T) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// SameArray reports whether a and b are the same slice: the same length
// over the same backing array (both empty counts as the same).
func SameArray[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// The texts of generated conversations, varied by the seed byte b (and a
// call's index k): a task, a progress note, a tool's output (source lines),
// a search result, and a message of a few words.

// TaskText is a user's task.
func TaskText(b int) string {
	return "task " + strconv.Itoa(b) + ": " + strings.Repeat("do the thing ", 1+b%7)
}

// NoteText is an assistant's progress note.
func NoteText(b int) string { return "progress note " + strings.Repeat("x", b%40) }

// OutputText is the output of call k of a step, from 1 to 60 lines.
func OutputText(b, k int) string {
	return strings.Repeat("func f() { return 42 } // "+strconv.Itoa(b)+"\n", 1+(b*(k+3))%60)
}

// FoundText is a search tool's result.
func FoundText(b int) string { return "found " + strings.Repeat("line\n", b%30) }

// Words is a message of a few words.
func Words(b int) string {
	return "message " + strconv.Itoa(b) + strings.Repeat(" with some more words to count", b%5)
}
