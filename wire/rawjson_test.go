package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzObjectMembers checks the scanner against encoding/json: a valid
// JSON object reads as its members, each key and value valid JSON, as
// many as the decoder's tokens say, and the spans tile the object; it
// never panics on other bytes.
func FuzzObjectMembers(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":"\\","b":"\"","c":"\\\"x"}`, `{"a":[1,{"b":"]}"}],"a":null}`,
		`{"k\u00e9":"\ud83d\ude00","t":true,"f":false,"n":-1.5e3}`, `{"a":`, `{"a" 1}`, `["x"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := objectMembers(b)
		if !json.Valid(b) {
			return
		}
		trimmed := bytes.TrimSpace(b)
		if len(trimmed) == 0 || trimmed[0] != '{' {
			return
		}
		if err != nil {
			t.Fatalf("valid object refused: %v", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		_, _ = dec.Token()
		n := 0
		for dec.More() {
			_, _ = dec.Token() // key
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				t.Fatal("decoder failed on a valid object")
			}
			if n >= len(ms) || !bytes.Equal(b[ms[n].val.start:ms[n].val.end], v) {
				t.Fatalf("member %d: scanner and decoder disagree", n)
			}
			if !json.Valid(ms[n].key) {
				t.Fatalf("key %q is not a JSON string", ms[n].key)
			}
			n++
		}
		if n != len(ms) {
			t.Fatalf("%d members, the decoder read %d", len(ms), n)
		}
	})
}

// TestAppendString holds appendString to json.Marshal's bytes, on the
// fast path (plain ASCII) and off it.
func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ s, why string }{
		{"", "empty"},
		{"[elided tool result: read, 564 tokens; re-run the tool if needed]", "a placeholder: the fast path"},
		{"a \"quote\" and a \\ backslash", "escaped by Marshal"},
		{"<b> & </b>", "HTML characters Marshal escapes"},
		{"line\nbreak\ttab\x00nul\x1f", "control characters"},
		{"caf\u00e9 \u2028 \u2029 \U0001F600", "UTF-8, with the separators Marshal escapes"},
		{"bad \xff utf-8", "invalid UTF-8, which Marshal replaces"},
		{"del \x7f", "DEL, which Marshal keeps"},
	} {
		want, _ := json.Marshal(tc.s)
		if got := appendString([]byte("x"), tc.s); string(got) != "x"+string(want) {
			t.Errorf("%s: %q, json.Marshal %q", tc.why, got, want)
		}
	}
}

// FuzzAppendString: appendString appends json.Marshal's encoding.
func FuzzAppendString(f *testing.F) {
	f.Add("plain text")
	f.Add("<\u2028\xff\"")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q, json.Marshal %q", got, want)
		}
	})
}
