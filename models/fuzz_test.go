package models

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzLookup checks Lookup on any input: it never panics, a name it
// resolves is a row of the table (and resolving that row's name gives the
// same row back), and a name it does not is an *UnknownModelError.
func FuzzLookup(f *testing.F) {
	for _, tc := range realNames {
		f.Add(tc.in)
	}
	for _, tc := range mustNotResolve {
		f.Add(tc.in)
	}
	f.Add("us.anthropic.claude-3-5-sonnet-20241022-v2:0:thinking")
	f.Add("ft:ft:gpt-4o")
	f.Add("a@b@c")
	f.Add("claude-.-.")
	f.Fuzz(func(t *testing.T, name string) {
		m, err := Lookup(name)
		if err != nil {
			var ue *UnknownModelError
			if !errors.As(err, &ue) || ue.Name != name || !errors.Is(err, ErrUnknownModel) || m != (Model{}) {
				t.Fatalf("Lookup(%q) = %+v, %v", name, m, err)
			}
			return
		}
		r, ok := index[m.Name]
		if !ok || r.name != m.Name || r.model() != m || m.Window < 1 {
			t.Fatalf("Lookup(%q) = %+v, not a row of the table", name, m)
		}
		if again, err := Lookup(m.Name); err != nil || again != m {
			t.Fatalf("Lookup(%q) = %+v, %v; want the same row", m.Name, again, err)
		}
		if len(strings.TrimSpace(name)) > maxName {
			t.Fatalf("Lookup resolved a name longer than %d bytes", maxName)
		}
	})
}

// answerAll is a transport that answers every request with the same
// status and body, without a network: the fuzzer's server.
type answerAll struct {
	status int
	body   []byte
}

func (a answerAll) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: a.status,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(bytes.NewReader(a.body)),
		Request:    req,
	}, nil
}

// FuzzDiscover serves any answer to every probe of every server kind:
// Discover never panics, and what it returns is a window in range or a
// *DiscoverError.
func FuzzDiscover(f *testing.F) {
	for _, name := range []string{
		"ollama/version.json", "ollama/show.json", "ollama/ps_context.json", "lmstudio/models.json",
		"llamacpp/props.json", "llamacpp/props_top_level.json", "vllm/models.json", "openrouter/models.json",
	} {
		f.Add(uint16(200), fixture(f, name))
	}
	f.Add(uint16(404), []byte(`{"error":"model 'x' not found"}`))
	f.Add(uint16(200), []byte(`{"version":"1","data":[{"id":"m","max_model_len":1,"state":"loaded","loaded_context_length":2}],"n_ctx":3}`))
	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		client := &http.Client{Transport: answerAll{status: int(status%500) + 100, body: body}}
		for _, base := range []string{"http://localhost:11434", "https://openrouter.ai/api/v1"} {
			for _, model := range []string{"m", "llava", "openai/gpt-4o", ""} {
				m, err := Discover(context.Background(), client, base, model)
				if err != nil {
					var de *DiscoverError
					if !errors.As(err, &de) || m != (Model{}) {
						t.Fatalf("Discover: %+v, %v", m, err)
					}
					continue
				}
				if m.Window < 1 || m.Window > maxTokens || m.Output < 0 || m.Output > maxTokens || m.Provider == "" {
					t.Fatalf("Discover: %+v", m)
				}
			}
		}
	})
}
