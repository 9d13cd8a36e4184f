package wire

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/histrim/history"
	"github.com/histrim/history/internal/adaptertest"
	"github.com/histrim/history/internal/anthropicmsg"
	"github.com/histrim/history/internal/race"
	"github.com/histrim/history/models"
)

var update = flag.Bool("update", false, "rewrite testdata/anthropic_golden.txt with this code's outputs")

// goldenAnthropic is where TestAnthropicGolden pins the outputs.
const goldenAnthropic = "testdata/anthropic_golden.txt"

// jsonStr is s as a JSON string.
func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// corpusAnthropicBody maps conversation n of the shared corpus (its
// index k) to a Messages body with every kind of block the shared
// Messages logic reads: leading system messages as the system prompt
// (a string, or text blocks with a breakpoint), a later one as a message
// of role system; user messages as a string or text blocks; each
// assistant message opening with a signed thinking block (every fifth a
// redacted_thinking block instead, every seventh both), its text and its
// calls as tool_use blocks (arguments that are not JSON wrapped); the
// results that follow as one user message of tool_result blocks (a string
// or text blocks, some is_error); cache_control on every sixth user
// message and every eleventh result (so that some requests hold more than
// four breakpoints); a compaction block with content in every fourth
// conversation (at 40% of it), an empty one and a null one in others;
// members the package does not read, and the whitespace of a hand-written
// body in every other conversation.
func corpusAnthropicBody(c adaptertest.Conversation, k int) []byte {
	sp := ""
	if k%2 == 1 {
		sp = " "
	}
	textOf := func(m history.Message) string {
		if m.Content != "" || len(m.Parts) == 0 {
			return m.Content
		}
		var b strings.Builder
		for _, p := range m.Parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	var system []string
	var msgs []string
	var results []string
	flush := func() {
		if len(results) > 0 {
			msgs = append(msgs, `{"role":"user",`+sp+`"content":[`+strings.Join(results, ","+sp)+`]}`)
			results = nil
		}
	}
	a, u, r := 0, 0, 0
	compactAt := len(c.Messages) * 2 / 5
	for i, m := range c.Messages {
		if m.Role != history.RoleTool {
			flush()
		}
		switch m.Role {
		case history.RoleSystem:
			if len(msgs) == 0 {
				system = append(system, textOf(m))
				continue
			}
			msgs = append(msgs, `{"role":"system","content":`+jsonStr(textOf(m))+`}`)
		case history.RoleUser:
			u++
			cc := ""
			if u%6 == 0 {
				cc = `,"cache_control":{"type":"ephemeral"}`
			}
			if u%2 == 0 && cc == "" {
				msgs = append(msgs, `{"role":"user",`+sp+`"content":`+jsonStr(textOf(m))+`}`)
			} else {
				msgs = append(msgs, `{"role":"user","content":[{"type":"text","text":`+jsonStr(textOf(m))+cc+`}]}`)
			}
		case history.RoleAssistant:
			a++
			var blocks []string
			if i >= compactAt && compactAt > 0 {
				switch k % 4 {
				case 1:
					blocks = append(blocks, `{"type":"compaction","content":`+jsonStr("Summary of the work so far: "+textOf(c.Messages[0])[:min(len(textOf(c.Messages[0])), 300)])+`,"encrypted_content":"enc`+strconv.Itoa(k)+`"}`)
				case 2:
					blocks = append(blocks, `{"type":"compaction","content":null}`)
				case 3:
					msgs = append(msgs, `{"role":"assistant","content":[{"type":"compaction","content":""}]}`)
				}
				compactAt = -1
			}
			sig := corpusSig(c.Name, a)
			thought := jsonStr("Considering the next step. " + textOf(m)[:min(len(textOf(m)), 200)])
			switch {
			case a%7 == 0:
				blocks = append(blocks, `{"type":"thinking","thinking":`+thought+`,"signature":"`+sig+`"}`, `{"type":"redacted_thinking","data":"`+corpusSig(c.Name, -a)+`"}`)
			case a%5 == 0:
				blocks = append(blocks, `{"type":"redacted_thinking","data":"`+corpusSig(c.Name, -a)+`"}`)
			default:
				blocks = append(blocks, `{"type":"thinking",`+sp+`"thinking":`+thought+`,"signature":"`+sig+`"}`)
			}
			if t := textOf(m); strings.TrimSpace(t) != "" {
				blocks = append(blocks, `{"type":"text","text":`+jsonStr(t)+`}`)
			}
			for _, tc := range m.ToolCalls {
				input := tc.Arguments
				if !json.Valid([]byte(input)) {
					input = `{"raw":` + jsonStr(input) + `}`
				}
				blocks = append(blocks, `{"type":"tool_use","id":`+jsonStr(tc.ID)+`,"name":`+jsonStr(tc.Name)+`,`+sp+`"input":`+input+`,"x_block":1}`)
			}
			if len(m.ToolCalls) == 0 {
				blocks = append(blocks, `{"type":"text","text":"(no text)"}`)
			}
			x := ""
			if a%3 == 0 {
				x = `,"x_msg":{"n":` + strconv.Itoa(a) + `}`
			}
			msgs = append(msgs, `{"role":"assistant",`+sp+`"content":[`+strings.Join(blocks, ","+sp)+`]`+x+`}`)
		case history.RoleTool:
			r++
			content := jsonStr(textOf(m))
			if r%2 == 0 {
				content = `[{"type":"text","text":` + content + `}]`
			}
			extra := ""
			if r%9 == 0 {
				extra += `,"is_error":true`
			}
			if r%11 == 0 {
				extra += `,"cache_control":{"type":"ephemeral"}`
			}
			results = append(results, `{"type":"tool_result","tool_use_id":`+jsonStr(m.ToolCallID)+`,"content":`+content+extra+`}`)
		}
	}
	flush()
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":1024,` + sp)
	switch {
	case len(system) == 1 && k%3 == 0:
		b.WriteString(`"system":` + jsonStr(system[0]) + `,`)
	case len(system) > 0:
		bs := make([]string, len(system))
		for i, s := range system {
			bs[i] = `{"type":"text","text":` + jsonStr(s)
			if i == len(system)-1 {
				bs[i] += `,"cache_control":{"type":"ephemeral"}`
			}
			bs[i] += `}`
		}
		b.WriteString(`"system":[` + strings.Join(bs, ",") + `],`)
	}
	b.WriteString(`"thinking":{"type":"enabled","budget_tokens":2000},"messages":[` + "\n" + sp)
	b.WriteString(strings.Join(msgs, ",\n"+sp))
	b.WriteString("\n" + `],"metadata":{"user_id":"u-` + strconv.Itoa(k) + `"},"stream":false}`)
	return []byte(b.String())
}

// corpusSig is a distinct base64-looking signature for block n of
// conversation name.
func corpusSig(name string, n int) string {
	h := sha256.Sum256([]byte(name + "/" + strconv.Itoa(n)))
	return strings.Repeat(hex.EncodeToString(h[:]), 2)
}

// goldenBodies are the Messages bodies TestAnthropicGolden trims: the
// package's own test bodies and the shared corpus mapped to Messages.
func goldenBodies(t *testing.T) []struct {
	name string
	body []byte
} {
	out := []struct {
		name string
		body []byte
	}{
		{"anthropicBody-12", []byte(anthropicBody(12, 200))},
		{"anthropicBody-3", []byte(anthropicBody(3, 40))},
		{"anthropicBody-40", []byte(anthropicBody(40, 30))},
		{"system-string", []byte(`{"system":"s","messages":[{"role":"user","content":"x"}]}`)},
		{"call-result-task", []byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"r"}]},{"role":"user","content":"q"}]}`)},
		{"breakpoints", []byte(`{"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}},{"type":"text","text":"sys2","cache_control":{"type":"ephemeral"}}],"messages":[` +
			`{"role":"user","content":[{"type":"text","text":"one ` + strings.Repeat("w ", 300) + `","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"text","text":"a1","cache_control":{"type":"ephemeral"}},{"type":"tool_use","id":"t1","name":"f","input":{"q":1},"cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"` + strings.Repeat("r ", 400) + `","cache_control":{"type":"ephemeral"}},{"type":"text","text":"and then"}]},` +
			`{"role":"assistant","content":[{"type":"compaction","content":"sum","cache_control":{"type":"ephemeral"}},{"type":"text","text":"a2"}]},` +
			`{"role":"user","content":[{"type":"text","text":"two ` + strings.Repeat("w ", 300) + `","cache_control":{"type":"ephemeral"}}]},` +
			`{"role":"assistant","content":[{"type":"compaction","content":""}]},` +
			`{"role":"assistant","content":[{"type":"text","text":"a3"},{"type":"compaction","content":""}]},` +
			`{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://x/y.png"}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc ` + strings.Repeat("d ", 200) + `"},"title":"T"},{"type":"text","text":"last","cache_control":{"type":"ephemeral"}}]}]}`)},
		{"user-compaction", []byte(`{"messages":[{"role":"user","content":"old ` + strings.Repeat("o ", 500) + `"},{"role":"assistant","content":"ok"},` +
			`{"role":"user","content":[{"type":"text","text":"before"},{"type":"compaction","content":"summary","encrypted_content":"e"},{"type":"text","text":"after ` + strings.Repeat("a ", 200) + `"}]},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"` + strings.Repeat("S", 80) + `"},{"type":"tool_use","id":"c1","name":"f","input":{"big":"` + strings.Repeat("i ", 300) + `"}},{"type":"tool_use","id":"c2","name":"g","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"` + strings.Repeat("x ", 600) + `"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},{"type":"tool_result","tool_use_id":"c2","is_error":true,"content":"no"}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz","content":"orphan"}]},` +
			`{"role":"assistant","content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{"q":"x"}},{"type":"web_search_tool_result","tool_use_id":"s1","content":[]},{"type":"text","text":"found"}]},` +
			`{"role":"user","content":"now ` + strings.Repeat("n ", 100) + `"}]}`)},
	}
	// A body's shape depends on the session's place in the whole corpus
	// (c.Index), which stays the same under the race detector, where
	// adaptertest.Corpus reads only the short sessions (race.CorpusFile).
	// Under the race detector, 12 of those sessions (race.Sample): their
	// groups are compared with the pinned hashes as in the plain run,
	// which checks every session.
	for _, c := range race.Sample(adaptertest.Corpus(t, ".."), 12) {
		out = append(out, struct {
			name string
			body []byte
		}{c.Name, corpusAnthropicBody(c, c.Index)})
	}
	return out
}

