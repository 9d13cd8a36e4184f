package wire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/histrim/history/internal/wireapi"
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

// TestSpliceHooks: the JSON scanner lent to the codecs (wireapi.Member,
// Elements, WithMember) reads and rewrites a member only when it is the
// one encoding/json reads for its name and no other key could read as it.
func TestSpliceHooks(t *testing.T) {
	for _, tc := range []struct {
		name, obj, key string
		want           string // "" for not found
		with           string // WithMember(obj, key, `9`)
	}{
		{"plain", `{"a":1, "parts" : [1,2] ,"z":0}`, "parts", `[1,2]`, `{"a":1, "parts" : 9 ,"z":0}`},
		{"absent", `{"a":1}`, "parts", "", ""},
		{"twice: encoding/json reads the last", `{"parts":[1],"parts":[2]}`, "parts", "", ""},
		{"another spelling only", `{"Parts":[1]}`, "parts", "", ""},
		{"both spellings", `{"parts":[1],"PARTS":[2]}`, "parts", "", ""},
		{"an escaped key might read as it", `{"parts":[1],"p\u0061rts":[2]}`, "parts", "", ""},
		{"not an object", `[1]`, "parts", "", ""},
		{"nested keys do not count", `{"x":{"parts":0},"parts":[3]}`, "parts", `[3]`, `{"x":{"parts":0},"parts":9}`},
	} {
		got, ok := wireapi.Member([]byte(tc.obj), tc.key)
		if string(got) != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: Member = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
		with, ok := wireapi.WithMember([]byte(tc.obj), tc.key, []byte(`9`))
		if string(with) != tc.with || ok != (tc.with != "") {
			t.Errorf("%s: WithMember = %q, %v; want %q", tc.name, with, ok, tc.with)
		}
	}
	if got, ok := wireapi.WithMember([]byte(`{"a":1,"parts":[1],"b":2}`), "parts", nil); !ok || string(got) != `{"a":1,"b":2}` {
		t.Errorf("WithMember(nil) = %s, %v", got, ok)
	}
	if els, ok := wireapi.Elements([]byte(` [ {"a":1} , "x",[2] ] `)); !ok || len(els) != 3 || string(els[0]) != `{"a":1}` || string(els[2]) != `[2]` {
		t.Errorf("Elements = %q, %v", els, ok)
	}
}
