package adaptertest

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"reflect"
	"slices"
	"testing"
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