// goldenHash writes an output into h: the body, or the error when there
// is none.
func goldenHash(h hash.Hash, body []byte, err error) {
	if body == nil {
		fmt.Fprintf(h, "error %v\n", err)
		return
	}
	fmt.Fprintf(h, "%d\n", len(body))
	h.Write(body)
}

// TestAnthropicGolden runs a corpus of Messages bodies (the shared corpus
// of real transcripts mapped to Messages with thinking, tool_use and
// tool_result, compaction and cache_control blocks; the package's test
// bodies) through the codec at several budgets with each rung of the
// degradation ladder, through RecoverOverflow, again over its own
// output, and through a Transport as a client loop that resends its
// growing transcript: every output body must be the one pinned in
// testdata/anthropic_golden.txt (the body and errors of each group,
// hashed), so that a change to how the Messages logic is run (caching,
// fewer reads) is proved not to change a byte of what is sent. Each
// group runs twice, so that a second pass over the same messages (the
// caches warm) sends the same bytes too. -update rewrites the file.
func TestAnthropicGolden(t *testing.T) {
	got := map[string]string{}
	var names []string
	record := func(name string, h hash.Hash) {
		names = append(names, name)
		got[name] = hex.EncodeToString(h.Sum(nil)[:12])
	}
	for _, gb := range goldenBodies(t) {
		r, err := Parse("/v1/messages", gb.body)
		if err != nil {
			t.Fatalf("%s: %v", gb.name, err)
		}
		_, all, err := anthropicCodec.Trim(r.system, r.Messages(), 1<<40, nil)
		total := all.TokensBefore
		if err != nil || total == 0 {
			total = 10_000
		}
		for _, set := range adaptertest.LadderSets(true) {
			hashes := [2]string{}
			for pass := range 2 {
				h := sha256.New()
				for _, pct := range []int{2, 10, 35, 75, 100} {
					budget := max(total*pct/100, 1)
					opts := append([]history.Option{history.WithOverhead(30)}, set.Opts...)
					out, res, err := anthropicCodec.Trim(r.system, r.Messages(), budget, opts)
					var body []byte
					if out != nil {
						body = r.Body(out)
					}
					goldenHash(h, body, err)
					fmt.Fprintf(h, "%d %d\n", res.TokensBefore, res.TokensAfter)
					if out != nil && pct == 35 {
						// Its own output, trimmed again (the notices it
						// inserted read back as notices).
						r2, err := Parse("/v1/messages", body)
						if err != nil {
							t.Fatalf("%s: output does not parse: %v", gb.name, err)
						}
						out2, _, err := anthropicCodec.Trim(r2.system, r2.Messages(), max(budget*2/3, 1), opts)
						var body2 []byte
						if out2 != nil {
							body2 = r2.Body(out2)
						}
						goldenHash(h, body2, err)
					}
				}
				rec, _, err := anthropicCodec.RecoverOverflow(r.system, r.Messages(), adaptertest.OverflowText(max(total/2, 2), total), 1, set.Opts)
				var body []byte
				if rec != nil {
					body = r.Body(rec)
				}
				goldenHash(h, body, err)
				hashes[pass] = hex.EncodeToString(h.Sum(nil))
				if pass == 1 && hashes[1] != hashes[0] {
					t.Errorf("%s/%s: a second pass sent other bytes", gb.name, set.Name)
				}
				if pass == 1 {
					record(gb.name+"/"+set.Name, h)
				}
			}
		}
		record(gb.name+"/transport", goldenLoop(t, r, total))
	}
	adaptertest.Golden(t, goldenAnthropic, "TestAnthropicGolden's outputs (go test ./wire -run TestAnthropicGolden -update)", names, got, *update)
}

