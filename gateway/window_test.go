package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestWindow: a model the models table does not know is forwarded
// untouched (and counted) unless -window gives it a window, in which case
// its request is trimmed to it.
func TestWindow(t *testing.T) {
	var msgs []map[string]any
	msgs = append(msgs, map[string]any{"role": "system", "content": "You are terse."})
	for i := range 40 {
		msgs = append(msgs, map[string]any{"role": "user", "content": "question " + strings.Repeat("word ", 200) + string(rune('a'+i%26))})
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "answer " + strings.Repeat("text ", 200)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "the latest question"})
	body, _ := json.Marshal(map[string]any{"model": "my-local-model", "messages": msgs, "max_tokens": 256})

	cases := []struct {
		why         string
		window      int
		wantTrimmed bool
		wantUnknown uint64
	}{
		{"no window: an unknown model is forwarded as it came", 0, false, 1},
		{"-window 4096: trimmed to it", 4096, true, 0},
	}
	for _, c := range cases {
		up, got := recordingUpstream(t)
		g, gw := newTestGateway(t, Config{Upstream: up.URL, Window: c.window})
		resp, err := http.Post(gw.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sent := got()[0].body
		if trimmed := string(sent) != string(body); trimmed != c.wantTrimmed {
			t.Errorf("%s: trimmed %v (%d bytes of %d)", c.why, trimmed, len(sent), len(body))
		}
		if c.wantTrimmed && !strings.Contains(string(sent), "the latest question") {
			t.Errorf("%s: the latest question was not sent", c.why)
		}
		if n := g.metrics.total(mUnknownModels); n != c.wantUnknown {
			t.Errorf("%s: %d unknown models counted, want %d", c.why, n, c.wantUnknown)
		}
		if c.wantTrimmed && g.metrics.total(mTrims) != 1 {
			t.Errorf("%s: trims counted %d, want 1", c.why, g.metrics.total(mTrims))
		}
	}
}