// capture is an upstream that keeps every body it is sent and answers
// with a small completion and a usage.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *capture) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	_ = req.Body.Close()
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	body := `{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":` + strconv.Itoa(len(b)/4) + `,"output_tokens":2}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// clientBodies returns the bodies a client loop sends for r's transcript:
// one per user message, each with the transcript up to it, and the whole
// transcript last.
func clientBodies(r *Request) [][]byte {
	var out [][]byte
	for n := 1; n <= len(r.items); n++ {
		var role struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(r.items[n-1], &role)
		if role.Role == "user" || n == len(r.items) {
			out = append(out, r.Body(slices.Clone(r.items[:n])))
		}
	}
	return out
}

// goldenLoop sends r's transcript through a Transport as a client loop
// does: one request per user message, each with the transcript up to it,
// the model's window a third of the whole; it returns the hash of what
// the upstream received.
func goldenLoop(t *testing.T, r *Request, total int) hash.Hash {
	up := &capture{}
	window := max(total/3, 200) + 1024
	tr := &Transport{Base: up, Logger: quiet(), Models: func(_ context.Context, name string) (models.Model, error) {
		return models.Model{Name: name, Window: window}, nil
	}}
	defer tr.Close()
	h := sha256.New()
	for _, body := range clientBodies(r) {
		req, _ := http.NewRequest(http.MethodPost, "http://upstream/v1/messages", bytes.NewReader(body))
		req.Header.Set(ConversationHeader, "golden")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	for _, b := range up.bodies {
		goldenHash(h, b, nil)
	}
	return h
}

// TestAnthropicReadOnce: through the wire's Memo, each distinct message
// is read once: a transcript resent with one message more is read only
// for that message (and the notices the trim renders, once each), and the
// second request's output is what a read of every message gives (the SDK
// without a Memo).
func TestAnthropicReadOnce(t *testing.T) {
	// Messages no other test reads (the Memo's cache is the package's).
	body := strings.NewReplacer("line of output", "ReadOnce output", "task ", "ReadOnce task ", "think ", "ReadOnce think ", "done ", "ReadOnce done ").Replace(anthropicBody(6, 50))
	r, err := Parse("/v1/messages", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]int{}
	counted := *anthropicSDK
	counted.Memo = func(m *json.RawMessage, read func(*json.RawMessage) (string, []anthropicmsg.Info, error)) (string, []anthropicmsg.Info, error) {
		return anthropicMemo(m, func(m *json.RawMessage) (string, []anthropicmsg.Info, error) {
			reads[string(*m)]++
			return read(m)
		})
	}
	plain := *anthropicSDK
	plain.Memo = nil
	opts := []history.Option{history.WithElision(history.ElideOptions{}), history.WithOverhead(30)}
	msgs := r.Messages()
	n := len(msgs) - 1
	for _, req := range [][]json.RawMessage{msgs[:n], msgs, msgs} {
		if _, _, err := counted.Codec().Trim(r.system, req, 1_000, opts); err != nil {
			t.Fatal(err)
		}
	}
	for m, k := range reads {
		if k != 1 {
			t.Errorf("read %d times: %s", k, m)
		}
	}
	for _, m := range msgs {
		if reads[string(m)] != 1 {
			t.Errorf("a message of the transcript not read: %s", m)
		}
	}
	out, _, err := counted.Codec().Trim(r.system, msgs, 1_000, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := plain.Codec().Trim(r.system, msgs, 1_000, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, w := r.Body(out), r.Body(want); !bytes.Equal(got, w) {
		t.Errorf("with the Memo:\n%s\nwithout:\n%s", got, w)
	} else if bytes.Equal(got, []byte(body)) {
		t.Errorf("nothing trimmed at this budget: the comparison proves little")
	}
}
